"""What every listener of the app (slash commands, clicks) works with, wired once by
``bot.app``: the runtime, the Slack client, the card follower, the driver that carries work on,
and the gate that authorizes. One constructor instead of one per listener."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from slack_sdk.web.async_client import AsyncWebClient

from bot import blocks as b
from bot import cards
from bot.authz import Gate
from bot.driver import Driver
from bot.follower import Follower
from bot.runtime import Runtime
from bot.text import card_words, error_words
from bot.whisper import whisper
from proposals.model import Proposal
from undo.conflicts import UndoConflict


@dataclass(frozen=True)
class Parts:
    runtime: Runtime
    client: AsyncWebClient
    follower: Follower
    driver: Driver
    gate: Gate


class Listener:
    def __init__(self, parts: Parts) -> None:
        self.rt = parts.runtime
        self.client = parts.client
        self.follower = parts.follower
        self.driver = parts.driver
        self.gate = parts.gate

    async def offer_force(
        self,
        body: dict[str, Any],
        *,
        entry_id: str,
        original: Proposal | None,
        conflict: UndoConflict,
    ) -> None:
        """An undo that met a later change: to whoever may undo the write, a message only
        they see with the diff and a Force button (``cards.force_offer``); to anyone else, the
        refusal. The Undo button and ``/stratus undo`` both end here."""
        user = str((body.get("user") or {}).get("id", ""))
        if await self.gate.force_of(user, original):
            await whisper(self.client, body, error_words.failed_error(card_words.UNDO, conflict))
            return
        offer = b.render(cards.force_offer(entry_id, conflict))
        await whisper(
            self.client, body, error_words.failed_error(card_words.UNDO, conflict), blocks=offer
        )
