"""Every word the bot says in Slack, in one package (as bolt-python keeps its messages).

Other modules pass fields in and get sentences back; none of them holds user-facing text.
This module holds what every part says: people, times, and how text from outside (the
cluster, a model, a person) is quoted so that it cannot format itself. The rest is by where it
is said: ``card_words`` (a proposal's card), ``thread_words`` (an incident's thread),
``command_words`` (slash commands, the policy view, App Home), ``undo_words`` (forcing an
undo) and ``error_words`` (what went wrong and what to do next).
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
    "agent": "an outside agent's words, untrusted",
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


VERDICTS = {
    "healthy": ":white_check_mark: healthy",
    "better": ":chart_with_downwards_trend: better, not healthy yet",
    "same": ":heavy_minus_sign: no better",
    "worse": ":x: worse",
}
