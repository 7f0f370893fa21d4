"""Errors of the proposal service: fields, never surface words."""

from __future__ import annotations

from store.errors import Remedy, StratusError


class ProposalError(StratusError):
    code = "proposal"


class ProposalNotFound(ProposalError):
    code = "proposal_not_found"
    default_remedy = Remedy.FIX_INPUT


class AnswerRefused(ProposalError):
    """A vote that changes nothing: not an approver, the requester, expired, not waiting…"""

    code = "answer_refused"
    default_remedy = Remedy.ASK_APPROVER


class NotExecutable(ProposalError):
    """The proposal is not in a state that can be executed (or undone, or cancelled)."""

    code = "not_executable"


class Denied(ProposalError):
    code = "denied"
    default_remedy = Remedy.FIX_POLICY


class NoChange(ProposalError):
    """The object already looks like the action would make it: nothing to propose."""

    code = "no_change"


class StaleProposal(ProposalError):
    """Someone else moved the proposal first (compare-and-set lost)."""

    code = "stale"
    retryable = True


class ProposalTampered(ProposalError):
    """A stored proposal was changed outside Stratus (its seal, a vote's or the decision's
    digest no longer matches, or the audit log recorded a later version): nothing acts on it."""

    code = "tampered"
    default_remedy = Remedy.PROPOSE_AGAIN
