"""The shared machinery of the proposal use-cases, as functions over explicit dependencies
(``Deps``): opening a proposal, deciding it by policy, and moving it — one state change, its
event and its audit row in one transaction."""

from __future__ import annotations

import dataclasses
import logging
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

from policies import clients
from policies.clients import Registry
from policies.evaluate import (
    CompiledPolicy,
    PolicyDecision,
    ProposalFacts,
    evaluate,
)
from policies.grants import GrantBook, GrantTampered
from policies.impersonation import Impersonation
from proposals import risk, seals
from proposals.errors import (
    NotExecutable,
    TurnLost,
)
from proposals.events import EventType, ProposalEvent, ProposalEvents
from proposals.killswitch import KillSwitch, while_paused
from proposals.model import (
    OPEN,
    Decision,
    Facts,
    PlanSnapshot,
    Proposal,
    ProposalState,
    Target,
    Vote,
    plan_digest,
)
from proposals.repository import ProposalRepository
from store.audit import AuditLog
from store.clock import Clock
from store.db import Store
from store.errors import Remedy, StratusError
from store.locks import Lease, LeaseLocks
from store.records import ExecutionLog
from tools import crashpoints, fleet, secrets
from tools.actions import WritePlan
from tools.executor import Executor
from tools.objects import ObjectRef
from undo.stack import UndoStack

S = ProposalState
log = logging.getLogger("stratus.proposals")
PolicySource = Callable[[], CompiledPolicy]
_CAS_ATTEMPTS = 8


@dataclass(frozen=True)
class UndoRequest:
    """What to undo: one entry by id, or the most recent write."""

    entry_id: str | None = None
    last: bool = False
    force: bool = False
    incident_id: str | None = None


def labels_of(obj: dict[str, Any] | None) -> dict[str, str]:
    labels = ((obj or {}).get("metadata") or {}).get("labels") or {}
    return {str(k): str(v) for k, v in labels.items()}


def routes_to(deps: Deps, ref: ObjectRef, obj: dict[str, Any] | None) -> tuple[str, ...]:
    """The Services of the namespace routing to the workload ``obj`` (``proposals.risk``).
    An unreadable list (no permission, the server down) names none: the risk keeps its
    floor and the write is still decided and shown."""
    if not ref.namespace or not obj or obj.get("kind") not in risk.WORKLOAD_KINDS:
        return ()
    try:
        services = deps.executor.kube.list("v1", "Service", namespace=ref.namespace)
    except StratusError:
        return ()
    return risk.routed_by(services, obj)


def new_proposal_id() -> str:
    return f"prop-{uuid.uuid4().hex[:12]}"


def decide(
    facts: ProposalFacts, *, policy: CompiledPolicy, store: Store, now: datetime
) -> PolicyDecision:
    """The decision for these facts under this policy with the grants in the store now: the
    one place a decision is computed (proposals, the check under the lock before a write, and
    `stratus policy explain`).
    A grant that would allow this but was inserted or edited outside Stratus stops it."""
    book = GrantBook(store)
    for grant, problem in book.forged(facts, now):
        raise GrantTampered(
            f"grant {grant.id} ({grant.action} on {grant.namespace}/{grant.resource}) was "
            f"changed outside Stratus: {problem}; it allows nothing, and nothing was written",
            subject=grant.id,
            remedy=Remedy.REVOKE_GRANT,
            details={"record": "grant", "problems": [problem]},
        )
    return evaluate(facts, policy, book.active(now), now)


@dataclass(frozen=True)
class Deps:
    """What the use-cases work with, passed in explicitly: the store and its clock, the
    executor, where the policy in force comes from, and the repositories over the store."""

    store: Store
    clock: Clock
    executor: Executor
    policy: PolicySource
    repo: ProposalRepository
    events: ProposalEvents
    audit: AuditLog
    grants: GrantBook
    stack: UndoStack
    executions: ExecutionLog
    # Writes made as the approver (``policies.impersonation``); None: as Stratus itself.
    impersonation: Impersonation | None = None
    # The fleet's other clusters by name (docs/fleet.md); empty: ``executor`` is the only one.
    executors: Mapping[str, Executor] = field(default_factory=dict)
    # The MCP client's turn the proposal is made in (``proposals.intake.turn``): still held,
    # checked in the very transaction that stores it, or nothing is stored (``TurnLost``).
    turn: Lease | None = None
    # The token the MCP client asks with (its SHA-256), recorded on what it proposes.
    client_token: str = ""
    # The MCP clients file (``STRATUS_MCP_CLIENTS``): a client's proposal is approved and
    # stands only while the client is configured with the token it proposed with. None: this
    # process serves no MCP clients, and judges none.
    clients: Registry | None = None

    @classmethod
    def wire(
        cls,
        *,
        store: Store,
        executor: Executor,
        policy: PolicySource,
        impersonation: Impersonation | None = None,
        executors: Mapping[str, Executor] | None = None,
        clients: Registry | None = None,
    ) -> Deps:
        return cls(
            store=store,
            clock=store.clock,
            executor=executor,
            policy=policy,
            repo=ProposalRepository(store),
            events=ProposalEvents(store),
            audit=AuditLog(store),
            grants=GrantBook(store),
            stack=UndoStack(executor),
            executions=ExecutionLog(store),
            impersonation=impersonation,
            executors=dict(executors or {}),
            clients=clients,
        )

    def on(self, cluster: str) -> Deps:
        """The same use-cases, writing to ``cluster`` (a proposal's, an undo entry's): ''
        and the default executor's own name stay here; an unknown one is refused, never
        guessed, so a write can never land in another cluster than the one it was planned on."""
        if self.executor.owns(cluster):
            return self
        executor = self.executors.get(cluster)
        if executor is None:
            raise fleet.unknown(cluster, known=[name for name in self.executors if name])
        return dataclasses.replace(self, executor=executor, stack=UndoStack(executor))


def revoked(deps: Deps, proposal: Proposal) -> str | None:
    """Why an MCP client's proposal may no longer be approved — its client was removed from
    the clients file, or its token revoked (``clients.revocation``) — or None. A clients file
    that does not load lets no client in, and approves no client's proposal either."""
    if deps.clients is None or not proposal.requester.startswith(clients.PREFIX):
        return None
    try:
        configured = deps.clients.load()
    except StratusError as exc:
        return f"the MCP clients file does not load ({exc.message})"
    return clients.revocation(configured, proposal.requester, proposal.client_token)


# ---------------------------------------------------------------------- propose


def open_proposal(
    deps: Deps,
    *,
    action: str,
    params: dict[str, Any],
    ref: ObjectRef,
    facts: ProposalFacts,
    plan: WritePlan,
    intent: str,
    risk: str,
    reversible: bool,
    requester: str,
    incident_id: str | None,
    dry_run: bool,
    supersedes: Proposal | None,
    undo_entry: str | None = None,
    force: bool = False,
    warnings: list[str] | None = None,
    risk_reason: str = "",
    fixes: str = "",
    puts_back: str = "",
    agent_intent: str = "",
) -> Proposal:
    # The policy decides on the cluster it is written to (a rule's ``clusters``).
    facts = dataclasses.replace(facts, cluster=deps.executor.cluster)
    now = deps.clock.now()
    decision = decide_now(deps, facts, now)
    state = {"deny": S.DENIED, "allow": S.APPROVED}.get(decision.outcome, S.AWAITING_APPROVAL)
    proposal_id = new_proposal_id()
    digest = plan_digest(
        action=action, target=str(ref), params=params, diff=plan.diff, seen=plan.before
    )
    cluster = deps.executor.cluster
    proposal = Proposal(
        id=proposal_id,
        incident_id=incident_id,
        action=action,
        params=params,
        target=Target(kind=ref.kind, name=ref.name, namespace=ref.namespace),
        requester=requester,
        facts=Facts.of(facts),
        plan=PlanSnapshot(
            operation=plan.operation,
            # What people see, and all Stratus stores: a Secret's values as digests.
            before=secrets.stored_image(plan.before),
            after=secrets.stored_image(plan.after),
            diff=plan.diff,
            digest=digest,
        ),
        intent=intent,
        risk=risk,
        reversible=reversible,
        decision=seals.signed_decision(proposal_id, digest, Decision.of(decision, now)),
        state=state,
        created_at=now,
        updated_at=now,
        expires_at=now + timedelta(seconds=decision.approval_timeout_seconds),
        undo_entry=undo_entry,
        force=force,
        supersedes=supersedes.id if supersedes else None,
        previous_diff=supersedes.plan.diff if supersedes else None,
        reason=decision.reason if decision.outcome == "deny" else "",
        warnings=list(warnings or []),
        agent_intent=agent_intent,
        client_token=deps.client_token,
        risk_reason=risk_reason,
        fixes=fixes,
        puts_back=puts_back,
        cluster=cluster,
    )
    if dry_run:
        return proposal
    with deps.store.immediate():
        if deps.turn is not None and not LeaseLocks(deps.store).holds(
            deps.turn.resource, deps.turn.holder
        ):
            raise TurnLost(
                f"{requester}'s turn ran out while this ask was planned, and another ask may "
                "have been decided meanwhile: nothing was stored; ask again",
                details={"limit": "turn", "ttl": deps.turn.ttl},
            )
        if undo_entry is not None and supersedes is None:
            open_undo = deps.repo.find(states=OPEN, undo_entry=undo_entry, limit=1)
            if open_undo:
                return open_undo[0]  # a racing request won: answer with its proposal
        proposal = deps.repo.insert(proposal)
        event(deps, proposal, EventType.PROPOSED, S.PROPOSED.value, None, requester)
        event(deps, proposal, EventType.STATE_CHANGED, state.value, "proposed", requester)
        deps.audit.append(
            actor=requester,
            event="proposal",
            subject=str(ref),
            payload={
                "proposal": proposal.id,
                "action": action,
                "state": state.value,
                "digest": proposal.plan.digest,
                "decision": decision.to_dict(),
                "supersedes": proposal.supersedes,
                "seal": proposal.seal,
                **({"cluster": cluster} if cluster else {}),
            },
        )
    crashpoints.reached("proposed")
    return proposal


def decide_now(deps: Deps, facts: ProposalFacts, now: datetime) -> PolicyDecision:
    policy = deps.policy()
    decision = decide(facts, policy=policy, store=deps.store, now=now)
    # The kill switch: while paused, nothing that would run without a human does.
    return while_paused(decision, policy, KillSwitch(deps.store).state())


def mark_executed(
    deps: Deps,
    proposal_id: str,
    *,
    execution_id: str,
    undo_id: str | None,
    verdict: str,
    actor: str,
) -> None:
    """Inside the write's transaction: the proposal is executed, and an undo marks the
    proposal it reverses undone."""
    proposal = deps.repo.get(proposal_id)
    kept_undo_id = undo_id if proposal.reversible and proposal.undo_entry is None else None
    move(
        deps,
        proposal_id,
        S.EXECUTED,
        actor=actor,
        message=f"{verdict}: {proposal.intent}",
        execution_id=execution_id,
        undo_id=kept_undo_id,
    )
    if proposal.undo_entry is None:
        return
    entry = deps.stack.entries.get(proposal.undo_entry)
    original = entry.execution.proposal_id if entry else None
    if original:
        move(
            deps,
            original,
            S.UNDONE,
            actor=actor,
            message=f"undone by {proposal_id}",
            undone_by=proposal_id,
        )


# ---------------------------------------------------------------------- state changes


def move(
    deps: Deps,
    proposal_id: str,
    to: ProposalState,
    *,
    actor: str,
    allowed_from: set[ProposalState] | None = None,
    message: str = "",
    **updates: Any,
) -> Proposal:
    """One state change: load, check the move, save by compare-and-set, event and audit
    row — all in one transaction (joining the caller's when there is one)."""
    with deps.store.immediate():
        proposal = deps.repo.get(proposal_id)
        if (allowed_from is not None and proposal.state not in allowed_from) or not (
            proposal.can_move(to)
        ):
            raise NotExecutable(
                f"proposal {proposal.id} is {proposal.state.value.replace('_', ' ')}; it "
                f"cannot become {to.value.replace('_', ' ')}",
                subject=proposal.id,
            )
        return save(deps, proposal, to, actor=actor, message=message, **updates)


def link(deps: Deps, proposal_id: str, **links: str) -> Proposal:
    """Record links (the proposal that replaces this one) without a state change."""
    with deps.store.immediate():
        proposal = deps.repo.get(proposal_id)
        saved = deps.repo.save(
            proposal.model_copy(update={**links, "updated_at": deps.clock.now()}),
            expected_version=proposal.version,
        )
        deps.audit.append(
            actor="stratus",
            event="proposal",
            subject=str(saved.target),
            payload={
                "proposal": saved.id,
                **links,
                **({"cluster": saved.cluster} if saved.cluster else {}),
                "seal": saved.seal,
            },
        )
        return saved


def save(
    deps: Deps,
    proposal: Proposal,
    to: ProposalState,
    *,
    actor: str,
    message: str,
    vote: Vote | None = None,
    **updates: Any,
) -> Proposal:
    previous = proposal.state
    changed = proposal.model_copy(update={**updates, "state": to, "updated_at": deps.clock.now()})
    if (
        message
        and to != previous
        and "reason" not in updates
        and to
        in (
            S.FAILED,
            S.SUPERSEDED,
        )
    ):
        changed = changed.model_copy(update={"reason": message})
    with deps.store.immediate():
        saved = deps.repo.save(changed, expected_version=proposal.version)
        if vote is not None:
            event(
                deps,
                saved,
                EventType.VOTED,
                to.value,
                previous.value,
                actor,
                message=message,
                data={"choice": vote.choice, "approvals": saved.approvals()},
            )
        if to != previous:
            event(deps, saved, EventType.STATE_CHANGED, to.value, previous.value, actor, message)
            # Operators follow a proposal through the logs by its ids (``operations.logs``).
            log.info(
                "proposal %s %s: %s -> %s by %s",
                saved.id,
                saved.action,
                previous.value,
                to.value,
                actor,
                extra={"proposal_id": saved.id, "incident_id": saved.incident_id or ""},
            )
        deps.audit.append(
            actor=actor,
            event="vote" if vote is not None else "proposal",
            subject=str(saved.target),
            payload={
                "proposal": saved.id,
                "from": previous.value,
                "to": to.value,
                "message": message,
                "digest": saved.plan.digest,
                **({"choice": vote.choice} if vote is not None else {}),
                **({"cluster": saved.cluster} if saved.cluster else {}),
                "seal": saved.seal,
            },
        )
    return saved


def event(
    deps: Deps,
    proposal: Proposal,
    type: EventType,
    state: str,
    previous: str | None,
    actor: str,
    message: str = "",
    data: dict[str, Any] | None = None,
) -> None:
    deps.events.append(
        ProposalEvent(
            type=type,
            proposal_id=proposal.id,
            incident_id=proposal.incident_id,
            action=proposal.action,
            target=str(proposal.target),
            state=state,
            previous_state=previous,
            actor=actor,
            message=message,
            data=data or {},
        )
    )
