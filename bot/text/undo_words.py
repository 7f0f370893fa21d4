"""What an undo does and what forcing one over a later change means."""

from __future__ import annotations

from bot.text import LOOKALIKE_BACKTICK, esc, named

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
