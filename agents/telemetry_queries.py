"""The PromQL Stratus asks, in one place, built from validated names (``tools.prometheus.promql``).

Metric names are the ones a real cluster exposes (kube-state-metrics, cAdvisor, and the
conventional ``http_requests_total`` / ``http_request_duration_seconds`` /
``http_client_requests_total`` of instrumented services), so a query that works against the
lab works against a cluster. Two durations shape every query:

- the *rate window* (``STRATUS_TELEMETRY_RATE``, default ``1m``): how much history one rate
  looks at; at least two scrapes of a real cluster (scrape intervals are often 30 s);
- the *summary window* (``STRATUS_TELEMETRY_WINDOW``, default ``5m``): how far back a card
  looks ("now, and over the last N minutes").
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from tools import env
from tools.errors import Invalid
from tools.prometheus import promql

DEFAULT_WINDOW = "5m"
DEFAULT_RATE = "1m"
# 5xx answers, and calls that never got one (the client saw a refused or reset connection).
SERVER_ERRORS = "5.."
CALLER_ERRORS = "5..|0"


def _duration(name: str, default: str, low: float, high: float) -> float:
    # Set but empty is refused like any other value it cannot read (tools.env).
    raw = os.environ.get(name)
    try:
        value = promql.seconds(default if raw is None else raw.strip())
    except Invalid:
        value = -1.0
    if not low <= value <= high:
        raise env.refuse(
            name, raw or "", f"give a duration from {low:g}s to {high:g}s (e.g. 5m, 90s, 1h)"
        )
    return value


def check() -> None:
    """Refuse a bad window before an investigation opens, not at its first metrics query."""
    window_seconds()
    rate_seconds()


def window_seconds() -> float:
    """STRATUS_TELEMETRY_WINDOW: how far back a telemetry summary looks (default 5m)."""
    return _duration("STRATUS_TELEMETRY_WINDOW", DEFAULT_WINDOW, 10, 86400)


def rate_seconds() -> float:
    """STRATUS_TELEMETRY_RATE: the range of each rate() (default 1m)."""
    return _duration("STRATUS_TELEMETRY_RATE", DEFAULT_RATE, 2, 3600)


@dataclass(frozen=True)
class Scope:
    """What one summary is about: a namespace, the Services in front of the target, and a
    pattern naming the target's pods (both already validated and quoted as PromQL)."""

    namespace: str
    services: tuple[str, ...]
    pod_pattern: str  # an RE2 pattern (unquoted) matching the target's pods

    def ns(self) -> tuple[str, str, str]:
        return ("namespace", "=", promql.namespace(self.namespace))

    def service_matcher(self, label: str = "service") -> tuple[str, str, str]:
        for name in self.services:
            promql.service(name)  # validation: a name that is not one never gets here
        either = "|".join(promql.regex_literal(s) for s in self.services)
        return (label, "=~", promql.string(either))

    def pods(self) -> tuple[str, str, str]:
        return ("pod", "=~", promql.string(self.pod_pattern))


def pod_pattern(kind: str, name: str) -> str:
    """The pods a workload owns, by the names its controller gives them."""
    stem = promql.regex_literal(name)
    if kind == "Deployment":
        return f"{stem}-[a-z0-9]{{1,10}}-[a-z0-9]{{5}}"
    if kind == "StatefulSet":
        return f"{stem}-[0-9]+"
    if kind in ("DaemonSet", "ReplicaSet", "Job"):
        return f"{stem}-[a-z0-9]{{5}}"
    return stem  # a Pod: itself


def _s(*matchers: tuple[str, str, str]) -> str:
    return promql.selector(*matchers)


def error_rate(scope: Scope, rate: str) -> str:
    """The share of the target's answers that were 5xx (0..1)."""
    base = (scope.ns(), scope.service_matcher())
    errors = _s(*base, ("code", "=~", promql.string(SERVER_ERRORS)))
    # No 5xx series at all is a rate of zero, not "no data": hence ``or … * 0``.
    total = f"sum(rate(http_requests_total{_s(*base)}[{rate}]))"
    return f"(sum(rate(http_requests_total{errors}[{rate}])) or {total} * 0) / {total}"


def p95_latency(scope: Scope, rate: str) -> str:
    """The target's 95th percentile answer time, in seconds."""
    matchers = _s(scope.ns(), scope.service_matcher())
    return (
        "histogram_quantile(0.95, sum by (le)"
        f"(rate(http_request_duration_seconds_bucket{matchers}[{rate}])))"
    )


def restarts(scope: Scope) -> str:
    """Container restarts of the target's pods (a counter: compare two moments)."""
    return f"sum(kube_pod_container_status_restarts_total{_s(scope.ns(), scope.pods())})"


def pod_count(scope: Scope) -> str:
    """How many pods the target has (no series at all when it has none)."""
    return f"count(kube_pod_info{_s(scope.ns(), scope.pods())})"


def memory_ratio(scope: Scope) -> str:
    """The fullest container of the target's pods: working set over its memory limit (0..1;
    containers without a limit are left out)."""
    usage = _s(
        scope.ns(),
        scope.pods(),
        ("container", "!=", '""'),
        ("container", "!=", '"POD"'),
    )
    limit = _s(scope.ns(), scope.pods())
    return (
        f"max(container_memory_working_set_bytes{usage}"
        f" / on (namespace, pod, container) (container_spec_memory_limit_bytes{limit} > 0))"
    )


def caller_error_rates(scope: Scope, rate: str) -> str:
    """Per calling service: the share of its calls to the target that failed (0..1)."""
    base = (scope.ns(), scope.service_matcher("destination_service"))
    errors = _s(*base, ("code", "=~", promql.string(CALLER_ERRORS)))
    total = f"sum by (service)(rate(http_client_requests_total{_s(*base)}[{rate}]))"
    return (
        f"(sum by (service)(rate(http_client_requests_total{errors}[{rate}])) or {total} * 0)"
        f" / {total}"
    )


# ---------------------------------------------------------------------- a whole namespace


def namespace_error_rates(namespace: str, rate: str) -> str:
    """Per service of the namespace: the share of its answers that were 5xx."""
    ns = ("namespace", "=", promql.namespace(namespace))
    errors = _s(ns, ("code", "=~", promql.string(SERVER_ERRORS)))
    total = f"sum by (service)(rate(http_requests_total{_s(ns)}[{rate}]))"
    return f"(sum by (service)(rate(http_requests_total{errors}[{rate}])) or {total} * 0) / {total}"


def namespace_p95(namespace: str, rate: str) -> str:
    """Per service of the namespace: the 95th percentile answer time, in seconds."""
    ns = _s(("namespace", "=", promql.namespace(namespace)))
    return (
        "histogram_quantile(0.95, sum by (service, le)"
        f"(rate(http_request_duration_seconds_bucket{ns}[{rate}])))"
    )


def namespace_caller_errors(namespace: str, rate: str) -> str:
    """Per (caller, callee) pair: the share of calls that failed, as the caller saw them."""
    ns = ("namespace", "=", promql.namespace(namespace))
    errors = _s(ns, ("code", "=~", promql.string(CALLER_ERRORS)))
    by = "sum by (service, destination_service)"
    total = f"{by}(rate(http_client_requests_total{_s(ns)}[{rate}]))"
    return f"({by}(rate(http_client_requests_total{errors}[{rate}])) or {total} * 0) / {total}"


def namespace_memory_ratio(namespace: str) -> str:
    """Per container of the namespace: working set over its memory limit."""
    ns = ("namespace", "=", promql.namespace(namespace))
    usage = _s(ns, ("container", "!=", '""'), ("container", "!=", '"POD"'))
    return (
        f"container_memory_working_set_bytes{usage}"
        f" / on (namespace, pod, container) (container_spec_memory_limit_bytes{_s(ns)} > 0)"
    )
