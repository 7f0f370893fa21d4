"""Attempts: one candidate's steps proposed, approved, executed — and undone as one.

Each step is a proposal through the proposal service (policy, approvals, the exact plan, the
undo stack); this module only decides which proposal comes next and what its state means for
the incident. An attempt is a transaction: if it is judged worse (or changes nothing), or a
later step is refused or fails, or the incident is cancelled half-way, the steps it already
executed are undone — each undo itself a proposal the policy decides.

They are functions over explicit dependencies (``incidents.moves.Deps``), not half of a
class: the workflow builds ``Deps`` once and calls them; what an attempt waits on is asked of
``incidents.continuation``; an incident is changed only through ``incidents.moves``.
"""

from __future__ import annotations

import contextlib

from agents.model import Candidate, Step
from incidents import continuation, plans
from incidents.model import (
    Attempt,
    Incident,
    IncidentState,
    new_transaction_id,
    stop_word,
)
from incidents.moves import (
    AGENT,
    Deps,
    go,
    health,
    move,
    say,
    update,
    wait_for_settle,
    with_attempt,
)
from incidents.repository import IncidentEventType, StaleIncident
from proposals.errors import NoChange, NotExecutable
from proposals.model import Proposal, ProposalState
from proposals.service import Superseded, UndoRequest
from store.errors import StratusError
from tools import errors

St = IncidentState
P = ProposalState
_REFUSED = {P.REJECTED: "rejected", P.EXPIRED: "expired", P.CANCELLED: "cancelled"}


# ------------------------------------------------------------------ begin and steps


def begin_attempt(d: Deps, incident: Incident, candidate: Candidate) -> Incident:
    if incident.attempts or not incident.health_now:
        before = health(d, incident).to_dict()
    else:
        before = incident.health_now  # the first attempt: the look taken moments ago
    attempt = Attempt(
        number=len(incident.attempts) + 1,
        candidate=candidate,
        transaction_id=new_transaction_id(),
        health_before=before,
        started_at=d.clock.now(),
        # The whole plan, once, before any step is proposed: what people approve as a plan.
        # One step is no plan (its card is the whole of it), so it is not read twice.
        plan=plans.planned(
            d.service,
            candidate,
            namespace=incident.namespace,
            requester=AGENT,
            cluster=incident.cluster,
        )
        if len(candidate.steps) > 1
        else [],
    )
    incident = update(
        d,
        incident,
        attempts=[*incident.attempts, attempt],
        tried=[*incident.tried, candidate.key()],
    )
    note_attempt(d, incident, attempt)
    return next_step(d, incident)


def note_attempt(d: Deps, incident: Incident, attempt: Attempt) -> None:
    d.incidents.note(
        incident,
        IncidentEventType.ATTEMPT,
        actor=AGENT,
        message=f"attempt {attempt.number}: {attempt.candidate.intent}",
        data={
            "attempt": attempt.number,
            "candidate": attempt.candidate.model_dump(mode="json"),
            "health_before": attempt.health_before,
            "plan": [
                step.model_dump(mode="json", include={"number", "intent", "target", "note"})
                for step in attempt.plan
            ],
        },
    )


def next_step(d: Deps, incident: Incident) -> Incident:
    """Propose the attempt's next step, or go verify when every step is done."""
    attempt = incident.current
    assert attempt is not None
    steps = attempt.candidate.steps
    while attempt.steps_taken < len(steps):
        number = attempt.steps_taken + 1
        step = steps[number - 1]
        planned = next((p for p in attempt.plan if p.number == number), None)
        try:
            proposal = d.service.propose(
                action=step.action,
                kind=step.kind,
                name=step.name,
                namespace="" if step.kind == "Node" else incident.namespace,
                # As planned (a restart's stamp fixed when the attempt began), so an
                # unchanged object gives the digest the plan was approved with.
                params=planned.params if planned is not None and planned.digest else step.params,
                requester=AGENT,
                incident_id=incident.id,
                fixes=fixes_cause(incident, step),
                cluster=incident.cluster,
            )
        except NoChange as why:
            say(d, incident, why.message)
            attempt = attempt.model_copy(update={"skipped": [*attempt.skipped, number]})
            incident = with_attempt(d, incident, attempt)
            continue
        except StratusError as error:
            return end_attempt(d, incident, f"failed: {error.message}")
        attempt = attempt.model_copy(update={"proposals": [*attempt.proposals, proposal.id]})
        try:
            incident = with_attempt(d, incident, attempt)
        except StaleIncident:
            # A cancel (or a choice) landed while the step was proposed: the proposal is
            # recorded nowhere, so withdraw it; the next look proposes again if needed.
            with contextlib.suppress(StratusError):
                d.service.cancel(proposal.id, actor=AGENT, reason="the incident changed meanwhile")
            raise
        proposal, note = plans.with_plan(d.service, incident, proposal)
        if note:
            say(d, incident, note)
        return after_proposal(d, incident, proposal)
    if not _executed_steps(d, attempt):
        return end_attempt(d, incident, "no change: every object already looked as wanted")
    if incident.state == St.VERIFYING:
        return incident
    return move(d, incident, St.VERIFYING, message="waiting for the cluster to settle")


def fixes_cause(incident: Incident, step: Step) -> str:
    """The diagnosed cause when ``step`` writes the very object the diagnosis named, else "":
    the proposal keeps it, so an undo of that write says it puts the cause back."""
    cause = incident.diagnosis
    if cause is None or (step.kind, step.name) != (cause.resource.kind, cause.resource.name):
        return ""
    noun = f"{cause.resource.kind.lower()}/{cause.resource.name}"
    return cause.summary if noun in cause.summary else f"{noun}: {cause.summary}"


def after_proposal(d: Deps, incident: Incident, proposal: Proposal) -> Incident:
    if proposal.state == P.DENIED:
        key = incident.current.candidate.key() if incident.current else ""
        incident = update(
            d,
            incident,
            rejected=[*incident.rejected, (key, f"denied by policy: {proposal.reason}")],
        )
        return end_attempt(d, incident, f"denied by policy: {proposal.reason}")
    if proposal.state == P.APPROVED:
        by = next((v.user for v in proposal.votes if v.with_plan), None)
        people = ", ".join(proposal.approvals())
        how = (
            f"approved with the plan by {by}"
            if by
            else f"approved by {people}"
            if people
            else "allowed by policy"
        )
        return go(d, incident, St.EXECUTING, f"{proposal.intent} ({how})")
    return go(
        d,
        incident,
        St.AWAITING_APPROVAL,
        f"waiting for approval of {proposal.id}: {proposal.intent}",
    )


# ------------------------------------------------------------------ waiting and executing


def await_answer(d: Deps, incident: Incident) -> Incident | None:
    attempt = incident.current
    assert attempt is not None
    proposal, undoing = waiting_proposal(d, attempt)
    if proposal is None:
        return go(d, incident, St.UNDOING if undoing else St.EXECUTING, "")
    if proposal.state == P.AWAITING_APPROVAL:
        if d.clock.now() >= proposal.expires_at:
            d.service.expire()
            return d.incidents.get(incident.id)
        return None  # a human decides; nothing waits here
    if proposal.state in (P.APPROVED, P.EXECUTING, P.EXECUTED):
        return go(d, incident, St.UNDOING if undoing else St.EXECUTING, "")
    if proposal.state == P.SUPERSEDED:
        return _replace(d, incident, proposal, undoing)
    why = _REFUSED.get(proposal.state, proposal.state.value)
    reason = f"{proposal.id} {why}" + (f": {proposal.reason}" if proposal.reason else "")
    if undoing:
        return _undo_refused(d, incident, why, reason)
    incident = update(d, incident, rejected=[*incident.rejected, (attempt.candidate.key(), reason)])
    return end_attempt(d, incident, reason)


def execute_step(d: Deps, incident: Incident) -> Incident | None:
    attempt = incident.current
    assert attempt is not None
    proposal, undoing = waiting_proposal(d, attempt)
    if proposal is None or proposal.state == P.EXECUTED:
        return undo_attempt(d, incident) if undoing else next_step(d, incident)
    try:
        d.service.execute(proposal.id, actor=AGENT)
    except Superseded as moved:
        return _replace(d, incident, d.service.get(proposal.id), undoing, moved.new)
    except (errors.LockHeld, errors.Unavailable, errors.OutcomeUnknown) as busy:
        d.incidents.note(
            incident,
            IncidentEventType.NOTE,
            actor=AGENT,
            message=f"{proposal.id} must wait: {busy.message}",
        )
        return None
    except (StratusError, NotExecutable) as error:
        if undoing:
            return move(
                d,
                incident,
                St.ESCALATED,
                message=f"undoing attempt {attempt.number} failed: {error.message}",
                reason="undo failed",
            )
        return end_attempt(d, incident, f"failed: {error.message}")
    return undo_attempt(d, incident) if undoing else next_step(d, incident)


def _replace(
    d: Deps,
    incident: Incident,
    old: Proposal,
    undoing: bool,
    new: Proposal | None = None,
) -> Incident | None:
    """A superseded proposal is followed by the one that replaces it (which may need a
    fresh approval, since the object or the policy moved)."""
    attempt = incident.current
    assert attempt is not None
    replacement = new or (d.service.get(old.superseded_by) if old.superseded_by else None)
    field = "undo_proposals" if undoing else "proposals"
    ids = list(getattr(attempt, field))
    updates: dict[str, object] = {}
    if replacement is not None:
        ids[ids.index(old.id)] = replacement.id
    elif not undoing:
        # Superseded by nothing (its object looks as wanted now): the step is skipped.
        updates["skipped"] = sorted([*attempt.skipped, attempt.step_number(old.id) or 0])
        ids.remove(old.id)
    else:
        ids.remove(old.id)
    updates[field] = ids
    incident = with_attempt(d, incident, attempt.model_copy(update=updates))
    if replacement is None:
        return undo_attempt(d, incident) if undoing else next_step(d, incident)
    return after_proposal(d, incident, replacement)


# ------------------------------------------------------------------ undoing


def undo_attempt(d: Deps, incident: Incident) -> Incident | None:
    """Undo the attempt's executed steps, last first, each through the service."""
    attempt = incident.current
    assert attempt is not None
    pending, undoing = waiting_proposal(d, attempt)
    if not undoing:
        pending = None  # a forward step is not an undo to wait on
    if pending is not None and pending.state in (P.APPROVED, P.AWAITING_APPROVAL):
        state = St.UNDOING if pending.state == P.APPROVED else St.AWAITING_APPROVAL
        if state == St.UNDOING and incident.state == St.UNDOING:
            return execute_step(d, incident)
        return go(d, incident, state, f"undo {pending.id}: {pending.intent}")
    if pending is not None and pending.state in _REFUSED:
        return _undo_refused(d, incident, _REFUSED[pending.state], pending.id)
    executed = _executed_steps(d, attempt)
    split = continuation.tnr_undo(
        [(p.id, p.fixes, p.target.kind) for p in executed],
        cancelled=bool(incident.cancel_requested),
    )
    for proposal_id in split.undo:
        original = d.service.get(proposal_id)
        if not original.undo_id:
            d.incidents.note(
                incident,
                IncidentEventType.NOTE,
                actor=AGENT,
                message=f"{original.intent} cannot be undone (irreversible); left as is",
            )
            continue
        try:
            undo = d.service.propose_undo(
                UndoRequest(entry_id=original.undo_id, incident_id=incident.id),
                requester=AGENT,
            )
        except StratusError as error:
            return move(
                d,
                incident,
                St.ESCALATED,
                message=f"cannot undo {original.intent}: {error.message}",
                reason="undo refused",
            )
        undos = [*attempt.undo_proposals, undo.id]
        attempt = attempt.model_copy(update={"undo_proposals": undos})
        incident = with_attempt(d, incident, attempt)
        if undo.state == P.DENIED:
            return move(
                d,
                incident,
                St.ESCALATED,
                message=f"policy denies undoing {original.intent}: {undo.reason}",
                reason="undo denied",
            )
        if undo.state == P.AWAITING_APPROVAL:
            return go(d, incident, St.AWAITING_APPROVAL, f"undo {undo.id}: {undo.intent}")
        incident = go(d, incident, St.UNDOING, f"undo {undo.id}: {undo.intent}")
        return execute_step(d, incident)
    kept = [p for p in executed if p.id in split.kept]
    # A cancel half-way keeps its word; anything else undone by TNR is "undone" (why a step
    # stopped it, if one did, stays in ``stopped``).
    outcome = "fix kept" if kept else ("cancelled" if attempt.outcome == "cancelled" else "undone")
    incident = with_attempt(
        d, incident, attempt.model_copy(update={"outcome": outcome, "finished_at": d.clock.now()})
    )
    wait_for_settle(d, incident)  # look again only once the undo has rolled out
    what = "undone" if not kept else ("undone except " if split.undo else "") + _kept(kept)
    to = continuation.after_tnr_undo(kept=bool(kept), cancelled=bool(incident.cancel_requested))
    if to == St.CANCELLED:
        return move(
            d,
            incident,
            St.CANCELLED,
            message=f"cancelled by {incident.cancel_requested}; attempt {attempt.number} "
            f"was {what}",
            reason=f"cancelled by {incident.cancel_requested}",
        )
    if to == St.ESCALATED:
        return move(
            d,
            incident,
            St.ESCALATED,
            message=f"attempt {attempt.number} was judged {attempt.verdict or 'not better'}, "
            f"but {what}: undoing it would put back the cause found, and a look taken before "
            "the fixed object's readers restarted cannot tell; a person should judge it (its "
            "card's Undo says it puts the cause back)",
            reason="fix of the cause kept",
        )
    return move(d, incident, St.PLANNING, message=f"attempt {attempt.number} undone")


def _kept(kept: list[Proposal]) -> str:
    """The writes a workflow's undo kept, as the record says them."""
    return "its fix of the cause found was kept: " + "; ".join(
        f"{p.intent} ({p.id}, fixes {p.fixes})" for p in kept
    )


def _undo_refused(d: Deps, incident: Incident, why: str, detail: str) -> Incident:
    """The undo of the attempt was refused (``why``: rejected, expired, cancelled …):
    never ask again behind a person's back — the automation ends, escalated, and says
    that the attempt's changes remain."""
    attempt = incident.current
    assert attempt is not None
    return move(
        d,
        incident,
        St.ESCALATED,
        message=f"the undo of attempt {attempt.number} was {why}; its changes remain ({detail})",
        reason="undo refused",
        attempts=[
            *incident.attempts[:-1],
            attempt.model_copy(update={"outcome": f"undo {why}", "finished_at": d.clock.now()}),
        ],
    )


def end_attempt(d: Deps, incident: Incident, outcome: str) -> Incident:
    """The attempt stops short (refused, denied, failed). When it executed steps, the
    namespace is verified first (``continuation.attempt_end``): the verdict keeps them or
    undoes them. Else go plan the next candidate."""
    attempt = incident.current
    assert attempt is not None
    word = stop_word(outcome) or "failed"
    attempt = attempt.model_copy(update={"outcome": word, "stopped": outcome})
    incident = with_attempt(d, incident, attempt)
    say(d, incident, f"attempt {attempt.number}: {outcome}")
    end = continuation.attempt_end(executed=bool(_executed_steps(d, attempt)), verdict=None)
    if end == continuation.AttemptEnd.VERIFY:
        return go(
            d,
            incident,
            St.VERIFYING,
            f"attempt {attempt.number} stopped short; looking at what its done steps changed "
            "before keeping or undoing them",
        )
    incident = with_attempt(
        d,
        incident,
        attempt.model_copy(update={"outcome": word, "finished_at": d.clock.now()}),
    )
    if incident.cancel_requested:
        return move(d, incident, St.CANCELLED, message=f"cancelled by {incident.cancel_requested}")
    return go(d, incident, St.PLANNING, f"attempt {attempt.number}: {outcome}")


# ------------------------------------------------------------------ helpers


def waiting_proposal(d: Deps, attempt: Attempt) -> tuple[Proposal | None, bool]:
    """The proposal the attempt waits on (``continuation.waiting_on``), and whether it is
    an undo."""
    last_undo = attempt.undo_proposals[-1:]
    waiting = continuation.waiting_on(attempt, {i: d.service.get(i).state for i in last_undo})
    found = d.service.get(waiting.proposal_id) if waiting.proposal_id else None
    return found, waiting.undo


def _executed_steps(d: Deps, attempt: Attempt) -> list[Proposal]:
    executed = []
    for proposal_id in attempt.proposals:
        proposal = d.service.get(proposal_id)
        if proposal.state == P.EXECUTED:
            executed.append(proposal)
    return executed


def executed_steps(d: Deps, attempt: Attempt) -> list[Proposal]:
    """The attempt's steps executed so far, in order."""
    return _executed_steps(d, attempt)


def cause_fixes(d: Deps, attempt: Attempt) -> list[Proposal]:
    """The attempt's executed writes that fixed the diagnosed cause: its undo keeps them."""
    split = continuation.tnr_undo(
        [(p.id, p.fixes, p.target.kind) for p in _executed_steps(d, attempt)]
    )
    return [d.service.get(pid) for pid in split.kept]


def complete(d: Deps, attempt: Attempt) -> bool:
    """Every step of the attempt was proposed and executed (or already looked as wanted)."""
    if attempt.steps_taken < len(attempt.candidate.steps):
        return False
    return all(d.service.get(proposal_id).state == P.EXECUTED for proposal_id in attempt.proposals)
