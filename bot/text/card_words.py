"""A proposal's card: its fields, diff, telemetry and metrics, why it is asked, its plan, its
risk, and the answers to a click on it.
"""

from __future__ import annotations

from datetime import datetime

from bot.text import (
    VERDICTS,
    approvers,
    clock,
    data,
    duration,
    esc,
    inert,
    named,
    plain,
    quoted,
    who,
)

# ---------------------------------------------------------------------- proposal cards

CARD_STATE = {
    "awaiting_approval": ":raised_hand: Waiting for approval",
    "approved": ":ballot_box_with_check: Approved — about to run",
    "executing": ":gear: Running",
    "executed": ":white_check_mark: Executed",
    "undone": ":leftwards_arrow_with_hook: Undone",
    "denied": ":no_entry: Denied by policy",
    "rejected": ":x: Rejected",
    "expired": ":hourglass: Expired (nobody answered in time)",
    "superseded": ":recycle: Superseded",
    "failed": ":boom: Failed",
    "cancelled": ":no_entry_sign: Cancelled",
    "proposed": ":memo: Proposed",
    "tampered": ":rotating_light: Tampered — Stratus refuses to act on it",
}


def card_fields(
    target: str, risk: str, reversible: bool, state: str, *, undo_note: str | None = None
) -> list[str]:
    """The card's four fields; ``undo_note`` says what the Undo field should where the card
    offers no Undo button (``undo_field_of_undo``, ``undo_field_undone``)."""
    undo = undo_note or ("exact undo available" if reversible else ":warning: cannot be undone")
    return [
        f"*Target*\n`{target}`",
        f"*Risk*\n{RISK.get(risk, risk)}",
        f"*Undo*\n{undo}",
        f"*State*\n{CARD_STATE.get(state, state)}",
    ]


def undo_field_of_undo(namespace: str) -> str:
    """An undo's card: it has no Undo button of its own; what a person can do instead."""
    again = f"`/stratus investigate {esc(namespace)}`" if namespace else "`/stratus investigate`"
    return f"this is an undo (no Undo button); to change it again, {again}"


def undo_field_undone(namespace: str) -> str:
    again = f"`/stratus investigate {esc(namespace)}`" if namespace else "`/stratus investigate`"
    return f"already undone; to apply it again, {again}"


RISK = {
    "low": ":large_green_circle: low",
    "medium": ":large_yellow_circle: medium",
    "high": ":red_circle: high",
}
DIFF_TITLE = "*Diff*"
DIFF_EMPTY = "_(no textual diff)_"


def diff_cut(shown: int, total: int) -> str:
    return f"Showing {shown} of {total} lines — *See the whole diff* opens all of it."


SEE_DIFF = "See the whole diff"
DIFF_MODAL_TITLE = "The whole diff"
CLOSE = "Close"


def telemetry(
    pods: str, restarts: int, endpoints: str, errors: list[str], events: list[str]
) -> str:
    lines = [f"*Telemetry* — pods ready {pods} · restarts {restarts} · endpoints {endpoints}"]
    if errors:
        lines.append("Error lines: " + "; ".join(data(e) for e in errors))
    if events:
        # An Event's reason and object are whatever its author wrote: quoted, like a log line.
        lines.append("Recent events: " + "; ".join(data(e) for e in events))
    return "\n".join(lines)


def error_lines_more(hidden: int) -> str:
    more = f"{hidden} more; " if hidden else ""
    return f"_({more}*{SEE_ERROR_LINES}* shows them whole)_"


SEE_ERROR_LINES = "See the error lines"
ERROR_LINES_TITLE = "Error lines"


def error_lines_intro(target: str, count: int) -> str:
    if not count:
        return f"{data(target, 150)} logs no error lines now."
    return f"The error lines {data(target, 150)}'s pods logged (newest last, {count}):"


METRIC_LABELS = {
    "error_rate": "error rate",
    "p95": "p95 latency",
    "restarts": "restarts",
    "memory": "memory / limit",
}
NO_METRICS = "_Metrics: no metrics source (STRATUS_PROMETHEUS_URL is not set)_"
METRICS_NOT_APPLICABLE = "_Metrics: none for this kind of object_"


def metrics_failed(reason: str) -> str:
    return f":warning: Metrics unavailable — {esc(reason)}. Cluster signals only."


def metrics_partial(reason: str) -> str:
    return f"_Some figures are missing: {esc(reason)}_"


def metrics_title(window: str, services: list[str]) -> str:
    return f"*Metrics* (Prometheus, last {window}; {', '.join(inert(s) for s in services)})"


def metric_now(label: str, now: str, earlier: str, peak: str) -> str:
    """A figure before the proposal ran: now, at the start of the window, and its peak."""
    return f"{label} *{now}* ({earlier} at the start · peak {peak})"


def metric_before_after(label: str, before: str, now: str) -> str:
    """A figure once the proposal ran: at the moment it ran → now."""
    return f"{label} {before} → *{now}*"


def callers(lines: list[str]) -> str:
    return "Callers' errors: " + "; ".join(lines)


def caller_figure(caller: str, figure: str) -> str:
    # A service name from a Prometheus label: whoever runs the workload wrote it.
    return f"{inert(caller)} {figure}"


BEFORE_AFTER = "_before → after the change_"


def before_after(read_after: float | None) -> str:
    """The before → after heading, saying how long after the change the "after" was read (read
    too soon, rates still mostly show the time before it)."""
    if read_after is None:
        return BEFORE_AFTER
    return f"_before → after the change (after: read {duration(max(read_after, 0))} after it)_"


# Figures that are not there to show (issue 18: a card's figures agree with the cluster).
NO_PODS = "no pods"
PENDING = "pending"
# A caller's share of failed calls with no reading at that moment: it made no calls in the rate
# window, or Prometheus has no scrape of it then (a dash read as a figure nobody could explain).
NO_READING = "no reading"
METRICS_NO_PODS = (
    "_no pods — nothing to measure (figures from before its pods went away are not shown)_"
)


def before_after_pending(again: datetime | None) -> str:
    """The before → after heading while the change cannot show in the figures yet."""
    return f"_before → after the change (after: pending — read again at {clock(again)})_"


def warning(text: str) -> str:
    return f":warning: {esc(text)}"


def agent_intent(requester: str, said: str) -> str:
    """An outside agent's own words for its change: quoted as data (no formatting, no
    mention, no link), so they cannot dress up as a policy line or an approval."""
    return f":speech_balloon: {who(requester)} says it is for: {quoted(said, 'agent')}"


def approver_lists(lists: list[list[str]]) -> str:
    """A conjunction of approver lists: an approver is in every list at once."""
    restricting = [names for names in lists if "*" not in names]
    if len(restricting) <= 1:
        return approvers(restricting[0] if restricting else [])
    return "someone who is " + " *and also* ".join(
        approvers(names) if len(names) == 1 else "one of " + approvers(names)
        for names in restricting
    )


def why_asked(
    reason: str,
    approver_names: list[list[str]],
    got: list[str],
    needed: int,
    *,
    handles: dict[str, str] | None = None,
) -> str:
    lines = [
        f"*Why I ask:* {esc(plain(named(reason, handles)))}",
        f"Approvers: {approver_lists(approver_names)}",
    ]
    if needed > 1:
        lines.append(
            f"Approvals: {len(got)} of {needed}"
            + (f" ({', '.join(who(u) for u in got)})" if got else "")
        )
    return "\n".join(lines)


def why_allowed(reason: str) -> str:
    return f"*Decided by policy:* {reason}"


APPROVE = "Approve once"
REJECT = "Reject"
OTHER = "Other options"
UNDO = "Undo"


def always(action: str, resource: str, namespace: str, expiry: str) -> str:
    return f"Always allow {action} on {resource} in {namespace} for {expiry}"


def high_risk_confirm(what: str, target: str, *, puts_back: str = "") -> str:
    """The high-risk dialog: ``what`` approving does (a write's intent, an undo's effect, as the
    card's header says it), and for an undo that re-introduces the diagnosed cause, that cause —
    the one thing a person must not miss. Kept within Slack's 300 characters."""
    if puts_back:
        return (
            f"This is a *high-risk* change: {data(what, 140)}. It *puts back the cause found:* "
            f"{data(puts_back, 80)}. Run it?"
        )
    return f"This is a *high-risk* change: {data(what, 150)} on {data(target, 80)}. Run it?"


CONFIRM_TITLE = "High-risk change"
CONFIRM_YES = "Approve"
CONFIRM_NO = "Not now"
UNDO_CONFIRM_TITLE = "Undo this change?"


def undo_confirm(effect: str) -> str:
    """The Undo button's dialog: what undoing does (``undo_effect``), not what the write meant."""
    return data(effect, 200)


# ---------------------------------------------------------------------- what an undo does


def undo_effect(
    operation: str, label: str, changes: list[tuple[str, str | None]], *, forced: bool = False
) -> str:
    """An undo's effect in one plain sentence (a card's header, a dialog): ``changes`` are the
    fields undo sets as (field, value it goes back to; None: unset). Names and values come from
    the cluster: each is put on one line, its control and format characters made visible."""
    label = _one_line(label)
    changes = [(_one_line(f), None if v is None else _one_line(v)) for f, v in changes]
    if operation == "create":
        said = f"Re-create {label}, which Stratus deleted"
    elif operation == "delete":
        said = f"Delete {label}, which Stratus created"
    elif not changes:
        said = f"Nothing to put back: {label} already is as before Stratus changed it"
    elif len(changes) == 1:
        field, value = changes[0]
        said = (
            f"Remove {field} from {label}, as before Stratus added it"
            if value is None
            else f"Set {field} of {label} back to {value}, as before Stratus changed it"
        )
    elif len(changes) == 2:
        parts = " and ".join(f"{f} back to {_unset(v)}" for f, v in changes)
        said = f"Set {parts} on {label}, as before Stratus changed them"
    else:
        shown = ", ".join(f"{f} → {_unset(v)}" for f, v in changes[:3])
        more = ", …" if len(changes) > 3 else ""
        said = f"Put back {len(changes)} fields of {label} as before Stratus changed them: "
        said += shown + more
    return said + (FORCED_SUFFIX if forced else "")


FORCED_SUFFIX = " — overwriting the change made since"


def _one_line(value: str) -> str:
    return " ".join(plain(value).split())


def _unset(value: str | None) -> str:
    return "unset" if value is None else value


UNDO_CONFIRM_YES = "Undo"


def approved_by(users: list[str], at: datetime | None) -> str:
    names = ", ".join(who(u) for u in users)
    return f"*Approved by* {names} at {clock(at)}"


def allowed_by_policy(reason: str) -> str:
    return f"*Approved by policy:* {esc(reason)}"


def ran(at: datetime | None) -> str:
    return f"*Ran* at {clock(at)}"


def verification(verdict: str, before: object, after: object) -> str:
    return f"*Verification:* {VERDICTS.get(verdict, verdict)} (health score {before} → {after})"


VERIFYING = "*Verification:* waiting for the cluster to settle…"


def undone_line(by: str, undo_id: str, at: datetime | None) -> str:
    return f"*Undone* by {who(by)} at {clock(at)} (`{undo_id}`)"


def ended(state: str, reason: str) -> str:
    """How a card ended, with its reason — a person's words for a rejection — quoted as data:
    a reason cannot add a line, a field or an emoji that makes a rejected card read as run."""
    return f"{CARD_STATE.get(state, state)}" + (f": {data(reason)}" if reason else "")


def batched(requester: str, count: int) -> str:
    return (
        f":package: {count} proposals from {who(requester)} for the same approvers, gathered on "
        "this one card so you are asked once; each has its own buttons"
    )


def card_context(proposal_id: str, requester: str, expires: datetime) -> str:
    return f"`{proposal_id}` · proposed by {who(requester)} · expires {clock(expires)}"


def card_fallback(intent: str, state: str) -> str:
    return f"{inert(intent)} — {CARD_STATE.get(state, state)}"


def option_label(intent: str) -> str:
    return intent


# ---------------------------------------------------------------------- clicks

REJECT_TITLE = "Reject this change"


def reject_intro(intent: str) -> str:
    return f"Rejecting {data(intent)}"


REJECT_LABEL = "Why not? (the planner gets your reason)"
REJECT_PLACEHOLDER = "e.g. geo is fine, look at the recommendation service"
REJECT_SUBMIT = "Reject"
REJECT_TOO_SHORT = "Say a little more, so the planner can use it."
REJECT_TOO_LONG = "Keep it under 500 characters."


def refused(why: str) -> str:
    return f":no_entry: Nothing changed: {esc(why)}"


# ---------------------------------------------------------------------- tampered proposals


def tampered(problems: list[str]) -> str:
    """A proposal edited outside Stratus (``Proposal.tampered``): what was found, quoted."""
    found = "; ".join(esc(p) for p in problems[:3])
    return (
        ":rotating_light: *This proposal was edited outside Stratus* — nothing approves, "
        f"executes or undoes it. Found: {found}. See `stratus audit verify`."
    )


def tampered_line(proposal_id: str) -> str:
    return f"• `{proposal_id}` :rotating_light: edited outside Stratus — refused"


# ---------------------------------------------------------------------- plans (issue 18 §1)

APPROVE_PLAN = "Approve plan"
PLAN_CONFIRM_TITLE = "Approve the whole plan?"
PLAN_CONFIRM_YES = "Approve plan"


def step_of(number: int, total: int) -> str:
    return f"*Step {number} of {total}*"


def plan_lines(steps: list[tuple[int, str, str]]) -> str:
    """The whole plan of an attempt, once in the thread: ``(number, intent, note)`` each — a
    note saying why a step could not be planned yet (it is asked on its own then)."""
    lines = [f"*Plan ({len(steps)} steps):*"]
    for number, intent, note in steps:
        later = f" — not planned yet ({data(note, 200)}); asked on its own" if note else ""
        lines.append(f"{number}. {data(intent, 200)}{later}")
    return "\n".join(lines)


def plan_confirm(steps: int) -> str:
    return (
        f"This approves step 1 now and the {steps - 1} later step(s) of this plan that the "
        "policy lets a plan approval cover, each only while it still makes exactly the change "
        "listed in the thread. A step whose object moved is asked again."
    )


def approved_with_plan(user: str, at: datetime | None) -> str:
    return f"*Approved with the plan by* {who(user)} at {clock(at)}"


def plan_approved(user: str, at: datetime | None, later: int) -> str:
    return (
        f"*Plan approved by* {who(user)} at {clock(at)} "
        f"(this step and {later} later step(s), while unchanged)"
    )


# ---------------------------------------------------------------- risk with its reason (issue 18)


def risk_reason(level: str, reason: str) -> str:
    """Why a proposal's risk is what it is (``proposals.risk``): our sentence, with the
    cluster's names and values in it, so shown as data."""
    return f"*Risk: {RISK.get(level, esc(level))}* — {data(reason, 300)}"


def puts_back_cause(cause: str) -> str:
    """An undo that re-introduces what the diagnosis found: said before anything else."""
    return f":rotating_light: *This puts back the cause found:* {data(cause, 300)}"


# ------------------------------------------------------------ writes made as the approver


def cluster_refused(person: str, cluster: str) -> str:
    """A write the cluster refused for the person it was sent as (impersonation): nothing
    was written. ``cluster`` is the API server's own words, quoted as data."""
    return f"{CARD_STATE['failed']}: the cluster refused this for {who(person or 'stratus')}: " + (
        data(cluster)
    )


def not_mapped(person: str, file: str) -> str:
    """A write refused before it was sent: its approver has no Kubernetes identity."""
    if not person:
        return (
            f"{CARD_STATE['failed']}: nothing was sent — writes Stratus makes on its own have no "
            f"Kubernetes identity (no `automatic` in {data(file)})"
        )
    return (
        f"{CARD_STATE['failed']}: nothing was sent — {who(person)} has no Kubernetes identity "
        f"to write as (add them to {data(file)})"
    )
