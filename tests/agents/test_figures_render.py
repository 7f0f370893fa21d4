"""What a card and the terminal show for figures that are not there (issue 18 §3), as pure
functions of a summary: a target with no pods says "no pods", not the figures its pods had
before they went away; "after" figures read before the change could show in them say
"pending" and when they are read again; figures that went stale are not "now"."""

from __future__ import annotations

from click.testing import CliRunner

from agents.telemetry import Telemetry
from agents.telemetry_metrics import CallerFigure, Figure, Metrics, _figure
from bot.telemetry import telemetry_text
from cli import render
from tools.prometheus import Series

RAN = 1_000.0
OLD = Figure(now=0.0, earlier=0.0, peak=0.01, before=0.0)


def metrics(**changes: object) -> Metrics:
    base: dict[str, object] = {
        "window": 60.0,
        "services": ("recommendation",),
        "error_rate": OLD,
        "p95": Figure(now=0.024, before=0.024),
        "restarts": Figure(now=0.0, before=0.0),
        "memory": Figure(now=0.31, before=0.31),
        "callers": (),
        "queries": (),
        "read_at": RAN + 30,
        "pods": Figure(now=1.0, before=1.0),
    }
    base.update(changes)
    return Metrics(**base)  # type: ignore[arg-type]


def printed(summary: Telemetry) -> str:
    runner = CliRunner()
    with runner.isolation() as (out, _, _):
        render.telemetry(summary)
        return out.getvalue().decode()


def test_a_series_that_ended_is_not_now() -> None:
    series = Series({}, ((90.0, 0.3), (91.0, 0.31)))
    assert _figure(series, None, 60.0, end=120.0, step=1.0).now is None  # gone 29 s ago
    assert _figure(series, None, 60.0, end=92.0, step=1.0).now == 0.31
    # "before" is the figure at the moment the change ran, not one from long before it.
    assert _figure(series, 120.0, 60.0, end=130.0, step=1.0).before is None
    assert _figure(series, 91.5, 60.0, end=130.0, step=1.0).before == 0.31


def test_no_pods_before_the_change_says_so_instead_of_old_figures() -> None:
    summary = Telemetry(
        pods="0/0",
        metrics=metrics(pods=Figure(now=0.0)),
        metrics_source="prometheus",
        scaled_to_zero=True,
    )
    shown = telemetry_text(summary)
    assert "no pods — nothing to measure" in shown
    assert "error rate" not in shown and "31%" not in shown and "24 ms" not in shown
    out = printed(summary)
    assert "no pods:     nothing to measure" in out and "memory/limit" not in out


def test_after_figures_read_too_soon_are_pending_with_the_moment_they_are_read_again() -> None:
    summary = Telemetry(
        pods="1/1",
        metrics=metrics(executed_at=RAN, settles_at=RAN + 60, pods=Figure(now=1.0, before=0.0)),
        metrics_source="prometheus",
    )
    shown = telemetry_text(summary)
    assert "after: pending — read again at 00:17:40 UTC" in shown, shown
    assert "error rate no pods → *pending*" in shown
    assert "memory / limit no pods → *pending*" in shown
    out = printed(summary)
    assert "pending until 00:17:40 UTC" in out and "no pods -> pending" in out


def test_settled_after_figures_are_shown_with_how_late_they_were_read() -> None:
    summary = Telemetry(
        pods="1/1",
        metrics=metrics(executed_at=RAN, settles_at=RAN + 20, pods=Figure(now=1.0, before=0.0)),
        metrics_source="prometheus",
    )
    shown = telemetry_text(summary)
    assert "pending" not in shown and "read 30s after it" in shown
    assert "error rate no pods → *0.0%*" in shown and "memory / limit no pods → *31%*" in shown


def test_a_caller_with_no_reading_at_the_change_says_so_not_a_dash() -> None:
    # Seen in a loaded run: "Callers' errors: frontend — → 0.0%". The caller made no calls in
    # the rate window at the moment of the change (0/0 is no figure), or Prometheus had no
    # scrape of it then: the card says there was no reading, not a dash nobody can read.
    callers = (
        CallerFigure("frontend", Figure(now=0.0, peak=1.0, before=None)),
        CallerFigure("search", Figure(now=None, peak=0.5, before=0.5)),
    )
    summary = Telemetry(
        pods="1/1",
        metrics=metrics(executed_at=RAN, settles_at=RAN + 20, callers=callers),
        metrics_source="prometheus",
    )
    shown = telemetry_text(summary)
    assert "frontend no reading → 0.0%" in shown, shown
    assert "search 50% → no reading" in shown, shown
    assert "—" not in shown.partition("Callers' errors:")[2], shown
