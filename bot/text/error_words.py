"""What went wrong, in Slack's words, and what to do next."""

from __future__ import annotations

from collections.abc import Callable

from bot.text import data, esc, named, who
from bot.text.command_words import known_clusters
from bot.text.thread_words import LOOK_AGAIN
from bot.text.undo_words import FORCE
from store.errors import Remedy, StratusError

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
