"""Every word the bot says in Slack, in one place (as bolt-python keeps its messages).

Other modules pass fields in and get sentences back; none of them holds user-facing text.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Callable
from datetime import datetime, timedelta

from store.errors import Remedy, StratusError

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
    if actor.startswith("mcp:"):
        return f"`{esc(actor.removeprefix('mcp:'))}` (MCP client)"
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
    "investigate": "Usage: `/stratus investigate <namespace> [--cluster <name>] [question]`, e.g. "
    "`/stratus investigate shop why is checkout failing?`",
    "undo": "Usage: `/stratus undo` or `/stratus undo last` (the most recent write), or "
    "`/stratus undo <undo-id>`; the *Undo* button on an executed card undoes that write",
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


def not_an_incident_id(word: str) -> str:
    return (
        f"{data(word, 40)} is not a valid incident id (one looks like `inc-0123456789`); "
        "nothing changed."
    )


def which_incident(ids: list[str]) -> str:
    named = ", ".join(f"`{i}`" for i in ids)
    return f"Several incidents are open here ({named}): name the one you mean; nothing changed."


SUMMARY_POSTED = "Summary posted in the thread."
# A request that reached a Stratus which no longer holds the leader lease (``bot.handover``).
HANDING_OVER = "Stratus is handing over to another instance; try again in a few seconds."
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


def asked_by(requester: str) -> str:
    """Who asked for a proposal, from its requester (never from whether it has a card):
    Stratus's own step, a Slack user, a terminal user, an alert."""
    if requester.startswith("cli:"):
        return f"asked from a terminal by `{esc(requester.removeprefix('cli:'))}`"
    if requester.startswith(("agent:", "stratus")):
        return "proposed by Stratus"
    if requester.startswith("mcp:"):
        return f"proposed by the MCP client `{esc(requester.removeprefix('mcp:'))}`"
    return f"asked by {who(requester)}"


def status_terminal_pending(proposal_id: str, intent: str, requester: str = "cli:") -> str:
    """A proposal with no card to click, answered from ``/stratus status``."""
    return f"`{proposal_id}` {data(intent)} — {asked_by(requester)}; answer it here:"


def answered_here(proposal_id: str, intent: str, state: str) -> str:
    """What came of an answer to a proposal that has no card (made at a terminal)."""
    return f"`{proposal_id}` {data(intent)}: {state.replace('_', ' ')}."


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


# What each part of the health score counts (``agents.health.WEIGHTS``): singular, plural.
HEALTH_PARTS = {
    "crash_looping_containers": ("crash-looping container", "crash-looping containers"),
    "services_without_endpoints": (
        "service without ready endpoints",
        "services without ready endpoints",
    ),
    "failing_requests": (
        "failing request logged by a caller",
        "failing requests logged by callers",
    ),
    "unavailable_replicas": ("unavailable replica", "unavailable replicas"),
    "unready_pods": ("unready pod", "unready pods"),
    "new_warning_events": ("new warning event", "new warning events"),
    "erroring_services": ("service failing requests", "services failing requests"),
    "slow_services": ("slow service", "slow services"),
}
HEALTH_SCALE = (
    "_Health score: 0 means nothing wrong; it adds up points for what is wrong "
    "(a crash loop or a service without endpoints 3, an unavailable replica or failing "
    "requests 2, an unready pod or a warning 1)_"
)
HEALTHY_ANYWAY = (
    "counts as healthy: warning events and request rates (which lag a fix by their window) "
    "do not make a namespace unhealthy"
)


def health_part(name: str, count: int, points: int) -> str:
    one, many = HEALTH_PARTS.get(name, (name.replace("_", " "), name.replace("_", " ")))
    return f"{count} {one if count == 1 else many} ({points} point{'' if points == 1 else 's'})"


def health_explained(
    total: object, healthy: object, start: object, parts: list[str], *, was: bool
) -> str:
    """A score with its parts: what is wrong now, or what was wrong when nothing is any more
    ("4 → 0 (healthy): was 2 unready pods (2 points), 1 unavailable replica (2 points)"), and
    why a score above 0 counts as healthy when it does."""
    line = health(total, healthy, start)
    if parts:
        moved = start is not None and start != total
        line += (": was " if was else (": now " if moved else ": ")) + ", ".join(parts)
    if healthy and total:
        line += f" — {HEALTHY_ANYWAY}"
    return line


def verification_health(verdict: str, health_line: str) -> str:
    return f"*Verification:* {VERDICTS.get(verdict, verdict)} (health score {health_line})"


def verified_health(number: int, verdict: str, health_line: str) -> str:
    return (
        f":stethoscope: *Attempt {number} verified:* {VERDICTS.get(verdict, verdict)} "
        f"(health score {health_line})"
    )


def incident_context(incident_id: str, question: str, planner: str) -> str:
    asked = f" · asked: {data(question, 200)}" if question else ""
    return f"`{incident_id}` · planner: {planner}{asked} · reply in the thread to ask me"


def diagnosis_line(summary: str, source: str = "offline") -> str:
    return f"*Diagnosis:* {quoted(summary, source)}"


def fix_undone_line(
    by: str, at: datetime, *, reopened: bool, why: str, namespace: str, state: str
) -> str:
    """A fix of the incident undone after it ended (``incidents.reopening``): by whom, when,
    and what became of the incident — re-opened (and what carries it on), or left closed and
    why."""
    head = f":leftwards_arrow_with_hook: *Fix undone* by {who(by)} at {clock(at)}; "
    if not reopened:
        return head + f"incident left closed because {esc(why)}"
    if state == "detecting":
        return head + (
            "*incident re-opened* — it waits here: the next alert for "
            f"`{esc(namespace)}`, or `/stratus investigate {esc(namespace)}`, carries it on "
            "in this thread"
        )
    return head + "*incident re-opened*"


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


def state_note(message: str, handles: dict[str, str] | None = None) -> str:
    """A note of the incident's ("U0DAVE asked to look again"), its ids as handles."""
    return data(named(message, handles))


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


def approver_lists(lists: list[list[str]]) -> str:
    """A conjunction of approver lists: an approver is in every list at once."""
    restricting = [names for names in lists if "*" not in names]
    if len(restricting) <= 1:
        return approvers(restricting[0] if restricting else [])
    return "someone who is " + " *and also* ".join(
        approvers(names) if len(names) == 1 else "one of " + approvers(names)
        for names in restricting
    )


_ID_WORD = re.compile(r"\b[SUW][A-Z0-9]{2,}\b")


def named(value: str, handles: dict[str, str] | None) -> str:
    """A sentence of ours that names Slack ids (a policy's reason), with the ids whose handle
    is known written as ``@handle``; an unknown id stays as it is."""
    if not handles:
        return value
    return _ID_WORD.sub(lambda m: f"@{handles[m[0]]}" if m[0] in handles else m[0], value)


def slack_ids(value: str) -> list[str]:
    """The Slack ids a sentence of ours names, to look their handles up (``bot.names``): an id
    holds a digit, which keeps words such as ``UTC`` out."""
    return sorted({m for m in _ID_WORD.findall(value) if any(c.isdigit() for c in m)})


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


# ---------------------------------------------------------------------- forcing an undo

FORCE = "Force undo"
FORCE_TITLE = "Overwrite a later change?"
FORCE_YES = "Force undo"
FORCE_DIALOG = 300  # what Slack's confirm dialog holds


def force_offer(conflict: str, diff_block: str) -> str:
    """An undo that met a later change, offered forced to someone who may undo it: what moved
    (the conflict's facts, escaped) and the diff of what Force would overwrite."""
    return (
        f":warning: *Undo stopped:* {esc(conflict)}.\n"
        f"What changed since Stratus wrote it:\n{diff_block}\n"
        f"*{FORCE}* proposes the undo anyway: it puts the object back as before Stratus "
        "changed it and overwrites that change; the policy still decides who approves it."
    )


def force_confirm(diff: str) -> str:
    """The Force dialog: the changed lines of the diff it would overwrite, escaped, then cut to
    Slack's 300 characters (never inside an escape) with the code block still closed."""
    changed = [
        line
        for line in diff.splitlines()
        if line[:1] in ("+", "-") and not line.startswith(("+++", "---"))
    ]
    head = "Overwrite this change, made since Stratus wrote it?\n```"
    body = esc("\n".join(changed) or "(no textual diff)").replace("`", LOOKALIKE_BACKTICK)
    room = FORCE_DIALOG - len(head) - len("```")
    if len(body) > room:
        body = body[: room - 1]
        if body.rfind("&") > body.rfind(";"):
            body = body[: body.rfind("&")]
        body += "…"
    return f"{head}{body}```"


FORCE_NOT_OFFERED = (
    ":no_entry: Nothing changed: Force is offered only in the message that showed you the "
    "conflict; ask again with `/stratus undo`."
)
FORCE_NOT_NEEDED = (
    ":hourglass: Nothing changed: the object no longer conflicts with Stratus's write; press "
    "*Undo* on its card (or `/stratus undo`) for a plain undo."
)
FORCE_STALE = (
    ":hourglass: Nothing changed: the object changed again since the diff you were shown; ask "
    "again with `/stratus undo` to see what Force would overwrite now."
)


def force_refused(why: str, handles: dict[str, str] | None = None) -> str:
    return f":no_entry: Nothing changed: {esc(named(why, handles))}."


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


# ---------------------------------------------------------------------- errors
# What to do next, in Slack's words, by the error's remedy (``store.errors``): the lower layers
# say only the facts; the CLI words the same remedies for a terminal (``cli.text``).

ErrorHint = Callable[[StratusError], str]

ERROR_REMEDY: dict[Remedy, ErrorHint] = {
    Remedy.FORCE: lambda e: (
        "it was left as it is: undoing over someone else's change needs an explicit force; "
        f"`/stratus undo` offers *{FORCE}* to whoever may undo it"
    ),
    Remedy.RETRY: lambda e: "try again in a moment",
    Remedy.FIX_POLICY: lambda e: "`/stratus policy` shows the rules in force",
    Remedy.ASK_APPROVER: lambda e: (
        f"an approver can answer `{esc(e.subject)}` on its card, in the App Home or in "
        "`/stratus status`"
        if e.subject
        else "an approver can answer it on its card"
    ),
    Remedy.PROPOSE_AGAIN: lambda e: "look at the new plan on its card and ask again",
    Remedy.RECONCILE: lambda e: (
        "recovery reads the object and records the outcome; look at the card again in a moment"
    ),
    Remedy.VERIFY_AUDIT: lambda e: "the audit check names what was changed",
    Remedy.CANCEL_OPEN: lambda e: (
        f"cancel proposal `{esc(e.details.get('open', '?'))}` first (on its card)"
    ),
    Remedy.REVOKE_GRANT: lambda e: (
        f"revoke grant `{esc(e.subject or '?')}` with its Revoke "
        "button (`/stratus policy` or the App Home); the audit check names what was changed"
    ),
}
# Where one remedy means different things by error.
ERROR_CODE: dict[str, ErrorHint] = {
    "policy": lambda e: "the policy files need fixing; the last good policy stays in force",
    # Raised to terminals only (a database the bot serves, told another policy); worded here
    # too so an error shows the same facts on every surface.
    "policy_mismatch": lambda e: "run under the bot's policy, or use another database",
    "served_policy_gone": lambda e: "restore the bot's policy files, or start the bot again",
    "incident_closed": lambda e: (
        f"press *{LOOK_AGAIN}* on the thread of {esc(e.subject or 'the incident')} for a fresh look"
        if e.details.get("reopenable")
        else f"`/stratus investigate {esc(str(e.details.get('namespace', '')))}` starts a new "
        f"one beside {esc(e.subject or 'it')}"
        if e.details.get("namespace")
        else f"the thread of {esc(e.subject or 'the incident')} tells how it ended"
    ),
    "incident_open_elsewhere": lambda e: (
        f"incident {esc(str(e.details.get('open', e.subject)))} is working on it; follow its thread"
    ),
    # Writes made as the approver (policies.impersonation).
    "cluster_refused": lambda e: (
        "ask for it again, to be approved by someone whose Kubernetes user may make this change"
    ),
    "not_mapped": lambda e: (
        "ask for it again, to be approved by someone the impersonation mapping names"
    ),
    # Said to the person whose click it was.
    "approver_not_mapped": lambda e: (
        "you have no Kubernetes identity in the impersonation mapping; someone mapped must approve"
    ),
    "impersonation": lambda e: (
        f"the impersonation mapping `{esc(e.subject or '?')}` needs fixing; Stratus does not "
        "start on it"
    ),
    "health_listen": lambda e: (
        "set STRATUS_HEALTH_PORT to a free port (0 picks one) or STRATUS_HEALTH_HOST to an "
        "address of this machine"
    ),
    "unknown_cluster": lambda e: known_clusters(e.details.get("known") or []),
}


def error_line(error: StratusError) -> str:
    """An error as the bot says it: its facts (escaped) and what to do next, in one line."""
    words = ERROR_CODE.get(error.code) or ERROR_REMEDY.get(error.remedy)
    return esc(error.message) + (f" — {words(error)}" if words else "")


def refused_error(error: StratusError, handles: dict[str, str] | None = None) -> str:
    """``handles``: the ids the error names as handles (a plan refusal names people and groups)."""
    return f":no_entry: Nothing changed: {named(error_line(error), handles)}"


def failed_error(what: str, error: StratusError) -> str:
    return f":warning: {esc(what)}: {error_line(error)}"


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


def not_approver(reason: str, handles: dict[str, str] | None = None) -> str:
    return f":no_entry: You can't answer this request: {esc(named(reason, handles))}"


def not_rejecter(reason: str, handles: dict[str, str] | None = None) -> str:
    return f":no_entry: You can't reject this request: {esc(named(reason, handles))}"


def undo_refused(why: str, handles: dict[str, str] | None = None) -> str:
    return f":no_entry: Nothing changed: {esc(named(why, handles))}."


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
ANSWER_UNDONE_NOTE = "_(answered from the incident's proposals and their states)_"


def answer_undone(
    *, undone: list[str], waiting: list[str], refused: list[str], kept: list[str]
) -> str:
    """ "Was anything undone?", answered with yes or no first, then what."""
    lines = [
        f"Yes: {len(undone)} change(s) of this incident were undone."
        if undone
        else "No: nothing of this incident was undone."
    ]
    lines += [f"• undone: {data(i, 200)}" for i in undone[:10]]
    lines += [f"• undo waiting for approval: {data(i, 200)}" for i in waiting[:10]]
    lines += [f"• undo not carried out: {data(i, 200)}" for i in refused[:10]]
    if kept:
        lines.append("Still in place:")
        lines += [f"• {data(i, 200)}" for i in kept[:10]]
    elif not undone:
        lines.append("Nothing was written either.")
    return "\n".join(lines)


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


def timeline_line(at: str, text: str, handles: dict[str, str] | None = None) -> str:
    return f"`{at}` {data(named(text, handles))}"


def timeline_repeats(count: int, last: str) -> str:
    return f" ({count} times, the last at `{last}`)"


# ---------------------------------------------------------------------- App Home

HOME_TITLE = "Stratus"
HOME_PENDING = "*Waiting for your approval*"
HOME_NONE_PENDING = "Nothing is waiting for you."
HOME_GRANTS = "*Grants you created*"
HOME_NO_GRANTS = "You have no active grants."


def home_pending(proposal_id: str, intent: str, link: str | None) -> str:
    where = f" — <{link}|open the card>" if link else ""
    return f"• `{proposal_id}` {data(intent)}{where}"


def home_terminal_pending(proposal_id: str, intent: str, requester: str = "cli:") -> str:
    """A proposal with no card to click: it is answered here."""
    return f"• `{proposal_id}` {data(intent)} — {asked_by(requester)}"


# ---------------------------------------------------------------------- parked incidents

# ---------------------------------------------------------------------- Look again (issue 18 §2)

LOOK_AGAIN = "Look again"
LOOK_AGAIN_GONE = "That incident is no longer escalated; nothing changed."
ESCALATION_REASONS = {
    "no diagnosis": "no analyzer could name a cause",
    "no candidates left": "nothing Stratus may do would fix what it found",
    "attempts exhausted": "its attempts did not resolve it",
    "undo refused": "an undo it needed was refused",
    # Issue 18 F1: TNR judged the attempt worse, but undoing its fix would re-break the cause.
    "fix of the cause kept": "its fix of the cause was kept although the look after it was "
    "not better (undoing it would put the cause back); judge it and Undo it from its card if "
    "it is wrong",
    "unreachable": "its thread could not be posted in time",
}


def escalated_why(reason: str) -> str:
    why = ESCALATION_REASONS.get(reason, esc(reason) or "it stopped")
    return (
        f"*Escalated:* {why}. The findings and evidence are in the thread. If the namespace "
        f"has changed since, or the fault was still unfolding, press *{LOOK_AGAIN}* for a "
        "fresh diagnosis in this thread."
    )


def thread_continued(incident_id: str) -> str:
    """The parent of a new thread for an incident whose earlier thread Slack no longer has."""
    return (
        f":link: Continues incident `{incident_id}`: its earlier thread is gone (deleted, or "
        "Slack no longer has it), so it carries on here."
    )


def cancelling(incident_id: str) -> str:
    """The reply to ``/stratus cancel``: the cancel itself is shown in the incident's thread."""
    return f"Cancelling incident `{incident_id}`; its thread will say when it is done."


def undo_asked(entry_id: str) -> str:
    """The reply to ``/stratus undo``: the undo's card follows, as the policy decides."""
    return f"Undoing `{entry_id}`: its card follows here."


def looking_again(incident_id: str, namespace: str) -> str:
    return (
        f"`{esc(namespace)}` had an escalated incident ({incident_id}); I am looking again "
        "in its thread."
    )


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


# ---------------------------------------------------------------------- a fleet (docs/fleet.md)


def cluster_line(cluster: str) -> str:
    """The line naming the cluster on a card, a thread's parent and a summary (a fleet only:
    a single unnamed cluster shows nothing)."""
    return f":globe_with_meridians: Cluster *{esc(cluster)}*"


def known_clusters(known: list[str]) -> str:
    """What to do about a cluster name the bot does not serve: the ones it does."""
    if not known:
        return "this Stratus serves one cluster: name none"
    names = ", ".join(f"`{esc(name)}`" for name in known)
    return f"name one of {names}, or none for the default"


def missing_cluster() -> str:
    return ":warning: `--cluster` needs a name, e.g. `--cluster prod-eu`\n" + USAGE["investigate"]


ALERT_CLUSTER_HINT = (
    "The clusters are the ones this bot was started with; an alert names its cluster with the "
    "`cluster` label (group alerts by it in Alertmanager)."
)


def alert_cluster_refused(reason: str, alertnames: list[str]) -> str:
    shown = ", ".join(esc(name) for name in alertnames[:5])
    more = f" and {len(alertnames) - 5} more" if len(alertnames) > 5 else ""
    return f":no_entry: No incident opened for {shown}{more}: {esc(reason)}"


def alert_cluster_refused_fallback() -> str:
    return "An alert names a cluster Stratus does not serve; no incident opened"


def in_cluster(cluster: str) -> str:
    """What follows an incident's line in ``/stratus status`` when Stratus serves a fleet."""
    return f" in cluster `{esc(cluster)}`"
