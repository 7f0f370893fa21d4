"""Moves: the one way an incident is changed, and what every move works with.

``Deps`` is what the workflow's functions are given explicitly (the proposal service, the
cluster and Prometheus they look at, the incidents' repository, the clock and how to wait).
``move`` changes an incident's state — an ending withdraws what still waits on it, in the
same transaction — and ``update`` changes anything else; ``say``, ``go`` and ``with_attempt``
are their small forms. Split from ``incidents.attempts`` so that the phases, parking, the
cancel and an outside agent's asks move an incident without reaching into the attempts.
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from dataclasses import dataclass, field, replace

from agents.health import HealthScore
from agents.verify import Pause, look, wait_until_settled
from incidents import continuation
from incidents.model import TERMINAL, Attempt, Incident, IncidentState
from incidents.repository import IncidentError, IncidentEventType, IncidentRepository
from incidents.settings import WorkflowConfig
from proposals.model import Proposal, ProposalState
from proposals.service import ProposalService
from store.clock import Clock, stamp
from store.errors import Remedy, StratusError
from tools import fleet
from tools.k8s import KubeClient
from tools.prometheus import PrometheusClient

St = IncidentState
P = ProposalState
AGENT = "agent:stratus"  # who proposes and answers for the workflow


class WriteInFlight(IncidentError):
    """The incident cannot end now: a write of it is being carried out (approved from a
    terminal, say). The cancel stays requested and is carried out once the write settled."""

    code = "write_in_flight"
    default_remedy = Remedy.RETRY


@dataclass(frozen=True)
class Deps:
    """What an attempt works with, passed in explicitly (``IncidentWorkflow`` builds it once):
    the proposal service every step goes through, the cluster and Prometheus it looks at, the
    incidents' repository, the clock and how to wait."""

    service: ProposalService
    kube: KubeClient
    incidents: IncidentRepository
    clock: Clock
    config: WorkflowConfig
    pause: Pause
    prometheus: PrometheusClient | None
    # Every cluster of a fleet by name (docs/fleet.md); empty: ``kube`` is the only one.
    kubes: Mapping[str, KubeClient] = field(default_factory=dict)

    def on(self, cluster: str) -> Deps:
        """The same dependencies looking at ``cluster`` (an incident's own); a cluster this
        Stratus no longer serves is refused, never read through another one."""
        if not cluster:
            return self
        kube = self.kubes.get(cluster)
        if kube is None:
            raise fleet.unknown(cluster, known=list(self.kubes))
        return self if kube is self.kube else replace(self, kube=kube)


def health(d: Deps, incident: Incident) -> HealthScore:
    """The namespace's health score now (with Prometheus' parts when configured)."""
    return look(
        d.kube,
        incident.namespace,
        since=stamp(incident.created_at),
        prometheus=d.prometheus,
    )


def wait_for_settle(d: Deps, incident: Incident) -> None:
    """Wait (bounded) until no pod of the namespace is on its way anywhere."""
    settled = wait_until_settled(
        d.kube,
        incident.namespace,
        pause=d.pause,
        timeout=d.config.settle_timeout,
        interval=d.config.poll_interval,
    )
    if not settled:
        say(d, incident, "the cluster was still moving at the settle timeout")


def move(
    d: Deps, incident: Incident, to: IncidentState, *, message: str = "", **updates: object
) -> Incident:
    if not incident.can_move(to):
        raise RuntimeError(f"incident {incident.id}: {incident.state} → {to} is not a move")
    changed = incident.model_copy(update={**updates, "state": to, "updated_at": d.clock.now()})
    # A cancel is one transaction: the open proposals withdrawn, no write of the incident
    # in flight, the incident stored. An approval or an execution of another process
    # (their moves are transactions too) lands wholly before it — and is seen here — or
    # after, on a withdrawn proposal, and is refused.
    with d.service.store.immediate():
        if to in TERMINAL and to != St.CANCELLED:  # a cancel withdraws every open one
            withdraw_queued(d, incident, to=to)
        if to == St.CANCELLED:
            by = incident.cancel_requested or AGENT
            withdraw_open(
                d, incident, actor=by, why=f"incident {incident.id} was cancelled by {by}"
            )
            busy = in_flight(d, incident)
            if busy is not None:
                raise WriteInFlight(
                    f"{busy.id} ({busy.intent}) is being carried out; the cancel of "
                    f"incident {incident.id} waits for it",
                    subject=incident.id,
                )
        return d.incidents.save(
            changed,
            expected_version=incident.version,
            actor=AGENT,
            message=message,
            previous=incident.state,
        )


def update(d: Deps, incident: Incident, **updates: object) -> Incident:
    changed = incident.model_copy(update={**updates, "updated_at": d.clock.now()})
    return d.incidents.save(changed, expected_version=incident.version, actor=AGENT)


def withdraw_queued(d: Deps, incident: Incident, *, to: IncidentState) -> None:
    """An incident that ends leaves no agent's change waiting for a turn that will not come:
    each is withdrawn, saying why, before the incident is stored as ended (else an approval
    would find it in a closed incident and nothing would verify it)."""
    held = continuation.held_by_attempts(incident)
    for proposal in d.service.by_incident(incident.id):
        if (
            continuation.queued_for_turn(proposal)
            and proposal.id not in held
            and proposal.state in (P.AWAITING_APPROVAL, P.APPROVED)
        ):
            with contextlib.suppress(StratusError):  # it moved on; judged by what it is
                d.service.withdraw(
                    proposal.id,
                    incident_id=incident.id,
                    actor=AGENT,
                    reason=f"incident {incident.id} ended ({to.value}) before its turn as an "
                    "attempt; propose it again if it is still needed",
                )


def withdraw_open(d: Deps, incident: Incident, *, actor: str, why: str) -> None:
    """Nothing of an ended incident stays open: every proposal of it still waiting or
    approved (one an answer approved while the cancel ran, one proposed by a move the
    cancel made stale, an undo a person asked for from a card) is withdrawn, whoever
    requested it, before the incident is stored as ended — before, so that no surface
    ever sees a cancelled incident with an approved proposal to run."""
    for proposal in d.service.by_incident(incident.id):
        if proposal.state in (P.AWAITING_APPROVAL, P.APPROVED):
            with contextlib.suppress(StratusError):  # it moved on; judged by what it is
                d.service.withdraw(proposal.id, incident_id=incident.id, actor=actor, reason=why)


def in_flight(d: Deps, incident: Incident) -> Proposal | None:
    """A proposal of the incident being executed right now, if there is one."""
    return next((p for p in d.service.by_incident(incident.id) if p.state == P.EXECUTING), None)


def say(d: Deps, incident: Incident, message: str) -> None:
    d.incidents.note(incident, IncidentEventType.NOTE, actor=AGENT, message=message)


def go(d: Deps, incident: Incident, to: IncidentState, message: str) -> Incident:
    if incident.state == to:
        return incident
    return move(d, incident, to, message=message)


def with_attempt(d: Deps, incident: Incident, attempt: Attempt) -> Incident:
    return update(d, incident, attempts=[*incident.attempts[:-1], attempt])
