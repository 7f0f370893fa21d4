"""The proposal service: the one object every surface calls. A thin facade — each method is
one call to a use-case module that reads top to bottom:

| call | module |
|---|---|
| ``propose`` | ``proposals/propose.py`` |
| ``answer``, ``refusal`` | ``proposals/answer.py`` |
| ``execute`` | ``proposals/execute.py`` (the write path, undo proposals included) |
| ``propose_undo``, ``undo_target``, ``undo_conflict``, ``drop_undo_entry`` | ``undoing.py`` |
| ``cancel``, ``withdraw`` | ``proposals/cancel.py`` |
| ``expire``, ``reconcile``, ``settle_earlier_writes`` | ``proposals/recover.py`` |
| ``propose_for``, ``client_turn``, ``check_for`` | ``intake.py`` (an MCP client's asks) |
| ``take_turn``, ``give_back`` | ``intake.py`` (its turn, waited for by a surface) |
| ``propose_checked``, ``undo_for``, ``own`` | ``intake.py`` |
| ``get``, ``pending``, ``by_incident``, ``recent``, ``undo_entries`` | ``proposals/queries.py`` |

Three rules hold everywhere:
- **The approved plan is the executed plan.** Execution re-plans under the object's lock and
  re-evaluates the policy on the object as it is now; if the digest the humans approved moved,
  or the policy now asks for more, nothing is written and a new proposal is asked for.
- **One transaction per state change**: the proposal's new state, its event, its audit row
  and (for a write) the execution record and undo entry commit together.
- **Undo has one owner**: an undo is a proposal of its own (action ``undo``), decided by
  policy, approved and executed like any other write.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from policies.clients import Registry
from policies.impersonation import Impersonation
from proposals import answer, cancel, execute, intake, propose, queries, recover, undoing
from proposals.core import Deps, PolicySource, UndoRequest, labels_of, new_proposal_id
from proposals.execute import PlanMoved, Superseded
from proposals.model import Choice, Proposal
from store import logcontext
from store.db import Store
from store.locks import Lease
from tools.executor import Executor
from tools.objects import ObjectRef
from undo.conflicts import UndoConflict
from undo.entries import UndoEntry

__all__ = [
    "PlanMoved",
    "ProposalService",
    "Superseded",
    "UndoRequest",
    "labels_of",
    "new_proposal_id",
]


class ProposalService:
    """The use-cases every surface calls (see the module docstring)."""

    def __init__(
        self,
        *,
        store: Store,
        executor: Executor,
        policy: PolicySource,
        impersonation: Impersonation | None = None,
        executors: Mapping[str, Executor] | None = None,
        clients: Registry | None = None,
    ) -> None:
        # ``executors``: every cluster of a fleet by name (docs/fleet.md); ``executor`` is the
        # default one. Each use-case works on the cluster its proposal or undo entry names.
        self.deps = Deps.wire(
            store=store,
            executor=executor,
            policy=policy,
            impersonation=impersonation,
            executors=executors,
            clients=clients,
        )
        # What surfaces and tests read directly: the store, its clock, the event stream.
        self.store = store
        self.clock = store.clock
        self.executor = executor
        self.policy = policy
        self.impersonation = impersonation
        self.repo = self.deps.repo
        self.events = self.deps.events
        self.audit = self.deps.audit
        self.grants = self.deps.grants
        self.stack = self.deps.stack
        self.executions = self.deps.executions

    def propose(
        self,
        *,
        action: str,
        target: ObjectRef | None = None,
        kind: str | None = None,
        name: str = "",
        namespace: str = "",
        params: dict[str, Any] | None = None,
        requester: str,
        incident_id: str | None = None,
        dry_run: bool = False,
        supersedes: Proposal | None = None,
        fixes: str = "",
        cluster: str = "",
    ) -> Proposal:
        return propose.propose(
            self.deps,
            action=action,
            target=target,
            kind=kind,
            name=name,
            namespace=namespace,
            params=params,
            requester=requester,
            incident_id=incident_id,
            dry_run=dry_run,
            supersedes=supersedes,
            fixes=fixes,
            cluster=cluster,
        )

    def propose_for(
        self,
        ask: intake.Ask,
        *,
        requester: str,
        quota: intake.Quota,
        held: Lease | None = None,
        config: intake.TurnConfig = intake.TURNS,
    ) -> intake.Proposed:
        return intake.propose_for(
            self.deps, ask, requester=requester, quota=quota, held=held, config=config
        )

    def client_turn(
        self,
        requester: str,
        *,
        held: Lease | None = None,
        config: intake.TurnConfig = intake.TURNS,
    ) -> contextlib.AbstractContextManager[Lease]:
        return intake.turn(self.deps, requester, held=held, config=config)

    def take_turn(self, lease: Lease) -> bool:
        return intake.take_turn(self.deps, lease)

    def give_back(self, lease: Lease) -> None:
        intake.give_back(self.deps, lease)

    def check_for(
        self, ask: intake.Ask, *, requester: str, quota: intake.Quota
    ) -> intake.Checked | intake.Proposed:
        return intake.check(self.deps, ask, requester=requester, quota=quota)

    def propose_checked(
        self, checked: intake.Checked, *, incident_id: str | None, turn: Lease | None = None
    ) -> Proposal:
        return intake.propose_checked(self.deps, checked, incident_id=incident_id, turn=turn)

    def undo_for(
        self,
        entry_id: str,
        *,
        requester: str,
        quota: intake.Quota,
        held: Lease | None = None,
        config: intake.TurnConfig = intake.TURNS,
    ) -> intake.Proposed:
        return intake.undo_for(
            self.deps, entry_id, requester=requester, quota=quota, held=held, config=config
        )

    def own(self, proposal_id: str, *, requester: str) -> Proposal:
        return intake.own(self.deps, proposal_id, requester=requester)

    def answer(
        self,
        proposal_id: str,
        *,
        user: str,
        choice: Choice,
        groups: tuple[str, ...] = (),
        reason: str = "",
        grant_lifetime_seconds: int | None = None,
        plan: tuple[str, ...] = (),
    ) -> Proposal:
        with logcontext.about(proposal=proposal_id):
            return answer.answer(
                self.deps,
                proposal_id,
                user=user,
                choice=choice,
                groups=groups,
                reason=reason,
                grant_lifetime_seconds=grant_lifetime_seconds,
                plan=plan,
            )

    def approve_with_plan(self, proposal_id: str, *, plan_proposal_id: str) -> Proposal:
        return answer.approve_with_plan(self.deps, proposal_id, plan_proposal_id=plan_proposal_id)

    def refusal(
        self,
        proposal: Proposal,
        *,
        user: str,
        groups: tuple[str, ...],
        now: datetime,
        choice: str = "approve",
    ) -> str | None:
        return answer.refusal(self.deps, proposal, user=user, groups=groups, now=now, choice=choice)

    def execute(self, proposal_id: str, *, actor: str) -> Proposal:
        with logcontext.about(proposal=proposal_id):
            return execute.execute(self.deps, proposal_id, actor=actor)

    def propose_undo(
        self,
        request: UndoRequest,
        *,
        requester: str,
        dry_run: bool = False,
        supersedes: Proposal | None = None,
    ) -> Proposal:
        return undoing.propose_undo(
            self.deps, request, requester=requester, dry_run=dry_run, supersedes=supersedes
        )

    def undo_target(self, request: UndoRequest) -> UndoEntry:
        return undoing.undo_target(self.deps, request)

    def undo_conflict(self, entry_id: str) -> UndoConflict | None:
        return undoing.undo_conflict(self.deps, entry_id)

    def drop_undo_entry(
        self, entry_id: str, *, actor: str, reason: str, groups: tuple[str, ...] = ()
    ) -> UndoEntry:
        return undoing.drop_undo_entry(
            self.deps, entry_id, actor=actor, reason=reason, groups=groups
        )

    def undo_refusal(
        self, entry: UndoEntry, *, actor: str, groups: tuple[str, ...] = ()
    ) -> str | None:
        return undoing.undo_refusal(self.deps, entry, actor=actor, groups=groups)

    def cancel(self, proposal_id: str, *, actor: str, reason: str = "") -> Proposal:
        return cancel.cancel(self.deps, proposal_id, actor=actor, reason=reason)

    def withdraw(self, proposal_id: str, *, incident_id: str, actor: str, reason: str) -> Proposal:
        return cancel.withdraw(
            self.deps, proposal_id, incident_id=incident_id, actor=actor, reason=reason
        )

    def expire(self) -> list[Proposal]:
        return recover.expire(self.deps)

    def reconcile(self, *, actor: str = "stratus-reconciler") -> list[str]:
        return recover.reconcile(self.deps, actor=actor)

    def settle_earlier_writes(self, ref: ObjectRef) -> None:
        recover.settle_earlier_writes(self.deps, ref)

    def get(self, proposal_id: str) -> Proposal:
        return queries.get(self.deps, proposal_id)

    def pending(self) -> list[Proposal]:
        return queries.pending(self.deps)

    def by_incident(self, incident_id: str) -> list[Proposal]:
        return queries.by_incident(self.deps, incident_id)

    def recent(self, *, limit: int = 50) -> list[Proposal]:
        return queries.recent(self.deps, limit=limit)

    def undo_entries(self) -> list[UndoEntry]:
        return queries.undo_entries(self.deps)
