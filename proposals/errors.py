"""Errors of the proposal service: fields, never surface words (``store.errors``).

Not found, stale and tampered are the store's concepts, shared with incidents and grants;
the classes here only say a proposal was concerned, so ``except StaleProposal`` catches
nothing an incident raised.
"""

from __future__ import annotations

from store.errors import NotFound, Remedy, Stale, StratusError, Tampered


class ProposalError(StratusError, code="proposal"):
    """Anything the proposal service refuses."""


class ProposalNotFound(NotFound, ProposalError):
    """No stored proposal has the id."""


class AnswerRefused(ProposalError, code="answer_refused", remedy=Remedy.ASK_APPROVER):
    """A vote that changes nothing: not an approver, the requester, expired, not waiting…"""


class NotExecutable(ProposalError, code="not_executable"):
    """The proposal is not in a state that can be executed (or undone, or cancelled)."""


class Denied(ProposalError, code="denied", remedy=Remedy.FIX_POLICY):
    """The policy denies the action."""


class NoChange(ProposalError, code="no_change"):
    """The object already looks like the action would make it: nothing to propose."""


class StaleProposal(Stale, ProposalError):
    """Someone else moved the proposal first (compare-and-set lost)."""


class ProposalTampered(Tampered, ProposalError):
    """A stored proposal was changed outside Stratus (its seal, a vote's or the decision's
    digest no longer matches, or the audit log recorded a later version): nothing acts on it."""


class TurnLost(ProposalError, code="turn_lost", remedy=Remedy.RETRY, retryable=True):
    """An MCP client's ask outlived its turn (``proposals.intake.turn``): its lease ran out
    and another ask may have taken it, so nothing was stored (it could be a second copy)."""
