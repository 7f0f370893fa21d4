"""Every word the bot says in Slack, in one place (as bolt-python keeps its messages).

Other modules pass fields in and get sentences back; none of them holds user-facing text.
"""

from __future__ import annotations

import re
import unicodedata
from datetime import datetime, timedelta

_SLACK_ID = re.compile(r"^[UW][A-Z0-9]{2,}$")

# ---------------------------------------------------------------------- people and times


def esc(value: object) -> str:
    """Untrusted text (read from the cluster, typed by a person, written by a model) made
    inert in mrkdwn: Slack reads ``<!channel>``, ``<@U…>`` and ``<http://x|label>`` as
    mentions and links, so ``&``, ``<`` and ``>`` are escaped as Slack documents. Our own
    mentions (``who``, ``approvers``) are added after escaping."""
    return str(value).replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


LOOKALIKE_BACKTICK = "\u02cb"  # a modifier letter that looks like a backtick and is not one
# Look-alikes for the characters Slack reads as formatting, where text cannot be put in code.
_INERT = str.maketrans(
    {"*": "\u2217", "_": "\u02cd", "~": "\u223c", "`": LOOKALIKE_BACKTICK, ":": "\u2236"}
)
DATA_LIMIT = 500
# Who wrote a piece of text Stratus shows: the label that goes with it.
SOURCES = {
    "model": "the model's words",
    "offline": "the rule-based planner's words",
    "catalog": "Stratus's description",
    "cluster": "from the cluster",
    "event": "recorded event",
    "person": "a person's words",
    "alert": "from the alert",
    "memory": "from a past incident",
}


def _visible(char: str) -> str:
    """A control or format character (NUL, ESC, a bidi override such as U+202E, a zero-width
    joiner) shown as its code point, so it can neither reorder nor hide what a person reads."""
    if char in "\t\n\r":
        return " "
    if unicodedata.category(char) in ("Cc", "Cf", "Cs", "Co", "Cn") and char != " ":
        return f"[U+{ord(char):04X}]"
    return char


def plain(value: object) -> str:
    """Text with every control and format character made visible."""
    raw = str(value)
    if raw.isprintable():
        return raw
    return "".join(_visible(c) if not c.isprintable() else c for c in raw)


def data(value: object, limit: int = DATA_LIMIT) -> str:
    """Text Stratus did not write (a model's, the cluster's, a person's — or a sentence of ours
    with their values in it) as quoted data: one line of inline code, where Slack reads no
    ``*bold*``, ``_italic_`` or ``~strike~``; escaped, so it names nobody and links nowhere;
    its backticks replaced by a look-alike (``LOOKALIKE_BACKTICK``), so it cannot close the
    code span."""
    flat = " ".join(plain(value).split()) or "—"
    if len(flat) > limit:
        flat = flat[: limit - 1] + "…"
    return "`" + esc(flat).replace("`", LOOKALIKE_BACKTICK) + "`"


def quoted(value: object, source: str, limit: int = DATA_LIMIT) -> str:
    """``data`` labelled with who wrote it (a key of ``SOURCES``)."""
    return f"{data(value, limit)} _({SOURCES.get(source, esc(source))})_"


def inert(value: object) -> str:
    """Untrusted text where code spans would show as backticks (a notification's text):
    escaped, on one line, with Slack's formatting characters replaced by look-alikes."""
    return esc(" ".join(plain(value).split())).translate(_INERT)


BLOCK_LIMIT = 2500


def block_data(value: object, source: str, limit: int = BLOCK_LIMIT) -> str:
    """Several lines Stratus did not write (a model's answer) as quoted data: a code block,
    where Slack reads no formatting, mentions or links; escaped, control and format characters
    made visible, backticks replaced (it cannot close the block), labelled with its source."""
    lines = [" ".join(plain(line).split()) for line in str(value).splitlines()]
    body = "\n".join(line for line in lines if line) or "—"
    if len(body) > limit:
        body = body[: limit - 1] + "…"
    shown = esc(body).replace("`", LOOKALIKE_BACKTICK)
    return f"```{shown}```\n_({SOURCES.get(source, esc(source))})_"


def planner_source(planner: str) -> str:
    return "model" if planner == "llm" else "offline"


def who(actor: str | None) -> str:
    """A Slack mention for a Slack user, a readable name for anyone else."""
    if not actor:
        return "someone"
    if _SLACK_ID.fullmatch(actor):
        return f"<@{actor}>"
    if actor.startswith("agent:"):
        return "Stratus"
    if actor.startswith("cli:"):
        return f"`{actor.removeprefix('cli:')}` (terminal)"
    if actor.startswith("stratus"):
        return "Stratus"
    if actor.startswith("alert:"):
        return f":rotating_light: alert `{esc(actor.removeprefix('alert:'))}`"
    return f"`{actor}`"


def approvers(names: list[str]) -> str:
    if not names or "*" in names:
        return "anyone"
    return ", ".join(
        f"<!subteam^{n}>" if n.startswith("S") and n[1:].isalnum() else who(n) for n in names
    )


def duration(delta: timedelta | float | None) -> str:
    if delta is None:
        return "—"
    seconds = int(delta.total_seconds() if isinstance(delta, timedelta) else delta)
    if seconds < 60:
        return f"{seconds}s"
    minutes, seconds = divmod(seconds, 60)
    if minutes < 60:
        return f"{minutes}m {seconds:02d}s"
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h {minutes:02d}m"


def clock(moment: datetime | None) -> str:
    return f"{moment:%H:%M:%S} UTC" if moment else "—"


def phase(state: str) -> str:
    return PHASES.get(state, state.replace("_", " "))


PHASES = {
    "detecting": ":mag: detecting",
    "diagnosing": ":stethoscope: diagnosing",
    "planning": ":thinking_face: planning",
    "awaiting_approval": ":raised_hand: waiting for approval",
    "executing": ":gear: executing",
    "verifying": ":hourglass_flowing_sand: verifying",
    "undoing": ":leftwards_arrow_with_hook: undoing",
    "resolved": ":white_check_mark: resolved",
    "escalated": ":rotating_light: escalated to humans",
    "cancelled": ":no_entry_sign: cancelled",
}

# ---------------------------------------------------------------------- commands

HELP = """*Stratus* — incident help for Kubernetes, with a human in the loop.
• `/stratus investigate <namespace> [question]` — open an incident thread and look for the fault
• `/stratus status` — open incidents and pending approvals
• `/stratus undo [id|last]` — propose undoing a write (the policy decides who approves)
• `/stratus summary` — in an incident thread: the thread summary so far
• `/stratus policy [namespace]` — effective rules and active grants (with revoke)
• `/stratus cancel [incident]` — stop an incident (in its thread or by id); undoes half-done work
• `/stratus pause` / `/stratus resume` — the kill switch: nothing runs without a human (admins)
• `/stratus help` — this message
In an incident thread, mention me with a question ("why geo?", "what else could it be?")."""


def unknown_command(word: str) -> str:
    return f"I don't know `{esc(word)}`. Here is what I can do:\n{HELP}"


USAGE = {
    "investigate": "Usage: `/stratus investigate <namespace> [question]`, e.g. "
    "`/stratus investigate shop why is checkout failing?`",
    "undo": "Usage: `/stratus undo` or `/stratus undo last` (the most recent write), or "
    "`/stratus undo <undo-id>` (see `stratus undo --list`)",
    "policy": "Usage: `/stratus policy [namespace]`",
    "cancel": "Usage: `/stratus cancel` in an incident thread, or `/stratus cancel <incident-id>`",
    "summary": "Usage: `/stratus summary` in an incident thread, or `/stratus summary "
    "<incident-id>`",
    "pause": "Usage: `/stratus pause [reason]`",
    "resume": "Usage: `/stratus resume [reason]`",
    "status": "Usage: `/stratus status`",
    "help": "Usage: `/stratus help`",
}


def bad_namespace(name: str) -> str:
    return (
        f"`{esc(name)}` is not a Kubernetes namespace name (lower-case letters, digits and `-`, at "
        "most 63 characters)."
    )


def investigating(namespace: str) -> str:
    return (
        f"Looking into `{namespace}`… I'll post the incident thread in this channel, or tell "
        "you why not."
    )


def joined(incident_id: str, namespace: str) -> str:
    return f"`{namespace}` already has an open incident ({incident_id}); I added you to it."


def failed(what: str, why: str) -> str:
    return f":warning: {esc(what)}: {esc(why)}"


NO_INCIDENT_HERE = (
    "I can't tell which incident you mean: use this in an incident thread, or name it (`inc-…`)."
)
NO_OPEN_INCIDENT_HERE = "No incident is open in this channel; nothing to cancel."


def no_such_incident(word: str) -> str:
    return f"There is no incident `{esc(word[:40])}`; nothing changed."


def which_incident(ids: list[str]) -> str:
    named = ", ".join(f"`{i}`" for i in ids)
    return f"Several incidents are open here ({named}): name the one you mean; nothing changed."


SUMMARY_POSTED = "Summary posted in the thread."
PAUSE_REFUSED = "Only Stratus admins (the policy's default approvers) may pause or resume Stratus."


def paused(actor: str, reason: str) -> str:
    why = f" ({quoted(reason, 'person', 200)})" if reason else ""
    return (
        f":octagonal_sign: Stratus is *paused* by {who(actor)}{why}. Nothing executes without a "
        "human until `/stratus resume`; auto-allowed work waits for an approval."
    )


def resumed(actor: str) -> str:
    return f":arrow_forward: Stratus *resumed* by {who(actor)}. Policies apply as written again."


def switch_flipped(paused: bool) -> str:
    """The acknowledgement of ``/stratus pause|resume`` (the announcement follows)."""
    return "Stratus is now *paused*." if paused else "Stratus is now *running* (resumed)."


def not_announced(channel: str, error: str) -> str:
    return (
        f":warning: I could not announce this in {esc(channel)} (`{esc(error)}`); invite me "
        "there, or tell the channel yourself."
        if error in ("not_in_channel", "channel_not_found", "is_archived")
        else f":warning: I could not announce this in {esc(channel)} (`{esc(error)}`); tell the "
        "channel yourself."
    )


ALREADY_PAUSED = "Stratus is already paused."
ALREADY_RUNNING = "Stratus is not paused."
STATUS_TITLE = "*Stratus status*"
STATUS_PAUSED = ":octagonal_sign: paused"
STATUS_RUNNING = ":large_green_circle: running"
NO_OPEN_INCIDENTS = "No open incidents."
NO_PENDING = "No approvals pending."


def status_incident(incident_id: str, namespace: str, state: str, elapsed: str) -> str:
    return f"• `{incident_id}` `{namespace}` — {phase(state)} ({elapsed})"


def status_pending(proposal_id: str, intent: str, approvals: int, needed: int) -> str:
    return f"• `{proposal_id}` {data(intent)} — {approvals} of {needed} approvals"


def undo_proposed(proposal_id: str, state: str) -> str:
    return f"Undo proposed as `{proposal_id}` ({state.replace('_', ' ')})."


NOTHING_TO_UNDO = "Nothing to undo: Stratus has made no reversible write."

# ---------------------------------------------------------------------- policy view


def policy_title(namespace: str) -> str:
    return f"*Policy in force{' for `' + namespace + '`' if namespace else ''}*"


def policy_defaults(approver_names: list[str], quorum: int, own: bool, timeout: str) -> str:
    return (
        f"Defaults (a floor no rule loosens): approvers {approvers(approver_names)}, "
        f"{quorum} approval(s), "
        f"{'requester may approve' if own else 'not the requester'}, requests expire after "
        f"{timeout}."
    )


def policy_change_rejected(problems: str) -> str:
    return (
        ":warning: The latest change to the policy files was rejected; the rules above (the "
        f"last good policy) stay in force: {esc(problems)}"
    )


def policy_rule(name: str, decision: str, scope: str, extra: str) -> str:
    return f"• `{name}` — *{decision}* {scope}{(' — ' + extra) if extra else ''}"


NO_RULES = "No rules: every write is asked with the defaults."
GRANTS_TITLE = "*Live grants (Always allow), and whether each counts under today's rules*"
NO_GRANTS = "No active grants."


GRANT_STANDING = {
    "counts": ":large_green_circle: counts",
    "suspended": ":double_vertical_bar: suspended",
    "tampered": ":rotating_light: TAMPERED",
}


def grant_line(
    grant_id: str,
    action: str,
    namespace: str,
    resource: str,
    by: str,
    until: datetime,
    *,
    standing: str = "counts",
    why: str = "",
) -> str:
    """A live grant and whether it counts under today's rules (``suspended``: why not;
    ``tampered``: edited outside Stratus, allows nothing)."""
    state = GRANT_STANDING.get(standing, esc(standing))
    if standing == "suspended":
        state += f" — does not count under today's rules: {data(why, 300)}"
    elif standing == "tampered":
        state += f" — allows nothing: {data(why, 300)}"
    return (
        f"`{grant_id}`: {action} on {data(resource, 200)} in `{namespace}` — by {who(by)}, until "
        f"{until:%Y-%m-%d %H:%M} UTC · {state}"
    )


REVOKE = "Revoke"


def revoke_confirm(grant_id: str) -> str:
    return f"Revoke {grant_id}? The next such change will be asked again."


def revoked(grant_id: str) -> str:
    return f"Grant `{grant_id}` revoked; such changes are asked again."


REVOKE_REFUSED = "Only the grant's creator or a Stratus admin may revoke it."

# ---------------------------------------------------------------------- incident thread


def incident_title(namespace: str) -> str:
    return f"Incident in {namespace}"


def incident_fields(state: str, requester: str, elapsed: str, health: str) -> list[str]:
    return [
        f"*Phase*\n{phase(state)}",
        f"*Started by*\n{who(requester)}",
        f"*Elapsed*\n{elapsed}",
        f"*Health score*\n{health}",
    ]


def health(total: object, healthy: object, start: object = None) -> str:
    if total is None:
        return "not measured yet"
    now = f"{total}{' (healthy)' if healthy else ''}"
    return now if start is None or start == total else f"{start} → {now}"


def incident_context(incident_id: str, question: str, planner: str) -> str:
    asked = f" · asked: {data(question, 200)}" if question else ""
    return f"`{incident_id}` · planner: {planner}{asked} · reply in the thread to ask me"


def diagnosis_line(summary: str, source: str = "offline") -> str:
    return f"*Diagnosis:* {quoted(summary, source)}"


def incident_fallback(namespace: str, state: str) -> str:
    return f"Incident in {inert(namespace)}: {phase(state)}"


def findings(count: int, lines: list[str]) -> str:
    head = f":mag: *{count} finding(s)*" if count else ":mag: *No findings*"
    return head + ("\n" + "\n".join(f"• {data(line, 300)}" for line in lines) if lines else "")


def diagnosis(resource: str, category: str, summary: str, source: str = "offline") -> str:
    return (
        f":stethoscope: *Diagnosis* — {data(resource, 200)} ({esc(plain(category))})\n"
        f"{quoted(summary, source)}"
    )


def evidence(source: str, ref: str, quote: str) -> str:
    return f"• {esc(plain(source))} {data(ref, 200)}: {quoted(quote, 'cluster', 300)}"


def history(lines: list[str]) -> str:
    return "*Seen before:*\n" + "\n".join(f"• {quoted(line, 'memory', 300)}" for line in lines)


def attempt_started(number: int, intent: str, source: str = "offline") -> str:
    return f":hammer_and_wrench: *Attempt {number}:* {quoted(intent, source)}"


VERDICTS = {
    "healthy": ":white_check_mark: healthy",
    "better": ":chart_with_downwards_trend: better, not healthy yet",
    "same": ":heavy_minus_sign: no better",
    "worse": ":x: worse",
}


def verified(number: int, verdict: str, before: object, after: object) -> str:
    return (
        f":stethoscope: *Attempt {number} verified:* {VERDICTS.get(verdict, verdict)} "
        f"(health score {before} → {after})"
    )


def state_note(message: str) -> str:
    return data(message)


def undone_notice(intent: str, by: str, undo_id: str) -> str:
    return f":leftwards_arrow_with_hook: *Undone:* {data(intent)} — by {who(by)} (`{undo_id}`)"


def superseded_notice(old: str, new: str | None, why: str) -> str:
    then = f"; `{new}` replaces it" if new else ""
    return f":recycle: `{old}` was not executed: {data(why)}{then}"


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


def card_fields(target: str, risk: str, reversible: bool, state: str) -> list[str]:
    return [
        f"*Target*\n`{target}`",
        f"*Risk*\n{RISK.get(risk, risk)}",
        f"*Undo*\n{'exact undo available' if reversible else ':warning: cannot be undone'}",
        f"*State*\n{CARD_STATE.get(state, state)}",
    ]


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
        lines.append("Error lines: " + "; ".join(f"`{esc(e)}`" for e in errors))
    if events:
        lines.append("Recent events: " + "; ".join(esc(e) for e in events))
    return "\n".join(lines)


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
    return f"*Metrics* (Prometheus, last {window}; {', '.join(esc(s) for s in services)})"


def metric_now(label: str, now: str, earlier: str, peak: str) -> str:
    """A figure before the proposal ran: now, at the start of the window, and its peak."""
    return f"{label} *{now}* ({earlier} at the start · peak {peak})"


def metric_before_after(label: str, before: str, now: str) -> str:
    """A figure once the proposal ran: at the moment it ran → now."""
    return f"{label} {before} → *{now}*"


def callers(lines: list[str]) -> str:
    return "Callers' errors: " + "; ".join(lines)


def caller_figure(caller: str, figure: str) -> str:
    return f"{esc(caller)} {figure}"


BEFORE_AFTER = "_before → after the change_"


def before_after(read_after: float | None) -> str:
    """The before → after heading, saying how long after the change the "after" was read (read
    too soon, rates still mostly show the time before it)."""
    if read_after is None:
        return BEFORE_AFTER
    return f"_before → after the change (after: read {duration(max(read_after, 0))} after it)_"


def warning(text: str) -> str:
    return f":warning: {esc(text)}"


def approver_lists(lists: list[list[str]]) -> str:
    """A conjunction of approver lists: an approver is in every list at once."""
    restricting = [names for names in lists if "*" not in names]
    if len(restricting) <= 1:
        return approvers(restricting[0] if restricting else [])
    return "someone who is " + " *and also* ".join(
        approvers(names) if len(names) == 1 else "one of " + approvers(names)
        for names in restricting
    )


def why_asked(reason: str, approver_names: list[list[str]], got: list[str], needed: int) -> str:
    lines = [f"*Why I ask:* {esc(plain(reason))}", f"Approvers: {approver_lists(approver_names)}"]
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


def high_risk_confirm(intent: str, target: str) -> str:
    return f"This is a *high-risk* change: {data(intent, 150)} on {data(target, 80)}. Run it?"


CONFIRM_TITLE = "High-risk change"
CONFIRM_YES = "Approve"
CONFIRM_NO = "Not now"
UNDO_CONFIRM_TITLE = "Undo this change?"


def undo_confirm(intent: str) -> str:
    return f"Put back what was there before: {data(intent, 200)}"


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


STALE = {
    "executed": "this change was already executed",
    "executing": "this change is being executed right now",
    "undone": "this change was already undone",
    "approved": "this change is already approved and about to run",
    "superseded": "this change was not executed: it was superseded by a newer proposal",
    "expired": "this request expired; ask for it again",
    "rejected": "this change was rejected",
    "denied": "policy denies this change",
    "cancelled": "this change was already cancelled",
    "failed": "this change failed and will not be retried from here",
}


def stale(state: str, reason: str = "") -> str:
    why = STALE.get(state, f"this change is {state.replace('_', ' ')}")
    return (
        f":hourglass: Nothing changed: {why}" + (f" ({data(reason, 300)})" if reason else "") + "."
    )


NOT_UNDOABLE = ":hourglass: Nothing changed: this change has no undo (it is not executed, "
NOT_UNDOABLE += "already undone, or cannot be undone)."
OPTION_GONE = ":hourglass: Nothing changed: that option is no longer on the table."


def not_approver(reason: str) -> str:
    return f":no_entry: You can't answer this request: {esc(reason)}"


def not_rejecter(reason: str) -> str:
    return f":no_entry: You can't reject this request: {esc(reason)}"


def undo_refused(why: str) -> str:
    return f":no_entry: Nothing changed: {esc(why)}."


def cancel_refused(why: str) -> str:
    return f":no_entry: Nothing changed: {esc(why)}."


def vote_counted(got: int, needed: int) -> str:
    return f"Your approval counts: {got} of {needed}. Waiting for another approver."


def choosing(intent: str) -> str:
    return f"Rejected in favour of another option: {intent}"


def chose_other(user: str, intent: str) -> str:
    return f"{who(user)} chose another option: {data(intent)}"


NOT_ITS_CARD = (
    ":no_entry: Nothing changed: that click does not come from the proposal's card; answer it "
    "on its card in the incident thread."
)
UNKNOWN_ACTION = "That button is not one I know any more; nothing changed."

# ---------------------------------------------------------------------- questions

QUESTION_NO_DIAGNOSIS = "I have no diagnosis yet for this incident; I'll post it here."


def answer_why(resource: str, summary: str, evidence_lines: list[str]) -> str:
    lines = [f"I suspect {data(resource, 200)} because: {data(summary)}"]
    lines += evidence_lines
    return "\n".join(lines)


def answer_alternatives(lines: list[str]) -> str:
    if not lines:
        return "The planner has no other option left for this incident."
    return "Other options the planner considered:\n" + "\n".join(
        f"• {data(line)}" for line in lines
    )


def answer_state(state: str, message: str) -> str:
    return f"The incident is {phase(state)}. Latest: {data(message)}"


ANSWER_DATA_NOTE = "_(answered from the diagnosis and the incident's events)_"
ANSWER_MODEL_NOTE = (
    "_(answered by the model from the diagnosis and the incident's events; it can read, not act)_"
)


def model_answer(said: str) -> str:
    """A model's answer to a question in the thread: its words, quoted and labelled."""
    return block_data(said, "model") + "\n" + ANSWER_MODEL_NOTE


def model_fallback(why: str) -> str:
    return f"_(answered from the diagnosis and the incident's events: {esc(why)})_"


# ---------------------------------------------------------------------- summary

SUMMARY_TITLE = "Incident summary"


def summary_head(namespace: str, state: str, reason: str) -> str:
    return f"*{esc(namespace)}* — {phase(state)}" + (f" ({data(reason)})" if reason else "")


def root_cause(text: str | None, source: str = "offline") -> str:
    return f"*Root cause:* {quoted(text, source) if text else 'not found'}"


def summary_times(detect: str, mitigate: str, health_before: object, health_after: object) -> str:
    return (
        f"*Time to detect:* {detect} · *time to mitigate:* {mitigate} · "
        f"*health score:* {health_before} → {health_after}"
    )


TIMELINE = "*Timeline*"
ACTIONS = "*Actions*"
NO_ACTIONS = "No write was made."
UNDOS = "*Undos*"


def action_line(intent: str, approved: str, outcome: str, verdict: str) -> str:
    extra = f", verified {verdict}" if verdict else ""
    return f"• {data(intent)} — {approved}; {outcome}{extra}"


def timeline_line(at: str, text: str) -> str:
    return f"`{at}` {data(text)}"


# ---------------------------------------------------------------------- App Home

HOME_TITLE = "Stratus"
HOME_PENDING = "*Waiting for your approval*"
HOME_NONE_PENDING = "Nothing is waiting for you."
HOME_GRANTS = "*Grants you created*"
HOME_NO_GRANTS = "You have no active grants."


def home_pending(proposal_id: str, intent: str, link: str | None) -> str:
    where = f" — <{link}|open the card>" if link else ""
    return f"• `{proposal_id}` {data(intent)}{where}"


# ---------------------------------------------------------------------- parked incidents

HOME_PARKED = "*Incidents waiting for their thread*"
RETRY = "Retry"
RETRY_GONE = "That incident is no longer waiting for its thread; nothing changed."
RETRY_REFUSED = "Only the person who asked for this investigation (or an admin) may retry it."


def parked_reason(channel: str, error: str) -> str:
    """Why an incident is parked, as stored with it (the CLI shows it too): plain words."""
    return f"its Slack thread could not be posted in channel {channel}: {error}"


# What to do about a thread Slack refused, by its error: the remedy must fit the error.
PARK_REMEDY = {
    "not_in_channel": "invite me to this channel, then",
    "channel_not_found": "check that the channel exists and invite me to it, then",
    "is_archived": "unarchive the channel (or ask from another one), then",
    "ratelimited": "Slack is limiting how fast I may post; wait a minute, then",
}
PARK_REMEDY_DEFAULT = "when Slack answers again,"


def parked_notice(incident_id: str, namespace: str, error: str, minutes: int) -> str:
    remedy = PARK_REMEDY.get(error, PARK_REMEDY_DEFAULT)
    return (
        f":warning: I could not post the incident thread for `{esc(namespace)}` here "
        f"(`{esc(error)}`). Incident `{incident_id}` is parked and nothing runs: {remedy} "
        f"press *{RETRY}* in my App Home or type `/stratus investigate {esc(namespace)}` again. "
        f"After {minutes} min it ends and frees `{esc(namespace)}`."
    )


def home_parked(incident_id: str, namespace: str, reason: str, minutes_left: int) -> str:
    return (
        f"• `{incident_id}` on `{esc(namespace)}` — {esc(reason)} "
        f"(ends in {minutes_left} min unless a retry posts it)"
    )


# ---------------------------------------------------------------------- alerts (Alertmanager)


def alerts_fired(count: int, joined: bool) -> str:
    head = f":rotating_light: *{count} alert{'s' if count != 1 else ''} firing*"
    return head + (" — the alert group joined this open incident" if joined else "")


def alert_line(name: str, severity: str, where: str, summary: str) -> str:
    """One alert; its summary is quoted as data from the alert (escaped: it cannot mention
    anyone or disguise a link)."""
    tag = f" ({data(severity, 40)})" if severity else ""
    place = f" — {data(where, 300)}" if where else ""
    said = f"\n>{quoted(summary, 'alert', 300)}" if summary else ""
    return f"• {data(name, 100)}{tag}{place}{said}"


def alerts_more(count: int) -> str:
    return f"… and {count} more"


def alert_cleared_line(name: str, where: str) -> str:
    place = f" — {data(where, 300)}" if where else ""
    return f":white_check_mark: *Alert cleared:* {data(name, 100)}{place}"


def alerts_all_clear(state: str) -> str:
    ended = state in ("resolved", "escalated", "cancelled")
    return "_No alert of this incident is firing any more" + (
        " — after the incident ended._" if ended else "._"
    )


def alerts_still_firing(names: list[str]) -> str:
    return "Still firing: " + ", ".join(data(n, 100) for n in names) if names else ""


def alerts_outcome(fired: list[str], cleared: bool, at: str) -> str:
    shown = ", ".join(data(n, 100) for n in fired[:8]) + (" …" if len(fired) > 8 else "")
    if cleared:
        return f"*Alerts:* {shown} fired; :white_check_mark: all cleared (at {at[11:19]} UTC)"
    return f"*Alerts:* {shown} fired; :rotating_light: not all cleared yet"


# The webhook's answers to Alertmanager (HTTP bodies, read by whoever configures it).
ALERTS_OFF = (
    "the Alertmanager endpoint is off: set STRATUS_ALERTS_TOKEN (and STRATUS_ALERT_CHANNEL) "
    "and restart stratus serve"
)
ALERTS_UNAUTHORIZED = "missing or wrong bearer token; nothing was opened"
ALERTS_TOO_LARGE = "the body is larger than 1 MiB; nothing was opened"


def alerts_malformed(problem: str) -> str:
    return f"not an Alertmanager webhook body (version 4): {problem}; nothing was opened"


def alerts_unavailable(why: str) -> str:
    return f"the notification could not be stored ({why}); send it again"


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
