"""What the bot answers to a slash command: help, usage, status, the policy view, App Home and
the fleet.
"""

from __future__ import annotations

from datetime import datetime

from bot.text import approvers, data, esc, phase, quoted, who

# ---------------------------------------------------------------------- commands

HELP = """*Stratus* — incident help for Kubernetes, with a human in the loop.
• `/stratus investigate <namespace> [question]` — open an incident thread and look for the fault
• `/stratus status` — open incidents and pending approvals
• `/stratus undo [id|last]` — propose undoing a write (the policy decides who approves)
• `/stratus summary` — in an incident thread: the thread summary so far
• `/stratus postmortem [incident]` — a postmortem draft from the stored events, as a file
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
    "postmortem": "Usage: `/stratus postmortem` in an incident's channel, or `/stratus "
    "postmortem <incident-id>`",
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
POSTMORTEM_POSTED = "Drafting the postmortem: it will be a file in the incident's thread."
POSTMORTEM_TITLE = "Postmortem draft"


def postmortem_filename(incident_id: str) -> str:
    return f"postmortem-{incident_id}.md"


def postmortem_comment(incident_id: str) -> str:
    return (
        f"Postmortem draft of `{incident_id}`, from the stored events — every line names the "
        "events it comes from. Edit it before you share it."
    )


def postmortem_failed(why: str) -> str:
    return f":warning: The postmortem draft could not be uploaded ({esc(why)})."


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
