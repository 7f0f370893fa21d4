"""The modals a card's buttons open: the whole diff, the error lines whole, and the reason
asked for a rejection (its callback id and length limit, checked again on submission).

Apart from ``bot.cards`` because a modal is its own Slack surface (``views.open``), opened by
the click listeners, never part of a message the follower draws.
"""

from __future__ import annotations

from typing import Any

from bot import blocks as b
from bot.text import card_words
from proposals.model import Proposal

REJECT_VIEW = "stratus.reject_reason"
REASON_MAX = 500  # the Reject modal's limit, enforced again when the submission arrives


def error_lines_view(proposal: Proposal, lines: list[str]) -> dict[str, Any]:
    """A modal with the target's error lines whole, as read when the button was clicked."""
    intro = b.section(card_words.error_lines_intro(str(proposal.target), len(lines)))
    body = [b.section(b.code(piece)) for piece in b.chunks("\n".join(lines), b.SECTION_TEXT - 10)]
    return {
        "type": "modal",
        "title": {"type": "plain_text", "text": b.cut(card_words.ERROR_LINES_TITLE, 24)},
        "close": {"type": "plain_text", "text": card_words.CLOSE},
        "blocks": b.render([intro, *body][: b.VIEW_BLOCKS], limit=b.VIEW_BLOCKS),
    }


def diff_view(proposal: Proposal) -> dict[str, Any]:
    """A modal with the whole diff, split into sections (a modal holds 100 blocks)."""
    pieces = b.chunks(proposal.plan.diff or "", b.SECTION_TEXT - 10)
    body = [b.section(b.code(piece)) for piece in pieces][: b.VIEW_BLOCKS]
    return {
        "type": "modal",
        "title": {"type": "plain_text", "text": b.cut(card_words.DIFF_MODAL_TITLE, 24)},
        "close": {"type": "plain_text", "text": card_words.CLOSE},
        "blocks": b.render(body, limit=b.VIEW_BLOCKS),
    }


def reject_view(proposal: Proposal, channel: str) -> dict[str, Any]:
    return {
        "type": "modal",
        "callback_id": REJECT_VIEW,
        "private_metadata": f"{proposal.id}|{channel}",
        "title": {"type": "plain_text", "text": b.cut(card_words.REJECT_TITLE, 24)},
        "submit": {"type": "plain_text", "text": card_words.REJECT_SUBMIT},
        "close": {"type": "plain_text", "text": card_words.CLOSE},
        "blocks": [
            {
                "type": "section",
                "text": {"type": "mrkdwn", "text": card_words.reject_intro(proposal.intent)},
            },
            {
                "type": "input",
                "block_id": "reason",
                "label": {"type": "plain_text", "text": card_words.REJECT_LABEL},
                "element": {
                    "type": "plain_text_input",
                    "action_id": "text",
                    "multiline": True,
                    "max_length": REASON_MAX,
                    "placeholder": {"type": "plain_text", "text": card_words.REJECT_PLACEHOLDER},
                },
            },
        ],
    }
