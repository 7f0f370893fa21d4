"""What a tool call returns: proposals and reads as JSON-able dicts, every text that came from
the cluster (a diff, a log line, an event) inside an untrusted-data fence, never loose."""

from __future__ import annotations

import re
from typing import Any

from agents.llm.telemetry import fence, tool_result
from gateway import text
from incidents.continuation import Verification
from proposals.model import Proposal, ProposalState

S = ProposalState
# What a client's wait ends on: a human (or the policy) decided, and a write has an outcome.
SETTLED = frozenset(
    {S.EXECUTED, S.UNDONE, S.DENIED, S.REJECTED, S.EXPIRED, S.SUPERSEDED, S.FAILED, S.CANCELLED}
)


# A secret's digest without STRATUS_AUDIT_KEY is a bare SHA-256 prefix: an agent could test
# guesses of a weak value against it offline (an outside tester matched `shop`). Agents get
# no unkeyed digest at all; a keyed one (``hmac:``) says nothing without the key.
_UNKEYED_DIGEST = re.compile(r"\bsha256:[0-9a-f]{8,64}\b")
HIDDEN_DIGEST = "sha256:(hidden; set STRATUS_AUDIT_KEY for keyed digests)"


def hide_unkeyed_digests(text: str) -> str:
    return _UNKEYED_DIGEST.sub(HIDDEN_DIGEST, text)


def untrusted(name: str, result: Any) -> str:
    """A read's answer: scrubbed, fenced as untrusted cluster data and bounded."""
    return hide_unkeyed_digests(tool_result(name, result))


def proposal(
    found: Proposal, *, repeated: bool = False, verification: Verification | None = None
) -> dict[str, Any]:
    decision = found.decision
    body: dict[str, Any] = {
        "id": found.id,
        "state": found.state.value,
        "action": found.action,
        "target": f"{found.target.kind}/{found.target.name}",
        "namespace": found.target.namespace,
        "params": found.params,
        "requester": found.requester,
        "risk": found.risk,
        "risk_reason": found.risk_reason,
        "reversible": found.reversible,
        "decision": {
            "outcome": decision.outcome,
            "reason": decision.reason,
            "rule": decision.rule,
            "min_approvals": decision.min_approvals,
        },
        # Who must approve: each inner list is one group of which someone must approve.
        "approvers": decision.approvers if decision.outcome == "ask" else [],
        "approvals": found.approvals(),
        "diff": hide_unkeyed_digests(
            fence("diff of the planned write", found.plan.diff.splitlines())
        ),
        "expires_at": found.expires_at.isoformat(),
        "settled": found.state in SETTLED,
    }
    if repeated:
        body["repeated"] = "the same change was already proposed: this is that proposal"
    if found.incident_id:
        body["incident"] = found.incident_id
    if found.undo_entry:
        body["undoes"] = found.undo_entry
    if found.undo_id:
        body["undo_id"] = found.undo_id
    if found.undone_by:
        body["undone_by"] = found.undone_by
    if found.reason:
        body["reason"] = fence("why it ended", [found.reason])
    if found.superseded_by:
        body["superseded_by"] = found.superseded_by
    if verification is not None and found.state in (S.EXECUTED, S.UNDONE):
        body["verification"] = {
            "incident": verification.incident_id,
            "attempt": verification.attempt,
            "verdict": verification.verdict,
            "score_before": verification.score_before,
            "score_after": verification.score_after,
            "undone_automatically": verification.undone,
            "undo_proposal": verification.undo_proposal,
            "undo_refused": verification.undo_refused,
            "revealed": list(verification.revealed),
            "done": verification.done,
            "summary": text.verdict(verification),
        }
    return body
