"""Seals on stored proposals: what stops someone who can write the database from approving.

A proposal is stored whole, so whoever can write the file could set its state to approved,
add or remove a vote, or lower the quorum in its decision. Keyed digests (``store.integrity``:
an HMAC under ``STRATUS_AUDIT_KEY``) stop that:

- each vote's ``mac`` binds the answer to this proposal's id and to the plan digest it
  approved: a vote copied from another proposal, or replayed from an older plan, is refused;
- the decision's ``mac`` binds whatever the policy decided (every field ``PolicyDecision``
  serializes, without naming them) to the proposal id and plan digest;
- the proposal's ``seal`` covers the whole body (state, votes, decision, version …), and the
  audit row of the save that wrote it records the seal as well: a genuine older body put back
  (say, approved and not yet executed) no longer matches the newest audit row.

Without a key the digests are plain SHA-256: they catch careless edits, not someone who reads
this module and recomputes them (docs/proposals.md says what protection remains).
"""

from __future__ import annotations

from proposals.model import Decision, Proposal, Vote
from store import integrity
from store.audit import ProvenRecord


def vote_mac(proposal_id: str, vote: Vote) -> str:
    return integrity.digest(
        {
            "record": "vote",
            "proposal": proposal_id,
            "vote": vote.model_dump(mode="json", exclude={"mac"}),
        }
    )


def decision_mac(proposal_id: str, plan_digest: str, decision: Decision) -> str:
    return integrity.digest(
        {
            "record": "decision",
            "proposal": proposal_id,
            "plan": plan_digest,
            "decision": decision.model_dump(mode="json", exclude={"mac"}),
        }
    )


# Fields a proposal gained after proposals were first sealed: sealed only when set, so the
# seal of a proposal stored before a field existed still matches once the field reads as its
# default (an upgrade must not make every stored proposal look tampered with).
ADDED_LATER = {"agent_intent": "", "client_token": ""}


def seal_of(proposal: Proposal) -> str:
    unset = {name for name, default in ADDED_LATER.items() if getattr(proposal, name) == default}
    return integrity.digest(
        {"record": "proposal", "body": proposal.model_dump(mode="json", exclude={"seal", *unset})}
    )


def signed_vote(proposal_id: str, vote: Vote) -> Vote:
    return vote.model_copy(update={"mac": vote_mac(proposal_id, vote)})


def signed_decision(proposal_id: str, plan_digest: str, decision: Decision) -> Decision:
    return decision.model_copy(update={"mac": decision_mac(proposal_id, plan_digest, decision)})


def sealed(proposal: Proposal) -> Proposal:
    return proposal.model_copy(update={"seal": seal_of(proposal)})


def problems(proposal: Proposal, *, audited: ProvenRecord | None) -> list[str]:
    """What was done to a stored proposal outside Stratus, one phrase each (none: intact).
    ``audited`` is the newest audit row that records a seal of this proposal."""
    if not proposal.seal:
        return ["it carries no seal (stored before seals, or written outside Stratus)"]
    key_missing = integrity.audit_key() is None and proposal.seal.startswith("hmac-")
    if key_missing:
        return [
            f"it was sealed with {integrity.KEY_ENV}, which is not set: its seal cannot be checked"
        ]
    if integrity.audit_key() is not None and proposal.seal.startswith("sha256:"):
        return [
            f"it was sealed without {integrity.KEY_ENV} (stored before the key was set, or "
            "forged by someone who does not hold it)"
        ]
    found: list[str] = []
    expected = decision_mac(proposal.id, proposal.plan.digest, proposal.decision)
    if not integrity.matches_digest(expected, proposal.decision.mac):
        found.append(
            "its decision (outcome, approvers, quorum …) is not the one the policy made for it"
        )
    for vote in proposal.votes:
        if not integrity.matches_digest(vote_mac(proposal.id, vote), vote.mac):
            found.append(
                f"the vote by {vote.user} was not cast on it (copied from another proposal, "
                "replayed from an older plan, or edited)"
            )
        elif vote.digest != proposal.plan.digest:
            found.append(f"the vote by {vote.user} approved another plan")
    if not integrity.matches_digest(seal_of(proposal), proposal.seal):
        found.append("its stored body no longer matches its seal (state, votes or decision)")
        return found
    if audited is None:
        found.append("no audit row records it (inserted outside Stratus)")
    elif not audited.proven:
        found.append("the audit row that records it was not written by Stratus")
    elif audited.record.payload.get("seal") != proposal.seal:
        found.append(
            f"it is an older version than the one audit row {audited.record.seq} recorded "
            "(put back from an earlier copy)"
        )
    return found
