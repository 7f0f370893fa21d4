"""Links from a card's figures into the tools people already use: the PromQL each figure came
from on Prometheus' own graph page, and the workload's Grafana dashboard over the incident's
time range.

Configuration (environment):

- ``STRATUS_PROMETHEUS_PUBLIC_URL``: the Prometheus people open in a browser, when it differs
  from ``STRATUS_PROMETHEUS_URL`` (the one Stratus queries, often an in-cluster address);
  default: ``STRATUS_PROMETHEUS_URL``.
- ``STRATUS_GRAFANA_URL``: Grafana's base URL; without it there are no dashboard links.
- ``STRATUS_GRAFANA_DASHBOARDS``: which dashboard shows which workload, as comma-separated
  ``NAMESPACE/WORKLOAD=UID`` rules; both sides of the slash are globs, the first matching rule
  wins, e.g. ``shop/*=shop-overview,*/*=k8s-workload``. The link passes ``var-namespace`` and
  ``var-workload`` (the dashboard's variables of those names) and ``from``/``to`` in
  milliseconds.

A link never carries a secret: URLs are rebuilt from scheme, host, port and path only (a
``user:password@`` or a query string in a configured URL is dropped), and nothing of
``STRATUS_PROMETHEUS_TOKEN``, basic auth or the tenant headers ever goes into one. Pure
functions but for ``LinkConfig.from_env``.
"""

from __future__ import annotations

import fnmatch
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from urllib.parse import urlencode, urlsplit, urlunsplit

from store.errors import Remedy, StratusError


def _fail(message: str) -> StratusError:
    return StratusError(message, remedy=Remedy.FIX_CONFIG)


def public_base(url: str, name: str) -> str:
    """``url`` without credentials, query or fragment (what a browser may be sent to)."""
    parts = urlsplit(url.strip())
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise _fail(f"{name}={url!r} is not an http(s) URL")
    host = parts.hostname if ":" not in parts.hostname else f"[{parts.hostname}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


@dataclass(frozen=True)
class Dashboard:
    namespace: str  # a glob
    workload: str  # a glob
    uid: str


@dataclass(frozen=True)
class LinkConfig:
    prometheus: str = ""  # public base URL ("" : no Prometheus links)
    grafana: str = ""  # base URL ("" : no Grafana links)
    dashboards: tuple[Dashboard, ...] = ()

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> LinkConfig:
        env = os.environ if environ is None else environ
        public = env.get("STRATUS_PROMETHEUS_PUBLIC_URL", "").strip()
        queried = env.get("STRATUS_PROMETHEUS_URL", "").strip()
        prometheus = ""
        if public:
            prometheus = public_base(public, "STRATUS_PROMETHEUS_PUBLIC_URL")
        elif queried:
            prometheus = public_base(queried, "STRATUS_PROMETHEUS_URL")
        raw_grafana = env.get("STRATUS_GRAFANA_URL", "").strip()
        grafana = public_base(raw_grafana, "STRATUS_GRAFANA_URL") if raw_grafana else ""
        return cls(
            prometheus=prometheus,
            grafana=grafana,
            dashboards=dashboards(env.get("STRATUS_GRAFANA_DASHBOARDS", "")),
        )


def dashboards(raw: str) -> tuple[Dashboard, ...]:
    """``NAMESPACE/WORKLOAD=UID`` rules, comma-separated (``STRATUS_GRAFANA_DASHBOARDS``)."""
    found = []
    for item in filter(None, (part.strip() for part in raw.split(","))):
        scope, equals, uid = item.partition("=")
        namespace, slash, workload = scope.strip().partition("/")
        uid = uid.strip()
        if not equals or not slash or not namespace or not workload or not uid:
            raise _fail(
                f"STRATUS_GRAFANA_DASHBOARDS: {item!r} is not NAMESPACE/WORKLOAD=UID"
                " (e.g. shop/*=shop-overview)"
            )
        if any(c in uid for c in "/?#&= "):
            raise _fail(f"STRATUS_GRAFANA_DASHBOARDS: {uid!r} is not a dashboard uid")
        found.append(Dashboard(namespace, workload.strip(), uid))
    return tuple(found)


def _stamp(unix: float) -> str:
    return datetime.fromtimestamp(unix, UTC).strftime("%Y-%m-%d %H:%M")


def prometheus_graph(base: str, promql: str, *, start: float, end: float) -> str:
    """Prometheus' graph page for ``promql`` from ``start`` to ``end`` (Unix seconds)."""
    # The graph page reads its end time to the minute (seconds are dropped): the end is
    # rounded up to the next minute and the range widened to match, so the last seconds —
    # the "after" of a change that just ran — are on the page, not cut off.
    shown_end = math.ceil(end / 60) * 60
    span = max(math.ceil(shown_end - start), 1)
    query = urlencode(
        {
            "g0.expr": promql,
            "g0.tab": "0",
            "g0.range_input": f"{span}s",
            "g0.end_input": _stamp(shown_end),
        }
    )
    return f"{base}/graph?{query}"


def dashboard_for(config: LinkConfig, namespace: str, workload: str) -> Dashboard | None:
    return next(
        (
            d
            for d in config.dashboards
            if fnmatch.fnmatchcase(namespace, d.namespace)
            and fnmatch.fnmatchcase(workload, d.workload)
        ),
        None,
    )


def grafana_dashboard(
    config: LinkConfig, *, namespace: str, workload: str, start: float, end: float | None
) -> str | None:
    """The workload's dashboard from ``start`` to ``end`` (``None``: up to now), or ``None``
    when Grafana or a matching dashboard is not configured."""
    dashboard = dashboard_for(config, namespace, workload)
    if not config.grafana or dashboard is None:
        return None
    query = urlencode(
        {
            "var-namespace": namespace,
            "var-workload": workload,
            "from": str(int(start * 1000)),
            "to": str(int(end * 1000)) if end is not None else "now",
        }
    )
    return f"{config.grafana}/d/{dashboard.uid}?{query}"


@dataclass(frozen=True)
class FigureLinks:
    """What a card links to: each figure's PromQL page by figure name, and the dashboard."""

    queries: tuple[tuple[str, str], ...] = ()
    dashboard: str | None = None


def links_for(
    config: LinkConfig,
    *,
    promql: tuple[tuple[str, str], ...],
    start: float,
    end: float,
    namespace: str,
    workload: str,
    incident_start: float | None = None,
    incident_end: float | None = None,
) -> FigureLinks:
    """The links of one card: ``promql`` over the range its figures were read for, and the
    dashboard over the incident's range (from its opening less the window it looked back)."""
    queries = (
        tuple(
            (name, prometheus_graph(config.prometheus, text, start=start, end=end))
            for name, text in promql
            if name != "pods"  # read to judge the others, not a figure the card shows
        )
        if config.prometheus
        else ()
    )
    window = end - start
    dashboard = grafana_dashboard(
        config,
        namespace=namespace,
        workload=workload,
        start=(incident_start if incident_start is not None else end) - window,
        end=incident_end,
    )
    return FigureLinks(queries, dashboard)
