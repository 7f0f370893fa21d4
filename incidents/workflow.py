"""The incident workflow: a persisted state machine that the surfaces advance.

detecting → diagnosing → planning → awaiting_approval → executing → verifying → resolved,
with undoing → planning (next hypothesis) when an attempt made things worse or changed nothing,
and escalated or cancelled as the other ends. Every move is plain Python — the looks at the
cluster in ``incidents.phases``, the attempts in ``incidents.attempts``, both functions over
explicit dependencies; this module is the facade the surfaces call (start, advance, cancel,
choose, park) and dispatches on the incident's state. Planners only supply a diagnosis and
ranked candidates, and every write is a proposal through the proposal service — there is no
second gate.

``advance`` runs moves until the incident must wait for a human or ends. Nothing waits on a
person inside a coroutine: the incident is stored after every move, and a click (or a
restart) calls ``advance`` again, which picks up from the stored state. One process advances
an incident at a time (a lease); at most one incident per namespace is open.
"""

from __future__ import annotations

import sqlite3
import time
import unicodedata
from collections.abc import Callable, Mapping
from datetime import timedelta
from functools import partial

from agents.planner import Planner
from agents.verify import Pause
from incidents import attempts, cancelling, client_asks, moves, parking, phases, reopening
from incidents.model import (
    Incident,
    IncidentState,
    new_incident_id,
)
from incidents.moves import WriteInFlight
from incidents.repository import (
    IncidentClosed,
    IncidentEventType,
    IncidentRepository,
    NamespaceTaken,
    StaleIncident,
)
from incidents.settings import WorkflowConfig
from policies import authority
from policies.approvals import ApprovalRequest
from proposals.intake import TURNS, Ask, Proposed, Quota, TurnConfig
from proposals.model import ProposalState
from proposals.service import ProposalService
from store import logcontext
from store.locks import Lease, LeaseLocks, holder_name
from tools import errors, names
from tools.k8s import KubeClient
from tools.objects import ObjectRef
from tools.prometheus import PrometheusClient

St = IncidentState
AGENT = moves.AGENT  # who proposes the workflow's actions
RECHECKS = 3  # rounds of ``advance`` when the incident was changed while we held its lease


class IncidentWorkflow:
    def __init__(
        self,
        *,
        service: ProposalService,
        kube: KubeClient,
        offline: Planner,
        llm: Planner | None = None,
        config: WorkflowConfig | None = None,
        pause: Pause = time.sleep,
        prometheus: PrometheusClient | None = None,
        kubes: Mapping[str, KubeClient] | None = None,
    ) -> None:
        self.service = service
        self.kube = kube
        self.offline = offline
        self.llm = llm
        self.config = config or WorkflowConfig()
        self.pause = pause
        # Metrics for the health score and the analyzers; None: cluster signals only.
        self.prometheus = prometheus
        self.store = service.store
        self.clock = service.clock
        self.incidents = IncidentRepository(service.store)
        self.locks = LeaseLocks(service.store)
        self.deps = moves.Deps(
            service=service,
            kube=kube,
            incidents=self.incidents,
            clock=self.clock,
            config=self.config,
            pause=pause,
            prometheus=prometheus,
            # A fleet (docs/fleet.md): each incident reads the cluster it names.
            kubes=dict(kubes or {}),
        )
        self.planners = phases.Planners(offline=offline, llm=llm)

    # ------------------------------------------------------------------ use-cases

    @property
    def fleet(self) -> bool:
        """Whether this Stratus serves a fleet of named clusters (docs/fleet.md)."""
        return bool(self.service.executor.cluster)

    def cluster_named(self, cluster: str) -> str:
        """The cluster an investigation asked for by ``cluster`` works on: '' is the default
        one (the only one, unnamed, without a fleet); a name the fleet does not hold is
        refused (``UnknownCluster``), never guessed."""
        chosen = cluster or self.service.executor.cluster
        self.deps.on(chosen)  # refuses an unknown name
        return chosen

    def start(
        self,
        namespace: str,
        *,
        requester: str,
        question: str = "",
        source: str = "cli",
        cluster: str = "",
    ) -> tuple[Incident, bool]:
        """Open an incident on ``namespace`` of ``cluster`` (default: the default one), or
        join the one already open there. Returns (incident, joined)."""
        names.check_namespace(namespace)  # a bad or empty one is named as a namespace
        cluster = self.cluster_named(cluster)
        kube = self.deps.on(cluster).kube
        if kube.find(ObjectRef("Namespace", namespace)) is None:
            raise errors.NotFound(f"namespace {namespace!r} does not exist", subject=namespace)
        now = self.clock.now()
        incident = Incident(
            id=new_incident_id(),
            namespace=namespace,
            question=printable(question)[:500],
            requester=requester,
            source=source,
            state=St.DETECTING,
            created_at=now,
            updated_at=now,
            max_attempts=self.config.max_attempts,
            planner=self.llm.name if self.llm else self.offline.name,
            cluster=cluster,
        )
        self.release_parked_in(namespace, cluster=cluster)
        again = self.recent_escalation(namespace, cluster=cluster)
        if again is not None:
            with_question = f", asking: {printable(question)[:500]}" if question.strip() else ""
            try:
                return self.reopen(
                    again.id, actor=requester, why=f"a new investigation{with_question}"
                ), True
            except (IncidentClosed, NamespaceTaken, StaleIncident):
                pass  # moved meanwhile: open or join as usual
        existing = self.incidents.insert(incident)
        if existing is not None:
            self.incidents.note(
                existing,
                IncidentEventType.NOTE,
                actor=requester,
                message=f"{requester} joined the open incident {existing.id}"
                + (f", asking: {printable(question)[:500]}" if question.strip() else ""),
            )
            return existing, True
        return incident, False

    def propose_for_client(
        self,
        ask: Ask,
        *,
        requester: str,
        quota: Quota,
        held: Lease | None = None,
        config: TurnConfig = TURNS,
    ) -> Proposed:
        """An outside agent's proposal (docs/mcp.md). It joins the incident it names or the
        namespace's open one, as a proposal of its own (``continuation.incident_to_join``).
        With none open, it opens one — requester the client, its question the agent's intent
        quoted as untrusted — whose one attempt is that proposal: verified once executed, and
        undone when it made things worse, as any attempt (``adoption.adopt``). Stratus plans
        no fixes of its own there (``continuation.plans_own_fixes``). The call's checks —
        schema, scope, limits, repeats — come first: a refused call opens nothing. All of it
        in the client's turn: two asks at once must not both see room under its limits."""
        with self.service.client_turn(requester, held=held, config=config) as turn:
            return client_asks.propose(self.deps, ask, requester=requester, quota=quota, turn=turn)

    def recent_escalation(self, namespace: str, *, cluster: str = "") -> Incident | None:
        """The namespace's latest incident when it escalated within ``reopen_seconds`` and
        nothing is open there: a new look belongs in it, not in a new thread."""
        if self.incidents.open_for(namespace, cluster=cluster) is not None:
            return None
        latest = self.incidents.latest_for(namespace, cluster=cluster)
        # One that ended because its thread never reached Slack (``unreachable``) has no
        # thread to carry on in: the namespace was freed for a new incident of its own.
        if latest is None or latest.state != St.ESCALATED or latest.reason == "unreachable":
            return None
        if self.clock.now() - latest.updated_at > timedelta(seconds=self.config.reopen_seconds):
            return None
        return latest

    def reopen(self, incident_id: str, *, actor: str, why: str = "") -> Incident:
        """Look again at an escalated incident (Look again; a new investigation or alert of
        its namespace): it goes back to diagnosing in the same incident — its thread, its
        attempts and what was refused kept — with a fresh budget of attempts. The caller
        advances it. Raises ``IncidentClosed`` for any other state, ``NamespaceTaken`` when
        another incident is open in the namespace."""
        for _ in range(8):
            incident = self.incidents.get(incident_id)
            if incident.is_open:
                return incident  # someone looked again first
            if incident.state != St.ESCALATED:
                raise closed(incident)
            other = self.incidents.open_for(incident.namespace, cluster=incident.cluster)
            if other is not None:
                raise NamespaceTaken(
                    f"namespace {incident.namespace} already has an open incident, {other.id}",
                    subject=other.id,
                    details={"open": other.id, "namespace": incident.namespace},
                )
            # What the policy denied may be allowed now (a person looking again may have
            # changed it); a person's rejection, and what was tried and undone, still stand.
            denied = {a.candidate.key() for a in incident.attempts if a.result == "denied"}
            try:
                return moves.move(
                    self.deps,
                    incident,
                    St.DIAGNOSING,
                    message=f"{actor} asked to look again" + (f" ({why})" if why else ""),
                    tried=[k for k in incident.tried if k not in denied],
                    rejected=[(k, r) for k, r in incident.rejected if k not in denied],
                    reason="",
                    cancel_requested="",
                    candidates=[],
                    reopened=incident.reopened + 1,
                    max_attempts=len(incident.attempts) + self.config.max_attempts,
                )
            except StaleIncident:
                continue
            except sqlite3.IntegrityError:
                continue  # another incident opened in the namespace meanwhile: named above
        return self.incidents.get(incident_id)

    def advance(self, incident_id: str, *, budget: int = 100, wait: float = 0.0) -> Incident:
        """Make moves until the incident waits for a human or ends (or another process is
        advancing it, in which case it is returned as it is). ``wait``: how long to wait for
        that other process to let go first."""
        with logcontext.about(incident=incident_id):
            return self._advance(incident_id, budget=budget, wait=wait)

    def _advance(self, incident_id: str, *, budget: int, wait: float) -> Incident:
        resource = f"incident:{incident_id}"
        for _ in range(RECHECKS):
            holder = holder_name("workflow")
            if self.locks.acquire(resource, holder, ttl=self.config.lease_seconds, wait=wait):
                return self.incidents.get(incident_id)
            try:
                incident = self._moves(incident_id, budget)
            finally:
                self.locks.release(resource, holder)
            # A cancel (or a choice) written without the lease after our last move found the
            # lease taken and left the move to us: look once more now that we have let go.
            latest = self.incidents.get(incident_id)
            if not latest.is_open or latest.version == incident.version:
                return latest
        return latest

    def _moves(self, incident_id: str, budget: int) -> Incident:
        incident = self.incidents.get(incident_id)
        for _ in range(budget):
            if not incident.is_open:
                break
            try:
                moved = self._step(incident)
            except StaleIncident:
                # Someone changed it between our read and our write without the lease (a
                # cancel, a join, a choice): our move did not happen; look again.
                incident = self.incidents.get(incident_id)
                continue
            except WriteInFlight as busy:
                # A write of it started between our wait and our cancel (the cancel's
                # transaction was rolled back): wait for that write and try again, within the
                # budget; past it, the cancel stays requested for the next advance.
                self.incidents.note(
                    incident, IncidentEventType.NOTE, actor=AGENT, message=busy.message
                )
                incident = self.incidents.get(incident_id)
                continue
            if moved is None:
                break  # waiting for a human
            incident = moved
        return incident

    def driven_elsewhere(self, incident_id: str) -> str | None:
        """The process advancing this incident right now, if another one is."""
        holder = self.locks.holder_of(f"incident:{incident_id}")
        return holder.holder if holder is not None else None

    def cancel_refusal(
        self,
        incident_id: str,
        *,
        user: str,
        groups: tuple[str, ...] = (),
        asked_from: str | None = None,
        channel: str | None = None,
    ) -> str | None:
        """Why ``user`` may not cancel the incident (None: they may), by the one rule in
        ``policies.authority``: a cancel withdraws what the incident waits on, so it is an
        answer like Reject. ``asked_from``/``channel``: where the request came from and the
        incident's own channel (None from a terminal)."""
        incident = self.incidents.get(incident_id)
        waiting = [
            ApprovalRequest(
                proposal_id=p.id,
                facts=p.facts.policy_facts(),
                decision=p.decision.policy_decision(),
                digest=p.plan.digest,
                created_at=p.created_at,
            )
            for p in self.service.by_incident(incident_id)
            if p.state == ProposalState.AWAITING_APPROVAL
        ]
        facts = authority.CancelFacts(
            incident_id=incident_id,
            requester=incident.requester,
            channel=channel,
            waiting=tuple(waiting),
        )
        return authority.cancel_refusal(
            authority.Asker(user=user, groups=groups),
            facts,
            admins=authority.admins(self.service.policy()),
            asked_from=asked_from,
            now=self.clock.now(),
        )

    def cancel(self, incident_id: str, *, actor: str, reason: str = "") -> Incident:
        """Cancel: open proposals are withdrawn; an attempt whose steps are half done is
        undone first, so no half-done action is left behind."""
        for _ in range(8):
            incident = self.incidents.get(incident_id)
            if not incident.is_open:
                return incident
            try:
                flagged = incident.model_copy(
                    update={"cancel_requested": actor or "someone", "updated_at": self.clock.now()}
                )
                saved = self.incidents.save(flagged, expected_version=incident.version, actor=actor)
                self.incidents.note(
                    saved,
                    IncidentEventType.NOTE,
                    actor=actor,
                    message=f"cancel requested by {actor}: {reason or 'no reason given'}",
                )
                # The process advancing it now sees the flag at its next move, or when it lets
                # go; waiting a little for the lease carries the cancel out here when it can.
                return self.advance(incident_id, wait=self.config.cancel_wait)
            except StaleIncident:
                continue
        return self.incidents.get(incident_id)

    def fix_undone(self, undo_id: str) -> Incident | None:
        """An undo proposal was executed: what it means for the incident whose write it
        undid (``incidents.reopening.after_undo``)."""
        return reopening.after_undo(self.incidents, self.service, undo_id)

    def choose(self, incident_id: str, *, candidate_key: str, actor: str, reason: str) -> Incident:
        """A person picked another of the planner's candidates: it is tried next, and the
        proposal waiting for approval now is rejected with ``reason`` (which the planner sees,
        like any rejection). The caller advances the incident afterwards."""
        for _ in range(8):
            incident = self.incidents.get(incident_id)
            try:
                incident = self.incidents.save(
                    incident.model_copy(
                        update={"preferred": candidate_key, "updated_at": self.clock.now()}
                    ),
                    expected_version=incident.version,
                    actor=actor,
                )
                break
            except StaleIncident:
                continue
        attempt = incident.current
        waiting = (attempt.proposals if attempt else [])[-1:]
        for proposal_id in waiting:
            if self.service.get(proposal_id).state == ProposalState.AWAITING_APPROVAL:
                self.service.answer(proposal_id, user=actor, choice="reject", reason=reason)
        self.incidents.note(incident, IncidentEventType.NOTE, actor=actor, message=reason)
        return incident

    def park(self, incident_id: str, *, reason: str, actor: str) -> Incident:
        """The incident could not reach the surface it was asked from (its Slack thread could
        not be posted): it stays where it is, visibly parked with ``reason``, until a retry
        succeeds (``unpark``) or ``config.park_seconds`` pass (``release_parked``)."""
        return parking.set_parked(self.deps, incident_id, reason=reason, actor=actor)

    def unpark(self, incident_id: str, *, actor: str) -> Incident:
        """A retry reached the surface: the incident carries on (the caller advances it)."""
        return parking.set_parked(self.deps, incident_id, reason="", actor=actor)

    def release_parked(self) -> list[Incident]:
        """End every incident parked for longer than ``config.park_seconds``
        (``incidents.parking``)."""
        return parking.release_parked(self.deps)

    def release_parked_in(self, namespace: str, *, cluster: str = "") -> None:
        """End the namespace's open incident if it was parked past the bound, so that a new
        investigation (a command's, an alert's) opens its own instead of joining it."""
        parking.release_parked_in(self.deps, namespace, cluster=cluster)

    # ------------------------------------------------------------------ moves

    def _step(self, incident: Incident) -> Incident | None:
        deps = self.deps.on(incident.cluster)  # it reads its own cluster, whichever
        if incident.cancel_requested:
            return cancelling.cancel_now(deps, incident)
        handler: dict[IncidentState, Callable[[Incident], Incident | None]] = {
            St.DETECTING: partial(phases.detect, deps),
            St.DIAGNOSING: partial(phases.diagnose, deps, self.planners),
            St.PLANNING: partial(phases.plan, deps, self.planners),
            St.AWAITING_APPROVAL: partial(attempts.await_answer, deps),
            St.EXECUTING: partial(attempts.execute_step, deps),
            St.VERIFYING: partial(phases.verify, deps),
            St.UNDOING: partial(attempts.undo_attempt, deps),
        }
        return handler[incident.state](incident)


def closed(incident: Incident) -> IncidentClosed:
    """The error for an incident that has ended, with the fields each surface words."""
    return IncidentClosed(
        f"incident {incident.id} is closed ({incident.state.value}"
        + (f": {incident.reason}" if incident.reason else "")
        + ")",
        subject=incident.id,
        details={
            "state": incident.state.value,
            "reason": incident.reason,
            "reopenable": incident.state == St.ESCALATED,
            "namespace": incident.namespace,
        },
    )


def printable(text: str) -> str:
    """Text a person typed, safe to show anywhere: control characters (a carriage return can
    fake a line on a terminal) and bidirectional overrides become spaces."""
    return "".join(" " if unicodedata.category(ch) in ("Cc", "Cf") else ch for ch in text).strip()
