"""The chart a card shows, as data (``agents.telemetry_chart``): the panels, the mark of the
change and the shaded time after it come from the figures' series, nothing else; no series, no
chart; the digest moves exactly when what is drawn moves. And the links (``agents.telemetry_
links``): the PromQL on Prometheus' graph page, the dashboard by the first matching rule, and no
credential in any of them."""

from __future__ import annotations

from dataclasses import replace
from urllib.parse import parse_qs, urlsplit

import pytest

from agents.telemetry_chart import chart_for
from agents.telemetry_links import (
    LinkConfig,
    dashboards,
    grafana_dashboard,
    links_for,
    prometheus_graph,
)
from agents.telemetry_metrics import CallerFigure, Figure, Metrics
from store.errors import StratusError

T0 = 1_800_000_000.0
ERRORS = tuple((T0 + 10 * i, 1.0 if i < 6 else 0.0) for i in range(12))
RESTARTS = tuple((T0 + 10 * i, float(min(i, 5))) for i in range(12))


def metrics(**changes: object) -> Metrics:
    base = Metrics(
        window=60.0,
        services=("geo",),
        error_rate=Figure(now=0.0, earlier=1.0, peak=1.0, before=1.0),
        p95=Figure(),
        restarts=Figure(now=5.0, earlier=0.0, peak=5.0),
        memory=Figure(),
        callers=(CallerFigure("search", Figure(now=0.0, peak=1.0)),),
        queries=("q1", "q2"),
        read_at=T0 + 110,
        start=T0,
        promql=(("error_rate", "sum(x)"), ("restarts", 'sum(y{pod=~"geo-.*"})'), ("pods", "c")),
        series=(("error_rate", ERRORS), ("restarts", RESTARTS), ("memory", ())),
        caller_series=(("search", ERRORS),),
    )
    return replace(base, **changes)  # type: ignore[arg-type]


def test_panels_are_the_series_read_and_an_empty_one_is_left_out() -> None:
    chart = chart_for(metrics())
    assert chart is not None
    assert [p.metric for p in chart.panels] == ["error_rate", "restarts", "callers"]
    errors = chart.panel("error_rate")
    assert errors is not None and errors.unit == "ratio" and errors.lines[0].points == ERRORS
    callers = chart.panel("callers")
    assert callers is not None and [line.label for line in callers.lines] == ["search"]
    assert callers.lines[0].figure.peak == 1.0  # the figure the card quotes with it
    assert (chart.start, chart.end) == (T0, T0 + 110)
    assert chart.changed_at is None and chart.after is None  # nothing ran yet


def test_once_the_change_ran_it_is_marked_and_the_time_after_it_shaded() -> None:
    chart = chart_for(metrics(executed_at=T0 + 55, settles_at=T0 + 80))
    assert chart is not None
    assert chart.changed_at == T0 + 55
    assert chart.after == (T0 + 55, T0 + 110)
    assert chart.settles_at == T0 + 80


def test_no_series_no_chart() -> None:
    assert chart_for(None) is None
    assert chart_for(metrics(series=(), caller_series=())) is None
    assert chart_for(metrics(series=(("error_rate", ()),), caller_series=())) is None


def test_the_digest_moves_when_the_picture_does() -> None:
    first, same = chart_for(metrics()), chart_for(metrics())
    moved = chart_for(metrics(series=(("error_rate", ERRORS[:-1]),)))
    ran = chart_for(metrics(executed_at=T0 + 55))
    assert first is not None and same is not None and moved is not None and ran is not None
    assert first.digest == same.digest
    assert len({first.digest, moved.digest, ran.digest}) == 3


def test_a_figure_links_to_its_promql_over_the_range_read() -> None:
    url = prometheus_graph("http://prom:9090", 'sum(y{pod=~"geo-.*"})', start=T0, end=T0 + 300)
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    assert parts.path == "/graph"
    assert query["g0.expr"] == ['sum(y{pod=~"geo-.*"})']
    assert query["g0.range_input"] == ["300s"] and query["g0.tab"] == ["0"]
    assert query["g0.end_input"] == ["2027-01-15 08:05"]
    # The page reads its end to the minute: a read at 08:05:20 ends the page at 08:06, the
    # range widened so it still starts where the figures' range did.
    late = parse_qs(urlsplit(prometheus_graph("http://p", "up", start=T0, end=T0 + 320)).query)
    assert late["g0.end_input"] == ["2027-01-15 08:06"] and late["g0.range_input"] == ["360s"]


def test_links_never_carry_credentials() -> None:
    config = LinkConfig.from_env(
        {
            "STRATUS_PROMETHEUS_URL": "https://bob:hunter2@prom.internal:9090/prom/?token=abc",
            "STRATUS_PROMETHEUS_TOKEN": "tok-123",
            "STRATUS_GRAFANA_URL": "https://admin:pw@grafana.example/?auth=xyz",
            "STRATUS_GRAFANA_DASHBOARDS": "*/*=k8s",
        }
    )
    assert config.prometheus == "https://prom.internal:9090/prom"
    assert config.grafana == "https://grafana.example"
    found = links_for(
        config,
        promql=metrics().promql,
        start=T0,
        end=T0 + 60,
        namespace="hotel",
        workload="geo",
        incident_start=T0 + 30,
    )
    text = str(found)
    for secret in ("hunter2", "bob", "tok-123", "abc", "admin", "pw@", "xyz"):
        assert secret not in text, secret
    assert [name for name, _ in found.queries] == ["error_rate", "restarts"]  # not "pods"


def test_a_public_url_wins_over_the_one_stratus_queries() -> None:
    config = LinkConfig.from_env(
        {
            "STRATUS_PROMETHEUS_URL": "http://prometheus.monitoring.svc:9090",
            "STRATUS_PROMETHEUS_PUBLIC_URL": "https://prometheus.example.com/",
        }
    )
    assert config.prometheus == "https://prometheus.example.com"
    assert LinkConfig.from_env({}).prometheus == ""


def test_the_first_matching_dashboard_rule_wins_over_the_incidents_range() -> None:
    config = LinkConfig(
        grafana="https://g", dashboards=dashboards("shop/pay*=payments, shop/*=shop,*/*=k8s")
    )
    url = grafana_dashboard(config, namespace="shop", workload="payment", start=T0, end=T0 + 600.5)
    assert url is not None
    parts = urlsplit(url)
    assert parts.path == "/d/payments"
    assert parse_qs(parts.query) == {
        "var-namespace": ["shop"],
        "var-workload": ["payment"],
        "from": [str(int(T0 * 1000))],
        "to": [str(int((T0 + 600.5) * 1000))],
    }
    other = grafana_dashboard(config, namespace="shop", workload="cart", start=T0, end=None)
    assert other is not None and "/d/shop?" in other and other.endswith("to=now")
    assert "/d/k8s?" in str(
        grafana_dashboard(config, namespace="hotel", workload="geo", start=0, end=None)
    )
    assert (
        grafana_dashboard(
            LinkConfig(grafana="https://g"), namespace="a", workload="b", start=0, end=None
        )
        is None
    )


@pytest.mark.parametrize("bad", ["shop=uid", "shop/*", "/x=uid", "shop/*=a/b", "shop/*="])
def test_a_dashboard_rule_that_is_not_one_is_refused_with_its_name(bad: str) -> None:
    with pytest.raises(StratusError) as refused:
        dashboards(bad)
    assert "STRATUS_GRAFANA_DASHBOARDS" in refused.value.message
