"""The handles of the Slack ids a policy names, as the bot last read them from Slack
(``bot.names``), kept in ``bot_state`` as ``handle:<id>`` rows (no migration) so that a
terminal opening the same database says "would ask @sre" too, not ``S0SRE``.

Only the bot writes them; a database no bot served has none, and an id without a row stays
as it is (ids do not change when someone renames a handle, so a stale row only names an old
handle).
"""

from __future__ import annotations

import re

from store.db import Store

PREFIX = "handle:"
_ID_WORD = re.compile(r"\b[SUW][A-Z0-9]{2,}\b")


def remember(store: Store, handles: dict[str, str]) -> None:
    with store.immediate() as db:
        for slack_id, handle in sorted(handles.items()):
            db.execute(
                "INSERT OR REPLACE INTO bot_state VALUES (?, ?)", [PREFIX + slack_id, handle]
            )


def known(store: Store) -> dict[str, str]:
    rows = store.query(
        "SELECT key, value FROM bot_state WHERE substr(key, 1, ?) = ?", [len(PREFIX), PREFIX]
    )
    return {str(r["key"])[len(PREFIX) :]: str(r["value"]) for r in rows if r["value"]}


def named(value: str, handles: dict[str, str]) -> str:
    """``value`` (a sentence of ours) with the ids whose handle is known as ``@handle``."""
    return _ID_WORD.sub(lambda m: f"@{handles[m[0]]}" if m[0] in handles else m[0], value)
