"""What approving a proposal does, in the words its card is headed with: a write's intent, or
for an undo its effect (``undo.effect``) — shared by the card, the summary's Undos lines,
``/stratus status`` and App Home, so that none of them says an undo's reversed intent
("Undo: Restore … to 'mock'") where it puts 'paypal-live' back."""

from __future__ import annotations

from bot.text import card_words
from proposals.model import Proposal
from undo.effect import effect_of


def title(proposal: Proposal) -> str:
    """What a card is headed with (and its notification says): the write's intent, or for an
    undo what undoing does (``undo_effect``)."""
    return undo_effect(proposal) if proposal.undo_entry is not None else proposal.intent


def undo_effect(proposal: Proposal) -> str:
    """What undoing does, in words (``undo.effect``): for an undo proposal, its own plan (the
    object now → as it will be written); for a write, its plan reversed (what its Undo button
    would put back)."""
    label = f"{proposal.target.kind.lower()}/{proposal.target.name}"
    plan = proposal.plan
    if proposal.undo_entry is not None:
        effect = effect_of(plan.before, plan.after, label=label)
    else:
        effect = effect_of(plan.after, plan.before, label=label)
    changes = [(c.path, c.back_to) for c in effect.changes]
    return card_words.undo_effect(effect.operation, label, changes, forced=proposal.force)
