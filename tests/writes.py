"""Writes in tests take the one real path: the proposal service (propose → execute, undo as a
proposal of its own) under a policy that allows every action, irreversible ones included, so
no human is asked — as an allow rule lets the incident agent act. There is no second path that
writes without a proposal."""

from __future__ import annotations

from policies.evaluate import CompiledPolicy
from policies.loader import Policy, SourcedRule
from policies.model import Rule
from proposals.model import Proposal
from proposals.service import ProposalService, UndoRequest
from tools import actions
from tools.executor import Executor

ALLOW_ALL = CompiledPolicy.build(
    Policy(
        (
            SourcedRule(
                Rule(name="allow-everything", decision="allow", allow_irreversible=True),
                "tests/writes.py",
            ),
        )
    )
)


class Writes:
    def __init__(self, executor: Executor) -> None:
        self.service = ProposalService(
            store=executor.store, executor=executor, policy=lambda: ALLOW_ALL
        )

    def propose(
        self, action: actions.Action, *, actor: str, incident_id: str | None = None
    ) -> Proposal:
        ref = action.ref()
        return self.service.propose(
            action=action.name,
            kind=ref.kind,
            name=ref.name,
            namespace=ref.namespace,
            params=action.model_dump(mode="json", exclude={"kind", "target", "namespace"}),
            requester=actor,
            incident_id=incident_id,
        )

    def write(
        self, action: actions.Action, *, actor: str, incident_id: str | None = None
    ) -> Proposal:
        """Propose and execute; the executed proposal (``execution_id``, ``undo_id``)."""
        proposal = self.propose(action, actor=actor, incident_id=incident_id)
        return self.service.execute(proposal.id, actor=actor)

    def propose_undo(self, entry_id: str, *, actor: str, force: bool = False) -> Proposal:
        return self.service.propose_undo(
            UndoRequest(entry_id=entry_id, force=force), requester=actor
        )

    def undo(self, entry_id: str, *, actor: str, force: bool = False) -> Proposal:
        proposal = self.propose_undo(entry_id, actor=actor, force=force)
        return self.service.execute(proposal.id, actor=actor)
