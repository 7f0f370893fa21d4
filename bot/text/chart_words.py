"""A card's chart and links: the chart's panel titles and legend, its alt text, why a card has
no chart, and the line of links into Prometheus and Grafana."""

from __future__ import annotations

from bot.text.card_words import METRIC_LABELS

PANEL_TITLES = {**METRIC_LABELS, "callers": "callers' errors"}
UNIT_SUFFIX = {"ratio": "%", "seconds": "ms", "count": ""}
CHANGE = "change"
AFTER = "after"
SETTLED = "settled"
CHART_TITLE = "Before/after chart"
ALT_LIMIT = 2000  # Slack's limit for an image block's alt text


def chart_title(target: str) -> str:
    return f"{target}: before/after"


def chart_filename(proposal_id: str) -> str:
    return f"chart-{proposal_id}.png"


def alt_text(target: str, window: str, figures: list[str], changed: str | None) -> str:
    """The chart in words, for screen readers: the same figures the card's text quotes."""
    head = f"Chart of {target} over the last {window}"
    if changed is not None:
        head += f"; the change ran at {changed} UTC (marked), the time after it shaded"
    text = head + ". " + ". ".join(f.replace("*", "") for f in figures) + "."
    return text if len(text) <= ALT_LIMIT else text[: ALT_LIMIT - 1] + "…"


NO_CHART_NO_METRICS = "_Chart: none — no metrics to draw_"
CHART_DRAWING = "_Chart: being drawn…_"
CHART_IN_THREAD = "_Chart: posted in the thread; shown here once Slack has processed it_"


def chart_upload_failed(why: str) -> str:
    return f"_Chart: could not be uploaded ({why}); the figures above stand_"


def links_parts(metric_links: list[tuple[str, str]], dashboard: str | None) -> list[str]:
    """The card's links, one context element each (a PromQL link alone can be a few hundred
    characters): "Open in Prometheus:" and each figure by name, then Grafana's dashboard.
    ``metric_links``: (figure name, URL) for each figure read."""
    parts = [f"<{url}|{PANEL_TITLES.get(name, name)}>" for name, url in metric_links]
    if parts:
        parts.insert(0, "Open in Prometheus:")
    if dashboard:
        parts.append(f"<{dashboard}|Grafana dashboard>")
    return parts
