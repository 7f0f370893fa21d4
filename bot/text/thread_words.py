"""An incident's thread: its header, findings, attempts and verification, the questions,
parked incidents, Look again, Alertmanager's alerts and the summary.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from bot.text import VERDICTS, block_data, clock, data, esc, inert, named, phase, plain, quoted, who

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


def judged(revealed: Sequence[str] = (), caused: Sequence[str] = ()) -> str:
    """Whose the new failures after an attempt were (issue 22): a fault it revealed behind
    its fixed target, or something it broke."""
    if revealed:
        return (
            " — it fixed its target and revealed a fault already there behind it "
            f"({data(', '.join(revealed))}); the fix is kept"
        )
    if caused:
        return f" — it broke something: new failures of {data(', '.join(caused))}"
    return ""


def verification_health(
    verdict: str, health_line: str, revealed: Sequence[str] = (), caused: Sequence[str] = ()
) -> str:
    return (
        f"*Verification:* {VERDICTS.get(verdict, verdict)} (health score {health_line})"
        + judged(revealed, caused)
    )


def verified_health(
    number: int,
    verdict: str,
    health_line: str,
    revealed: Sequence[str] = (),
    caused: Sequence[str] = (),
) -> str:
    return (
        f":stethoscope: *Attempt {number} verified:* {VERDICTS.get(verdict, verdict)} "
        f"(health score {health_line})" + judged(revealed, caused)
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


def action_line(
    intent: str,
    approved: str,
    outcome: str,
    verdict: str,
    revealed: Sequence[str] = (),
    caused: Sequence[str] = (),
) -> str:
    extra = f", verified {verdict}{judged(revealed, caused)}" if verdict else ""
    return f"• {data(intent)} — {approved}; {outcome}{extra}"


def timeline_line(at: str, text: str, handles: dict[str, str] | None = None) -> str:
    return f"`{at}` {data(named(text, handles))}"


def timeline_repeats(count: int, last: str) -> str:
    return f" ({count} times, the last at `{last}`)"


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
