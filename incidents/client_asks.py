"""An outside agent's proposal (docs/mcp.md) as an incident's attempt.

The change joins the incident it names or the namespace's open one, where it waits its turn
as the next attempt (an incident verifies one change at a time). With none open, it opens an
incident of its own whose one attempt is that proposal: verified once executed and undone
when it made things worse, as any attempt (``adoption.adopt``). Functions over the attempts'
``Deps``, run inside the client's turn that ``IncidentWorkflow.propose_for_client`` holds.
"""

from __future__ import annotations

import contextlib

from incidents import adoption, continuation, moves
from incidents.model import AGENT_SOURCE, Incident, IncidentState, new_incident_id
from incidents.moves import AGENT, Deps
from incidents.repository import IncidentClosed, IncidentEventType, StaleIncident
from proposals.intake import Ask, Checked, Proposed, Quota, said
from proposals.model import ProposalState
from store.errors import StratusError
from store.locks import Lease

St = IncidentState


def propose(d: Deps, ask: Ask, *, requester: str, quota: Quota, turn: Lease) -> Proposed:
    """The client's checked ask (schema, scope, limits, repeats come first: a refused call
    opens nothing), proposed in the incident it joins or in a new one it opens."""
    joined = continuation.incident_to_join(
        d.incidents, namespace=ask.namespace, asked=ask.incident_id
    )
    checked = d.service.check_for(ask, requester=requester, quota=quota)
    if isinstance(checked, Proposed):
        return checked  # a repeat: that proposal, wherever it is
    if joined is not None:
        return join(d, checked, joined, turn=turn)
    now = d.clock.now()
    incident = Incident(
        id=new_incident_id(),
        namespace=checked.ref.namespace or ask.namespace,
        question=said(requester, checked.agent_intent) if checked.agent_intent else "",
        requester=requester,
        source=AGENT_SOURCE,
        state=St.PLANNING,
        created_at=now,
        updated_at=now,
        max_attempts=1,
        planner=requester,
        cluster=d.service.executor.cluster,
    )
    existing = d.incidents.insert(incident)
    if existing is not None:  # opened meanwhile: join it
        return join(d, checked, existing.id, turn=turn)
    try:
        proposal = d.service.propose_checked(checked, incident_id=incident.id, turn=turn)
    except StratusError as error:
        # An ask that lost its turn meanwhile (``TurnLost``) may find that the client's
        # next ask joined this incident: that ask's proposal is not cancelled with it.
        if not d.service.by_incident(incident.id):
            moves.move(
                d,
                incident,
                St.CANCELLED,
                message=f"{requester}'s proposal could not be made: {error.message}",
                reason="proposal refused",
            )
        raise
    if proposal.state == ProposalState.DENIED:
        # Nothing will be tried: the incident ends at once, before it has a thread (the
        # agent is told by its call; a flood of denied asks opens no flood of threads).
        moves.move(
            d,
            incident,
            St.CANCELLED,
            message=f"{requester}'s proposal was denied by policy: {proposal.reason}",
            reason="proposal denied",
        )
        return Proposed(proposal, repeated=False)
    # Another client's change may have joined and become its first attempt meanwhile:
    # then this one waits its turn like any joined change.
    with contextlib.suppress(StaleIncident):
        adoption.adopt(d, incident, proposal)
    return Proposed(d.service.get(proposal.id), repeated=False)


def join(d: Deps, checked: Checked, incident_id: str, *, turn: Lease) -> Proposed:
    """The agent's change in an incident already under way: proposed there (its card in
    that thread), it waits for its turn as the incident's next attempt — an incident
    verifies one change at a time (``continuation.queued_turn``)."""
    made = d.service.propose_checked(checked, incident_id=incident_id, turn=turn)
    incident = d.incidents.get(incident_id)
    if not incident.is_open:
        # It ended while the change was proposed: nothing would give it a turn.
        with contextlib.suppress(StratusError):
            d.service.withdraw(
                made.id,
                incident_id=incident_id,
                actor=AGENT,
                reason=f"incident {incident_id} ended while this was proposed",
            )
        raise IncidentClosed(
            f"incident {incident_id} ended while this was proposed; propose it again",
            subject=incident_id,
        )
    if made.state in (ProposalState.AWAITING_APPROVAL, ProposalState.APPROVED):
        current = incident.current
        ahead = (
            f"attempt {current.number} ({current.candidate.intent})"
            if current is not None and not current.finished_at
            else "Stratus's look at the namespace"
        )
        d.incidents.note(
            incident,
            IncidentEventType.NOTE,
            actor=AGENT,
            message=f"{made.id} from {checked.requester} waits its turn: it runs as the "
            f"next attempt once {ahead} has its verdict (one change is verified at a time)",
        )
    if incident.source == AGENT_SOURCE and not incident.attempts and incident.state == St.PLANNING:
        # An agent's incident whose opening ask never became its attempt (it lost its
        # turn, or it is being made right now): nothing else would start this one.
        with contextlib.suppress(StaleIncident):
            adoption.adopt(d, incident, made)
        made = d.service.get(made.id)
    return Proposed(made, repeated=False)
