"""The health score of a namespace: what Transactional No-Regression compares before and after
an attempt.

``collect`` reads the namespace once (through the tool layer) into a plain ``NamespaceState``;
``score`` is a pure function of that state; ``verdict`` compares two scores. Each part of the
score is a count a person can check by hand, and the parts travel with the score into the
events, so a person sees *why* an attempt was judged worse.

What counts as unhealthy is chosen to leave normal things alone: a deployment intentionally
at zero replicas has nothing unavailable, and a Service whose only backing workload is at zero
is not "without endpoints" while nobody calls it; a completed Job's pod is not unready. Once a
caller's latest log lines fail against such a Service (or one whose selector matches no
workload), its missing endpoints are the fault and count like any other's.

With Prometheus (``collect(..., prometheus=client)``) two more parts join: services answering
more than ``ERROR_RATE_LIMIT`` of their requests with 5xx, and services whose p95 latency is
above ``SLOW_P95_SECONDS`` (``agents.health_metrics``, over the telemetry rate window). They
weigh into better and worse but not into "healthy": a rate looks back over its window, so right
after a fix it still remembers the errors, and a resolution must not wait for that to drain.
When Prometheus fails the parts are simply absent, and ``verdict`` compares only the parts both
looks have — a Prometheus that answered before an attempt and not after cannot flip a verdict.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Literal

from agents.analyzers import _workloads as w
from agents.health_metrics import request_metrics
from tools.errors import ToolError
from tools.k8s import KubeClient
from tools.prometheus import PrometheusClient

# How much each part weighs: a crash loop or a service nobody can reach hurts callers more
# than one slow pod.
WEIGHTS = {
    "crash_looping_containers": 3,
    "services_without_endpoints": 3,
    "failing_requests": 2,
    "unavailable_replicas": 2,
    "unready_pods": 1,
    "new_warning_events": 1,
    # From Prometheus, when it answers: a service failing its callers, a service gone slow.
    "erroring_services": 2,
    "slow_services": 1,
}
METRIC_PARTS = ("erroring_services", "slow_services")

# New warning events count, but a noisy namespace cannot outweigh real breakage.
WARNING_CAP = 5
_WORKLOAD_KINDS = (("apps/v1", "Deployment"), ("apps/v1", "StatefulSet"), ("apps/v1", "DaemonSet"))
_NAMESPACE_KINDS = (("v1", "Pod"), ("v1", "Endpoints"), ("v1", "Service"), ("v1", "Event"))
LOG_PODS = 40  # pods whose logs one look reads, at most (one per workload)
LOG_TAIL = 30
LOG_WINDOW = 1.0  # seconds before a log's newest line that count as "now"
# A failed request as applications log it: a level word, or the words of a failed call.
REQUEST_ERROR = re.compile(
    r"\b(ERROR|FATAL|CRITICAL)\b|\b(failed|refused|timed out|no such host|unreachable)\b"
)
_STARTING = {"ContainerCreating", "PodInitializing"}
READY_GRACE = 30.0  # seconds a started, not-yet-ready container is given before it counts
_NUMBERS = re.compile(r"\d+")
SIGNATURE_CHARS = 160
SIGNATURES_PER_POD = 5
_CRASH_REASONS = {"CrashLoopBackOff", "RunContainerError", "CreateContainerError"}

Verdict = Literal["healthy", "better", "same", "worse"]


@dataclass(frozen=True)
class Workload:
    kind: str
    name: str
    desired: int
    ready: int
    template_labels: dict[str, str]


@dataclass(frozen=True)
class PodState:
    name: str
    phase: str
    ready: bool
    crash_looping: int  # containers waiting in a crash loop (or failing to start)


@dataclass(frozen=True)
class ServiceState:
    name: str
    selector: dict[str, str]
    ready_endpoints: int


@dataclass(frozen=True)
class WarningEvent:
    reason: str
    object: str
    last_seen: str  # RFC 3339, as the API server gives it


@dataclass(frozen=True)
class NamespaceState:
    namespace: str
    workloads: tuple[Workload, ...] = ()
    pods: tuple[PodState, ...] = ()
    services: tuple[ServiceState, ...] = ()
    warnings: tuple[WarningEvent, ...] = ()
    # Running, ready pods whose latest log lines report failed requests (callers of a broken
    # service): the only request signal a cluster without metrics exposes.
    failing_requests: tuple[str, ...] = ()
    # Pods on their way somewhere (being created, initialising, terminating, or started moments
    # ago and not ready yet): while any are, the namespace has not settled.
    transitional: tuple[str, ...] = ()
    # From Prometheus ("service (12%)", "service (1.40 s)"); None when it was not asked or
    # did not answer (``metrics_note`` says which).
    erroring_services: tuple[str, ...] | None = None
    slow_services: tuple[str, ...] | None = None
    metrics_note: str = ""


@dataclass(frozen=True)
class HealthScore:
    parts: dict[str, int] = field(default_factory=dict)
    details: dict[str, list[str]] = field(default_factory=dict)
    metrics: str = ""  # "prometheus", or why its parts are missing ("" when not configured)

    @property
    def total(self) -> int:
        return self.total_over(self.parts)

    def total_over(self, names: Any) -> int:
        return sum(WEIGHTS.get(name, 1) * self.parts.get(name, 0) for name in names)

    @property
    def healthy(self) -> bool:
        """Nothing structural is wrong (new warnings alone do not make a namespace sick, and
        metric parts lag behind a fix by their rate window)."""
        return all(
            count == 0
            for name, count in self.parts.items()
            if name != "new_warning_events" and name not in METRIC_PARTS
        )

    def to_dict(self) -> dict[str, Any]:
        return {
            "total": self.total,
            "healthy": self.healthy,
            "parts": dict(self.parts),
            "details": {k: list(v) for k, v in self.details.items()},
            "metrics": self.metrics,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> HealthScore:
        return cls(
            parts={str(k): int(v) for k, v in (data.get("parts") or {}).items()},
            details={str(k): list(v) for k, v in (data.get("details") or {}).items()},
            metrics=str(data.get("metrics") or ""),
        )


@dataclass(frozen=True)
class ScorePart:
    """One non-zero part of a stored score: what it counts, how many, and its weight."""

    name: str
    count: int
    weight: int
    # It does not count against "healthy" (warnings; request rates that lag a fix).
    lenient: bool

    @property
    def points(self) -> int:
        return self.count * self.weight


def breakdown(stored: dict[str, Any] | None) -> list[ScorePart]:
    """The parts a stored score (``HealthScore.to_dict``) is made of, heaviest first: what a
    person needs to read "4 → 2" as the sum it is."""
    parts = HealthScore.from_dict(stored or {}).parts
    found = [
        ScorePart(
            name,
            count,
            WEIGHTS.get(name, 1),
            name == "new_warning_events" or name in METRIC_PARTS,
        )
        for name, count in parts.items()
        if count
    ]
    return sorted(found, key=lambda p: (-p.points, p.name))


def _matches(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return bool(selector) and all(labels.get(k) == v for k, v in selector.items())


def _named_in(name: str, failures: tuple[str, ...]) -> bool:
    """Whether a failure line names the service as a host ("geo:8083", "geo.hotel.svc",
    "service geo has …"), not as part of a longer name ("geo-db")."""
    pattern = re.compile(rf"(?<![\w.-]){re.escape(name)}(?![\w-])")
    return any(pattern.search(failure.partition(": ")[2]) for failure in failures)


def score(state: NamespaceState, *, since: str = "") -> HealthScore:
    """The score of one observation; warnings count only when seen after ``since``."""
    unavailable = {
        f"{w.kind.lower()}/{w.name}": w.desired - w.ready
        for w in state.workloads
        if w.ready < w.desired
    }
    unready = [p.name for p in state.pods if not p.ready and p.phase not in ("Succeeded",)]
    crash = [p.name for p in state.pods if p.crash_looping]
    active_labels = [w.template_labels for w in state.workloads if w.desired > 0]
    # A Service with no endpoints is dark when a workload behind it wants pods, or when its
    # callers fail against it (scaled to zero, or a selector that matches nothing): a Service
    # idle at zero that nobody calls is left alone.
    dark = [
        s.name
        for s in state.services
        if s.ready_endpoints == 0
        and s.selector
        and (
            any(_matches(s.selector, labels) for labels in active_labels)
            or _named_in(s.name, state.failing_requests)
        )
    ]
    warnings = sorted({f"{w.reason} {w.object}" for w in state.warnings if w.last_seen > since})
    parts, details = _metric_parts(state)
    return HealthScore(
        metrics=state.metrics_note,
        parts={
            **parts,
            "crash_looping_containers": sum(p.crash_looping for p in state.pods),
            "services_without_endpoints": len(dark),
            "unavailable_replicas": sum(unavailable.values()),
            "unready_pods": len(unready),
            "failing_requests": len(state.failing_requests),
            "new_warning_events": min(len(warnings), WARNING_CAP),
        },
        details={
            "crash_looping_containers": sorted(crash),
            "services_without_endpoints": sorted(dark),
            "unavailable_replicas": sorted(f"{k} ({v})" for k, v in unavailable.items()),
            "unready_pods": sorted(unready),
            "failing_requests": sorted(state.failing_requests),
            "new_warning_events": warnings[:WARNING_CAP],
            **details,
        },
    )


def _metric_parts(state: NamespaceState) -> tuple[dict[str, int], dict[str, list[str]]]:
    parts: dict[str, int] = {}
    details: dict[str, list[str]] = {}
    for name, found in (
        ("erroring_services", state.erroring_services),
        ("slow_services", state.slow_services),
    ):
        if found is not None:
            parts[name] = len(found)
            details[name] = sorted(found)
    return parts, details


def verdict(before: HealthScore, after: HealthScore) -> Verdict:
    """How an attempt changed the namespace: healthy, better, the same, or worse — over the
    parts both looks have (a metric part one look lacks is left out of both), new warning
    events aside."""
    if after.healthy:
        return "healthy"
    # New warnings are left out (issue 18 F1: "worse (4 → 5: … new warning events 1 …)" undid
    # a right fix): a fix makes its own events (a restart, a back-off of the pod that has not
    # read it yet), and the legend counts warnings as healthy, so they cannot make it worse.
    common = [name for name in after.parts if name in before.parts and name != "new_warning_events"]
    then, now = before.total_over(common), after.total_over(common)
    if now > then:
        return "worse"
    if now < then:
        return "better"
    return "same"


# ------------------------------------------------------------------ reading the cluster


def collect(
    kube: KubeClient, namespace: str, *, prometheus: PrometheusClient | None = None
) -> NamespaceState:
    """One read of the namespace into a ``NamespaceState`` (a handful of list calls, and two
    Prometheus queries side by side when a client is given)."""
    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="health-metrics") as pool:
        metrics = pool.submit(request_metrics, prometheus, namespace) if prometheus else None
        state = _collect_cluster(kube, namespace)
        if metrics is None:
            return state
        erroring, slow, note = metrics.result()
    return NamespaceState(
        **{
            **state.__dict__,
            "erroring_services": erroring,
            "slow_services": slow,
            "metrics_note": note,
        }
    )


def _collect_cluster(kube: KubeClient, namespace: str) -> NamespaceState:
    objects = {
        kind: kube.list(api_version, kind, namespace=namespace)
        for api_version, kind in (*_WORKLOAD_KINDS, *_NAMESPACE_KINDS)
    }
    failing = failing_requests(kube, namespace, objects["Pod"])
    return state_of(namespace, objects, failing=failing)


def state_of(
    namespace: str,
    objects: Mapping[str, list[dict[str, Any]]],
    *,
    failing: tuple[str, ...] = (),
) -> NamespaceState:
    """The namespace's state read from its objects as the API listed them, by kind (what
    ``collect`` reads, and a snapshot holds): a pure function, so the reading of odd shapes
    can be tested without a cluster."""
    workloads = []
    for _, kind in _WORKLOAD_KINDS:
        for obj in objects.get(kind) or []:
            status = obj.get("status") or {}
            if kind == "DaemonSet":
                desired = int(status.get("desiredNumberScheduled") or 0)
                ready = int(status.get("numberReady") or 0)
            else:
                desired = w.desired_replicas(obj)
                ready = int(status.get("readyReplicas") or 0)
                if kind == "Deployment":
                    # A rollout the cluster refuses (quota, LimitRange, no node for the new
                    # pods) leaves the old pods serving: ready, but not the template asked for.
                    ready = min(ready, int(status.get("updatedReplicas") or 0))
            template = ((obj.get("spec") or {}).get("template") or {}).get("metadata") or {}
            workloads.append(
                Workload(
                    kind,
                    obj["metadata"]["name"],
                    desired,
                    ready,
                    dict(template.get("labels") or {}),
                )
            )
    pod_objects = objects.get("Pod") or []
    pods = [_pod(pod) for pod in pod_objects]
    endpoints = {
        e["metadata"]["name"]: sum(len(s.get("addresses") or []) for s in e.get("subsets") or [])
        for e in objects.get("Endpoints") or []
    }
    services = [
        ServiceState(
            s["metadata"]["name"],
            dict((s.get("spec") or {}).get("selector") or {}),
            endpoints.get(s["metadata"]["name"], 0),
        )
        for s in objects.get("Service") or []
    ]
    warnings = [
        WarningEvent(
            str(e.get("reason", "")),
            f"{str((e.get('involvedObject') or {}).get('kind', '')).lower()}/"
            f"{(e.get('involvedObject') or {}).get('name', '')}",
            _stamp(e.get("lastTimestamp") or e.get("eventTime") or ""),
        )
        for e in objects.get("Event") or []
        if e.get("type") == "Warning"
    ]
    return NamespaceState(
        namespace,
        tuple(workloads),
        tuple(pods),
        tuple(services),
        tuple(warnings),
        failing,
        tuple(sorted(p["metadata"]["name"] for p in pod_objects if in_transition(p))),
    )


def _owner(pod: dict[str, Any]) -> str:
    owners = pod["metadata"].get("ownerReferences") or [{}]
    return str(owners[0].get("name") or pod["metadata"]["name"])


def _ready(pod: dict[str, Any]) -> bool:
    status = pod.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    return status.get("phase") == "Running" and conditions.get("Ready") == "True"


def latest_lines(text: str, window: float = LOG_WINDOW) -> list[str]:
    """The lines of the last ``window`` seconds of a log read with timestamps, measured from
    its own newest line (no clock is compared with the cluster's)."""
    stamped: list[tuple[dt.datetime, str]] = []
    for line in text.splitlines():
        stamp_text, _, rest = line.partition(" ")
        try:
            at = dt.datetime.fromisoformat(stamp_text.replace("Z", "+00:00"))
        except ValueError:
            continue
        stamped.append((at, rest))
    if not stamped:
        return text.splitlines()[-3:]
    newest = max(at for at, _ in stamped)
    return [rest for at, rest in stamped if (newest - at).total_seconds() < window]


def error_signatures(lines: list[str]) -> list[str]:
    """The distinct failures among log lines: error lines with their numbers (ports, ids,
    durations) blanked and cut short, so the same failure repeated counts once and two
    different callees failing count twice."""
    found: list[str] = []
    for line in lines:
        if REQUEST_ERROR.search(line):
            signature = _NUMBERS.sub("#", line.strip())[:SIGNATURE_CHARS]
            if signature not in found:
                found.append(signature)
    return found[:SIGNATURES_PER_POD]


def _pod_failures(kube: KubeClient, namespace: str, pod: dict[str, Any]) -> list[str]:
    name = str(pod["metadata"]["name"])
    containers = [c.get("name") for c in (pod.get("spec") or {}).get("containers") or []]
    found: list[str] = []
    for container in containers[:2]:
        try:
            text = kube.read_log(
                namespace, name, container=container, tail_lines=LOG_TAIL, timestamps=True
            )
        except ToolError:
            continue
        found += [s for s in error_signatures(latest_lines(text)) if s not in found]
    return found


def failing_requests(
    kube: KubeClient, namespace: str, pods: list[dict[str, Any]]
) -> tuple[str, ...]:
    """Distinct failures ("owner: error line") that workloads' latest log lines report, one
    ready pod per workload (at most ``LOG_PODS``). Fixing one of two faults removes its
    failures and leaves the other's, so a partial fix reads as better, not the same. Reads
    run in a few threads: one look stays well under a second."""
    chosen: dict[str, dict[str, Any]] = {}
    for pod in pods:
        if _ready(pod):
            chosen.setdefault(_owner(pod), pod)
    sample = list(chosen.items())[:LOG_PODS]
    with ThreadPoolExecutor(max_workers=8) as pool:
        found = pool.map(lambda item: _pod_failures(kube, namespace, item[1]), sample)
        return tuple(
            sorted(
                f"{owner}: {failure}"
                for (owner, _), failures in zip(sample, found, strict=True)
                for failure in failures
            )
        )


def _stamp(value: Any) -> str:
    if isinstance(value, dt.datetime):
        return value.astimezone(dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    return str(value or "")


def in_transition(pod: dict[str, Any], now: dt.datetime | None = None) -> bool:
    """Whether a pod is still on its way to a steady state. A crash loop, a pull back-off or a
    readiness probe failing for a while are steady (they will not fix themselves soon)."""
    if pod["metadata"].get("deletionTimestamp"):
        return True
    status = pod.get("status") or {}
    statuses = (status.get("initContainerStatuses") or []) + (status.get("containerStatuses") or [])
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    phase = status.get("phase")
    if phase == "Pending" and conditions.get("PodScheduled") == "True" and not statuses:
        return True
    waiting = {((c.get("state") or {}).get("waiting") or {}).get("reason") for c in statuses}
    if waiting & _STARTING:
        return True
    if phase == "Running" and conditions.get("Ready") != "True":
        if any(int(c.get("restartCount") or 0) for c in statuses):
            return False
        started = [
            _parse(((c.get("state") or {}).get("running") or {}).get("startedAt"))
            for c in status.get("containerStatuses") or []
        ]
        newest = max((at for at in started if at is not None), default=None)
        moment = now or dt.datetime.now(dt.UTC)
        return newest is not None and (moment - newest).total_seconds() < READY_GRACE
    return False


def _parse(value: Any) -> dt.datetime | None:
    if isinstance(value, dt.datetime):
        return value if value.tzinfo else value.replace(tzinfo=dt.UTC)
    try:
        return dt.datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None


def _pod(pod: dict[str, Any]) -> PodState:
    status = pod.get("status") or {}
    conditions = {c.get("type"): c.get("status") for c in status.get("conditions") or []}
    crash = sum(
        1
        for c in status.get("containerStatuses") or []
        if ((c.get("state") or {}).get("waiting") or {}).get("reason") in _CRASH_REASONS
    )
    return PodState(
        pod["metadata"]["name"],
        str(status.get("phase", "Unknown")),
        conditions.get("Ready") == "True",
        crash,
    )
