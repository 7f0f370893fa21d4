"""The continuation: what an incident waits on, and what follows an answer — for every surface.

Two questions used to be answered in four places (the attempts, the bot's driver, the CLI's
``approve_and_execute`` and ``incidents`` prompt): *which proposal is this incident waiting on,
and has it been answered?* and *an answer was stored: what carries on?* They are answered here
once, as pure functions of the incident and its proposals' states, beside one thin function
that acts on the answer. Surfaces keep only parsing, threads or tasks, and rendering.

The proposal an attempt waits on is its last undo when it has asked for one (the undo cleans
up, so it goes first), else its last step — unless that step looked as wanted already and was
skipped (``Attempt.skipped``). An executed undo leaves nothing to wait on: the workflow asks for the
next one, or ends the attempt.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from agents.health import Verdict
from incidents.model import AGENT_SOURCE, Attempt, Incident, IncidentState
from incidents.repository import IncidentRepository
from policies import clients
from proposals.model import Proposal, ProposalState
from store.errors import NotFound
from tools.schemas import FieldInvalid

P = ProposalState


@dataclass(frozen=True)
class Waiting:
    """The proposal an attempt's progress hangs on (None: none yet, or the last step was
    skipped) and whether it is an undo of the attempt."""

    proposal_id: str | None
    undo: bool


class Next(enum.StrEnum):
    """What follows a stored answer (or a proposal just made)."""

    ADVANCE = "advance"  # a step or undo of the incident's open attempt: its workflow moves on
    EXECUTE = "execute"  # approved and of no running attempt: executed on its own
    # An MCP client's proposal in an open incident, of no attempt yet: it is the incident's
    # next attempt, run when the current one has its verdict (``queued_turn``); its workflow
    # is advanced, and nothing executes it on its own.
    QUEUED = "queued"
    WAIT = "wait"  # more approvals are needed
    NOTHING = "nothing"  # refused, withdrawn or run already: nothing carries on


class AttemptEnd(enum.StrEnum):
    """What ends an attempt — one that ran all its steps, or one a rejected, denied or failed
    step stopped short (issue 18: a stop is never by itself a reason to undo)."""

    NEXT = "next"  # nothing was executed: plan the next candidate
    VERIFY = "verify"  # steps were executed and not judged yet: look at the namespace first
    RESOLVE = "resolve"  # healthy: keep what was done; the incident is resolved
    REPLAN = "replan"  # better: keep what was done and plan the rest from a fresh look
    UNDO = "undo"  # unchanged or worse: undo what the attempt did (TNR)


# ---------------------------------------------------------------------- pure decisions


def attempt_end(*, executed: bool, verdict: Verdict | None, revealed: bool = False) -> AttemptEnd:
    """What follows an attempt that finished or stopped: ``executed`` — whether any of its
    steps was written; ``verdict`` — the health verdict once the cluster settled (None: not
    looked at yet); ``revealed`` — the look attributes every new failure to a callee the
    attempt did not write, and its target is fixed (``agents.attribution``). Only a look
    decides whether to undo: undoing a step that helped (the ConfigMap restored, its restart
    rejected) would put the diagnosed cause back, and undoing a fix that revealed the next
    fault would hide that fault again (issue 22) — it is kept, and the next look diagnoses
    what it revealed."""
    if not executed:
        return AttemptEnd.NEXT
    if verdict is None:
        return AttemptEnd.VERIFY
    if verdict == "healthy":
        return AttemptEnd.RESOLVE
    if verdict == "better" or revealed:
        return AttemptEnd.REPLAN
    return AttemptEnd.UNDO


@dataclass(frozen=True)
class TnrUndo:
    """Which executed writes of an attempt the workflow's own undo (TNR, a cancel half-way)
    reverses, last first, and which it keeps: those that fixed the diagnosed cause."""

    undo: tuple[str, ...]
    kept: tuple[str, ...]


# Objects whose data pods read when they start: a write to one shows only once its readers
# restart, so a look soon after cannot judge it. A write to a workload rolls its pods itself.
DATA_KINDS = frozenset({"ConfigMap", "Secret"})


def tnr_undo(writes: Sequence[tuple[str, str, str]], *, cancelled: bool = False) -> TnrUndo:
    """``writes``: the attempt's executed steps in order, each (proposal id, the cause it
    fixed — ``Proposal.fixes``, "" for none — and the kind of object it wrote). An automatic
    undo never puts the diagnosed cause back where the verdict cannot have judged the fix
    (issue 18, F1): a ConfigMap or Secret restored is read by its pods only when they restart,
    and the look after it came before they did, so the fix stays and a person may still Undo
    it from its card, where it is flagged. A fix on a workload (a rollback of the Deployment
    the diagnosis named) rolls its own pods: a verdict of worse has seen it, and it is undone
    like the attempt's other writes (its undo rated high, as every undo of a cause's object).
    ``cancelled``: a person cancelled the incident half-way, and a cancel takes back all it
    did (docs/workflow.md) — that undo is the person's choice, not a verdict's."""
    keep = {pid for pid, fixes, kind in writes if fixes and kind in DATA_KINDS and not cancelled}
    return TnrUndo(
        undo=tuple(pid for pid, _, _ in reversed(writes) if pid not in keep),
        kept=tuple(pid for pid, _, _ in writes if pid in keep),
    )


def after_tnr_undo(*, kept: bool, cancelled: bool) -> IncidentState:
    """Where an incident goes once the workflow's undo of an attempt is done: cancelled when a
    person cancelled it; escalated when a fix of the cause was kept against the verdict (the
    next candidate would be planned over a fix nobody has judged: a person decides); else the
    next candidate is planned."""
    if cancelled:
        return IncidentState.CANCELLED
    return IncidentState.ESCALATED if kept else IncidentState.PLANNING


def plans_own_fixes(incident: Incident) -> bool:
    """Whether Stratus's planners propose fixes in this incident. Not in one an outside agent's
    proposal opened: the agent is working on it, and fixes of Stratus's own on top of the
    agent's would race it for the approvers and the same objects. Its attempt is verified,
    kept or undone like any; after that the agent (or a person) decides what follows — until a
    person asks Stratus to look again (Look again counts in ``reopened``)."""
    return incident.source != AGENT_SOURCE or incident.reopened > 0


@dataclass(frozen=True)
class Verification:
    """What became of an executed proposal that is a step of an attempt: the verdict (None
    while not judged), whether the attempt's own undo (TNR) undid it, and whether the workflow
    is done with it (nothing more happens to it without someone asking)."""

    incident_id: str
    attempt: int
    verdict: Verdict | None
    score_before: int | None
    score_after: int | None
    undo_proposal: str | None
    undone: bool
    done: bool
    undo_refused: bool = False  # a person rejected TNR's undo (or let it expire): it remains
    # Objects whose faults the attempt revealed behind its fixed target: it is kept.
    revealed: tuple[str, ...] = ()


def verification_of(
    incident: Incident, proposal_id: str, states: Mapping[str, ProposalState]
) -> Verification | None:
    """The verification of ``proposal_id`` as a step of one of ``incident``'s attempts (None:
    it is a step of none). ``states``: the states of that attempt's undo proposals."""
    attempt = next((a for a in incident.attempts if proposal_id in a.proposals), None)
    if attempt is None:
        return None
    undo = attempt.undo_proposals[-1] if attempt.undo_proposals else None
    current = incident.current is not None and incident.current.number == attempt.number
    return Verification(
        incident_id=incident.id,
        attempt=attempt.number,
        verdict=attempt.verdict,
        score_before=attempt.health_before.get("total") if attempt.health_before else None,
        score_after=attempt.health_after.get("total") if attempt.health_after else None,
        undo_proposal=undo,
        undone=undo is not None and states.get(undo) == P.EXECUTED,
        done=attempt.finished_at is not None or not incident.is_open or not current,
        undo_refused=undo is not None and states.get(undo) in _UNDO_REFUSED,
        revealed=tuple(attempt.revealed),
    )


_UNDO_REFUSED = frozenset({P.REJECTED, P.EXPIRED, P.CANCELLED, P.DENIED})


def waiting_on(attempt: Attempt, states: Mapping[str, ProposalState]) -> Waiting:
    """The proposal the attempt waits on; ``states``: its proposals' states by id (only the
    last undo's is read)."""
    if attempt.undo_proposals:
        last = attempt.undo_proposals[-1]
        return Waiting(None if states[last] == P.EXECUTED else last, True)
    if attempt.proposals and not attempt.last_step_skipped:
        return Waiting(attempt.proposals[-1], False)
    return Waiting(None, False)


def awaited_id(incident: Incident) -> str | None:
    """The id whose state decides what the incident waits on (see ``waiting_on``), with no
    state read: the last undo asked for, else the last step proposed."""
    attempt = incident.current
    if attempt is None:
        return None
    if attempt.undo_proposals:
        return attempt.undo_proposals[-1]
    return attempt.proposals[-1] if attempt.proposals and not attempt.last_step_skipped else None


def awaiting_answer(incident: Incident, states: Mapping[str, ProposalState]) -> str | None:
    """The proposal a person should answer now for the incident to move on (None: nothing
    waits for a person)."""
    proposal_id = awaited_id(incident)
    if proposal_id is None or states.get(proposal_id) != P.AWAITING_APPROVAL:
        return None
    return proposal_id


def answered_but_waiting(incident: Incident, states: Mapping[str, ProposalState]) -> bool:
    """The incident still says it waits for approval, but what it waits on was answered (the
    answer landed while another process held the incident's lease): advance it again."""
    if incident.state != IncidentState.AWAITING_APPROVAL:
        return False
    proposal_id = awaited_id(incident)
    return proposal_id is not None and states.get(proposal_id) != P.AWAITING_APPROVAL


def in_open_attempt(incident: Incident | None, proposal_id: str) -> bool:
    """Whether the proposal is a step or an undo of the incident's attempt still running."""
    if incident is None or not incident.is_open:
        return False
    attempt = incident.current
    return attempt is not None and proposal_id in (*attempt.proposals, *attempt.undo_proposals)


def after_answer(
    proposal_id: str, state: ProposalState, incident: Incident | None, *, agents: bool = False
) -> Next:
    """What follows an answer to the proposal (``incident``: the one it belongs to, if any;
    ``agents``: an MCP client's change, ``queued_for_turn``): nothing while more approvals are
    needed; then the running attempt owns its proposals, whatever became of them (a refusal
    moves it on too); an agent's change in an open incident waits for its turn as an attempt;
    anything else runs on its own once approved."""
    if state == P.AWAITING_APPROVAL:
        return Next.WAIT
    if in_open_attempt(incident, proposal_id):
        return Next.ADVANCE
    if state == P.APPROVED and agents and incident is not None and incident.is_open:
        return Next.QUEUED
    if state == P.APPROVED:
        return Next.EXECUTE
    return Next.NOTHING


def queued_for_turn(proposal: Proposal) -> bool:
    """Whether the proposal is an MCP client's change (not an undo it asked for): in an open
    incident such a change is only ever carried out as one of its attempts — verified, and
    undone when it made things worse — never on its own (docs/mcp.md)."""
    return proposal.requester.startswith(clients.PREFIX) and proposal.undo_entry is None


def held_by_attempts(incident: Incident) -> frozenset[str]:
    return frozenset(
        pid for a in incident.attempts for pid in (*a.proposals, *a.undo_proposals) if pid
    )


def waits_its_turn(proposal: Proposal, incident: Incident | None) -> bool:
    """Whether the proposal is an agent's change queued in an open incident: open, and no
    attempt holds it yet (``queued_turn`` says which of them is next)."""
    return (
        incident is not None
        and incident.is_open
        and queued_for_turn(proposal)
        and proposal.state in (P.AWAITING_APPROVAL, P.APPROVED)
        and proposal.id not in held_by_attempts(incident)
    )


def queued_turn(incident: Incident, proposals: Sequence[Proposal]) -> Proposal | None:
    """The MCP client's proposal that is the incident's next attempt: of the changes that no
    attempt holds yet and that are still open, the oldest approved, else the oldest waiting.
    An incident verifies one change at a time: two writes judged by one before/after would
    each get the other's verdict, and TNR could undo the wrong one."""
    held = held_by_attempts(incident)
    waiting = [
        p
        for p in proposals
        if queued_for_turn(p) and p.id not in held and p.state in (P.AWAITING_APPROVAL, P.APPROVED)
    ]
    # People's answers first: an approved change does not wait behind one nobody answered.
    return (
        min(waiting, key=lambda p: (p.state != P.APPROVED, p.created_at, p.id)) if waiting else None
    )


# How long an answered proposal, or an incident executing, may stand still before the leader
# carries it on itself (``parked_work``). The process that stored the answer starts its write
# within milliseconds (at worst behind the bot's few write threads), and a terminal that
# approved executes at once: past this, nobody live is about to — the process that answered
# lost the lease, crashed, or its write found the object's lock held and left it approved.
PARKED_GRACE_SECONDS = 30.0
# What an incident's executing or undoing may wait on when it is carried on: an approved
# proposal to execute, one executed already (the move after it never happened), or nothing
# (the step was skipped). One executing is being written, or is recovery's to settle first.
_RESUMABLE = frozenset({P.APPROVED, P.EXECUTED})


@dataclass(frozen=True)
class Parked:
    """Work nobody is carrying on: the incident to advance (``Next.ADVANCE``), or the
    standalone approved proposal to execute (``Next.EXECUTE``)."""

    step: Next
    incident_id: str | None = None
    proposal_id: str | None = None


def stalled(
    incident: Incident, states: Mapping[str, ProposalState], *, now: datetime, grace: float
) -> bool:
    """Whether ``incident`` is parked work: open, reachable (not parked for its thread),
    unchanged for ``grace`` seconds, and either executing or undoing with nothing in flight
    (what it waits on approved, executed or skipped), or still awaiting an answer that was
    given (``answered_but_waiting``). ``states``: the awaited proposal's (``states_of``)."""
    if not incident.is_open or incident.parked:
        return False
    if now - incident.updated_at < timedelta(seconds=grace):
        return False
    if incident.state in (IncidentState.EXECUTING, IncidentState.UNDOING):
        proposal_id = awaited_id(incident)
        return proposal_id is None or states.get(proposal_id) in _RESUMABLE
    return answered_but_waiting(incident, states)


def parked_standalone(
    proposal: Proposal, incident: Incident | None, *, now: datetime, grace: float
) -> bool:
    """Whether an approved proposal that no running attempt owns (an undo asked for from a
    card, a terminal's request) has been left unexecuted for ``grace`` seconds."""
    return (
        proposal.state == P.APPROVED
        and after_answer(proposal.id, proposal.state, incident, agents=queued_for_turn(proposal))
        == Next.EXECUTE
        and now - proposal.updated_at >= timedelta(seconds=grace)
    )


# ---------------------------------------------------------------------- reading the store


def states_of(incident: Incident, get: Callable[[str], Proposal]) -> dict[str, ProposalState]:
    """The state the decisions above read: that of the proposal the incident waits on."""
    proposal_id = awaited_id(incident)
    return {} if proposal_id is None else {proposal_id: get(proposal_id).state}


def incident_to_join(
    incidents: IncidentRepository, *, namespace: str, asked: str | None
) -> str | None:
    """The incident an outside agent's proposal joins, so its card is posted in that
    incident's thread: the one it named (open, in the same namespace), else the namespace's
    open incident, else none (a new incident is opened for it). Joined, it waits for its turn
    as the incident's next attempt (``queued_turn``)."""
    if asked:
        try:
            incident = incidents.get(asked)
        except NotFound as exc:
            raise FieldInvalid("incident", f"no incident {asked!r}") from exc
        if not incident.is_open or incident.namespace != namespace:
            raise FieldInvalid("incident", f"incident {asked} is not open in {namespace}")
        return incident.id
    found = incidents.open_for(namespace)
    return found.id if found is not None else None


def next_after(proposal: Proposal, incidents: IncidentRepository) -> Next:
    """``after_answer`` for a stored proposal, its incident read from the store."""
    incident = incidents.get(proposal.incident_id) if proposal.incident_id else None
    return after_answer(proposal.id, proposal.state, incident, agents=queued_for_turn(proposal))


def parked_work(
    incidents: IncidentRepository,
    *,
    pending: Sequence[Proposal],
    get: Callable[[str], Proposal],
    now: datetime,
    grace: float = PARKED_GRACE_SECONDS,
) -> list[Parked]:
    """The parked work in the store (``stalled`` incidents, ``parked_standalone``
    proposals among ``pending``), for the leader to carry on — at takeover and at each
    reconcile. Carrying it on is exactly once however often this is asked: an incident's
    advance holds its lease, and an execution starts by compare-and-set (approved →
    executing)."""
    found: list[Parked] = []
    for incident in incidents.recent(limit=500, open_only=True):
        if stalled(incident, states_of(incident, get), now=now, grace=grace):
            found.append(Parked(Next.ADVANCE, incident_id=incident.id))
    for proposal in pending:
        owner = incidents.get(proposal.incident_id) if proposal.incident_id else None
        if parked_standalone(proposal, owner, now=now, grace=grace):
            found.append(Parked(Next.EXECUTE, proposal_id=proposal.id))
    return found


# ---------------------------------------------------------------------- acting


def carry_on(
    proposal: Proposal,
    *,
    incidents: IncidentRepository,
    execute: Callable[[str], Proposal],
    advance: Callable[[str], Incident] | None = None,
) -> Proposal | Incident | None:
    """An answer to ``proposal`` was stored: carry on. A step of a running attempt is left to
    its incident's workflow (``advance``); a process that runs no workflow (a terminal) passes
    none and executes the approved step itself — the workflow's next advance finds it executed.
    A standalone approved proposal is executed; an agent's change queued in an open incident
    is left to that incident's workflow (returned as it is). None: nothing carries on yet
    (more approvals are needed)."""
    step = next_after(proposal, incidents)
    if step in (Next.ADVANCE, Next.QUEUED) and advance is not None and proposal.incident_id:
        return advance(proposal.incident_id)
    if step == Next.QUEUED:
        return proposal  # its incident's workflow runs it at its turn, never a terminal
    if step == Next.WAIT:
        return None
    # Executing what is refused or already run is refused by the service with the reason.
    return execute(proposal.id)
