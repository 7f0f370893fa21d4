"""The words of a postmortem draft (``incidents.postmortem``) as one Markdown document, in
the shape SRE teams use: summary, impact, timeline, root cause with its evidence, what went
well, what to follow up.

Every line ends with the events it comes from (``[#12]``, their place in the event stream:
``stratus incidents show`` lists them), so a reader — or a test — can check each one. Text
read from the cluster or written by a model is quoted on one line, bounded, with Markdown's
link and HTML characters made inert: a finding cannot format or link itself into the document.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING

from incidents import postmortem
from incidents.postmortem import Draft, Entry

if TYPE_CHECKING:
    from agents.llm.postmortem import PostmortemWriter

QUOTE_LIMIT = 300
NO_MODEL = "templated from the stored events (no model configured)"
# section → lines the model wrote, each with the events it cites (``agents.llm.postmortem``).
Narrated = Mapping[str, Sequence[tuple[str, tuple[int, ...]]]]


def by_model(model: str) -> str:
    return (
        f"whose summary, what went well and follow-ups the model ({_quote(model, 60)}) drafted"
        " from the stored events, each of its lines checked to name only events it was given;"
        " impact, timeline and root cause templated from the same events"
    )


def model_failed(why: str) -> str:
    return f"templated from the stored events (the model's draft was not used: {_quote(why)})"


# Look-alikes for what Markdown reads as a link, HTML or code, in quoted text.
_INERT = str.maketrans({"<": "\u2039", ">": "\u203a", "[": "\u27e6", "]": "\u27e7", "`": "\u02cb"})


def _quote(value: object, limit: int = QUOTE_LIMIT) -> str:
    text = " ".join(str(value or "").split())
    text = text.translate(_INERT)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def refs(entry: Entry) -> str:
    return "[" + ", ".join(f"#{seq}" for seq in entry.refs) + "]"


def clock(at: str) -> str:
    """``HH:MM:SS`` of a stored ISO time (UTC)."""
    return at[11:19] if len(at) >= 19 else at


def who(actor: object, handles: dict[str, str] | None = None) -> str:
    name = str(actor or "")
    if handles and name in handles:
        return f"@{handles[name]}"
    if name.startswith(("agent:", "stratus")):
        return "Stratus"
    if name.startswith("cli:"):
        return f"{name.removeprefix('cli:')} (terminal)"
    if name.startswith("alert:"):
        return f"alert {_quote(name.removeprefix('alert:'), 80)}"
    return _quote(name, 80) or "someone"


def _what(entry: Entry) -> str:
    f = entry.fields
    intent = _quote(f.get("intent") or f.get("action"), 160)
    return f"{intent} (`{_quote(f.get('target'), 120)}`)"


PROPOSAL_STATES = {
    "awaiting_approval": "waiting for approval",
    "approved": "approved by {who}",
    "executed": "executed",
    "rejected": "rejected by {who}",
    "denied": "denied by policy",
    "undone": "undone",
    "failed": "failed",
    "expired": "expired (nobody answered in time)",
    "superseded": "superseded",
    "cancelled": "cancelled by {who}",
}


def timeline_line(entry: Entry, handles: dict[str, str] | None = None) -> str:
    f = entry.fields
    by = who(f.get("actor"), handles)
    message = _quote(f.get("message"))
    said = f": {message}" if message else ""
    kind = entry.kind
    if kind == "opened":
        text = f"Incident opened by {by}"
    elif kind == "state":
        text = f"Incident {f.get('previous')} → {f.get('state')}{said}"
    elif kind == "alert_fired":
        text = f"Alert fired{said}"
    elif kind == "alert_resolved":
        text = f"Alert resolved{said}"
    elif kind == "findings":
        text = f"Detection: {message}"
    elif kind == "diagnosed":
        text = f"Diagnosis: {message}"
    elif kind == "planned":
        text = f"Plan: {message}"
    elif kind == "attempt":
        text = f"Mitigation {message}"
    elif kind == "verified":
        text = f"Verification, {message}"
    elif kind == "note":
        text = f"Note: {message}"
    elif kind == "proposed":
        text = f"Proposed by {by}: {_what(entry)} `{f.get('proposal')}`"
    elif kind == "voted":
        text = f"{by} voted {f.get('choice') or 'on'} {_what(entry)}"
    else:
        state = PROPOSAL_STATES.get(str(f.get("state")), str(f.get("state")))
        text = f"{_what(entry)} {state.format(who=by)}{said}"
    return f"- `{clock(entry.at)}` {text} {refs(entry)}"


def _duration(start: str, end: str) -> str:
    try:
        seconds = int((datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds())
    except ValueError:
        return "—"
    minutes, seconds = divmod(max(seconds, 0), 60)
    return f"{minutes}m {seconds:02d}s" if minutes else f"{seconds}s"


def _summary_line(entry: Entry, namespace: str, handles: dict[str, str] | None) -> str:
    f = entry.fields
    if entry.kind == "summary_opened":
        by = who(f.get("actor"), handles)
        text = f"An incident in namespace `{namespace}`, opened by {by} at {clock(entry.at)} UTC."
    elif entry.kind == "summary_cause":
        text = (
            f"Stratus found `{_quote(f.get('resource'), 120)}` at fault: {_quote(f.get('summary'))}"
        )
    elif entry.kind == "summary_now":
        text = f"It is {f.get('state')} now (since {clock(entry.at)} UTC)" + (
            f": {_quote(f.get('message'))}" if f.get("message") else "."
        )
    else:
        text = (
            f"It ended {f.get('state')} after "
            + _duration(f.get("opened_at", ""), f.get("ended_at", ""))
            + (f": {_quote(f.get('message'))}" if f.get("message") else ".")
        )
    return f"- {text} {refs(entry)}"


def _impact_line(entry: Entry) -> str:
    f = entry.fields
    if entry.kind == "impact_alert":
        text = f"Alert at {clock(entry.at)} UTC: {_quote(f.get('message'))}"
    elif entry.kind == "impact_finding":
        symptoms = ", ".join(f"`{_quote(s, 80)}`" for s in f.get("symptoms") or [])
        text = f"`{_quote(f.get('resource'), 120)}`: {_quote(f.get('summary'))}" + (
            f" (seen in {symptoms})" if symptoms else ""
        )
    else:
        parts = ", ".join(f"{k} {v}" for k, v in sorted((f.get("before_parts") or {}).items()) if v)
        text = (
            f"Health score {f.get('before')} at the first attempt"
            + (f" ({parts})" if parts else "")
            + f", {f.get('after')} at the last verification ({f.get('verdict')})"
        )
    return f"- {text} {refs(entry)}"


def _cause_line(entry: Entry) -> str:
    f = entry.fields
    if entry.kind == "cause":
        return (
            f"- `{_quote(f.get('resource'), 120)}` ({_quote(f.get('category'), 40)},"
            f" {_quote(f.get('mechanism'), 60)}): {_quote(f.get('summary'))}"
            f" — diagnosed by the {'model' if f.get('source') == 'llm' else 'rule-based planner'}"
            f" {refs(entry)}"
        )
    return (
        f"- Evidence ({_quote(f.get('source'), 40)}, `{_quote(f.get('ref'), 120)}`):"
        f" {_quote(f.get('text'))} {refs(entry)}"
    )


def _well_line(entry: Entry, handles: dict[str, str] | None) -> str:
    f = entry.fields
    if entry.kind == "well_verified":
        before, after = (f.get("before") or {}).get("total"), (f.get("after") or {}).get("total")
        text = (
            f"Attempt {f.get('attempt')} was verified {f.get('verdict')}:"
            f" health score {before} → {after}."
        )
    elif entry.kind == "well_approved":
        text = f"{_what(entry)} ran only after {who(f.get('approver'), handles)} approved it."
    else:
        text = f"{_what(entry)} was undone exactly, from its stored before-image."
    return f"- {text} {refs(entry)}"


def _follow_line(entry: Entry, handles: dict[str, str] | None) -> str:
    f = entry.fields
    message = _quote(f.get("message"))
    kind = entry.kind
    if kind == "follow_rejected":
        text = (
            f"{who(f.get('actor'), handles)} rejected {_what(entry)}"
            + (f" — “{message}”" if message else "")
            + ": decide whether it is still needed, and when."
        )
    elif kind == "follow_undone":
        text = f"{_what(entry)} was undone: check that what it fixed has not come back."
    elif kind == "follow_worse":
        text = f"Attempt {f.get('attempt')} made things worse and was undone: find out why."
    elif kind == "follow_escalated":
        text = "Stratus escalated the incident to people" + (f": {message}" if message else ".")
    elif kind == "follow_cause":
        text = (
            f"Prevent `{_quote(f.get('resource'), 120)}` breaking the same way again"
            f" ({_quote(f.get('mechanism'), 60)}): a check, an alert or a guard in review."
        )
    else:
        text = f"{_what(entry)} {kind.removeprefix('follow_')}" + (
            f": {message}" if message else "."
        )
    return f"- {text} {refs(entry)}"


def _narrated(lines: Sequence[tuple[str, tuple[int, ...]]]) -> list[str]:
    return [
        f"- {_quote(text, 400)} [" + ", ".join(f"#{seq}" for seq in refs) + "]"
        for text, refs in lines
    ]


def markdown(
    draft: Draft,
    *,
    handles: dict[str, str] | None = None,
    source: str = NO_MODEL,
    narrative: Narrated | None = None,
) -> str:
    """The draft as Markdown (``handles``: Slack id → handle, for the people it names;
    ``narrative``: the model's checked lines, standing for the template's in their sections)."""
    told = narrative or {}
    none = "- (nothing recorded)"
    lines = [
        f"# Postmortem draft: incident `{draft.incident_id}` in `{draft.namespace}`",
        "",
        f"_A draft {source}. Each line ends with the events it comes from (`[#seq]`,"
        f" see `stratus incidents show {draft.incident_id}`)._",
        "",
        "## Summary",
        *(
            _narrated(told["summary"])
            if told.get("summary")
            else [_summary_line(e, draft.namespace, handles) for e in draft.summary] or [none]
        ),
        "",
        "## Impact",
        *([_impact_line(e) for e in draft.impact] or [none]),
        "",
        "## Timeline (UTC)",
        *([timeline_line(e, handles) for e in draft.timeline] or [none]),
        "",
        "## Root cause",
        *([_cause_line(e) for e in draft.root_cause] or ["- No diagnosis was recorded."]),
        "",
        "## What went well",
        *(
            _narrated(told["went_well"])
            if told.get("went_well")
            else [_well_line(e, handles) for e in draft.went_well] or [none]
        ),
        "",
        "## Follow-ups",
        *(
            _narrated(told["follow_ups"])
            if told.get("follow_ups")
            else [_follow_line(e, handles) for e in draft.follow_ups] or [none]
        ),
        "",
    ]
    return "\n".join(lines)


async def compose(
    draft: Draft, writer: PostmortemWriter | None, *, handles: dict[str, str] | None = None
) -> str:
    """The document: with a model (``writer``), its checked narrative where it gave one;
    without, or when it failed, the template throughout (and the document says which)."""
    if writer is None:
        return markdown(draft, handles=handles)
    narrative, why = await writer.narrate(postmortem.records(draft), postmortem.cited(draft))
    if not narrative:
        return markdown(draft, handles=handles, source=model_failed(why))
    return markdown(draft, handles=handles, source=by_model(writer.model), narrative=narrative)
