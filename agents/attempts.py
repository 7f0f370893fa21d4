"""Attempts: one candidate's steps proposed, approved, executed — and undone as one.

Each step is a proposal through the proposal service (policy, approvals, the exact plan, the
undo stack); this module only decides which proposal comes next and what its state means for
the incident. An attempt is a transaction: if it is judged worse (or changes nothing), or a
later step is refused or fails, or the incident is cancelled half-way, the steps it already
executed are undone — each undo itself a proposal the policy decides.
"""

from __future__ import annotations

import contextlib
import time
from datetime import datetime

from agents.health import HealthScore
from agents.incident import Attempt, Incident, IncidentState, new_transaction_id
from agents.incident_store import (
    IncidentError,
    IncidentEventType,
    IncidentRepository,
    StaleIncident,
)
from agents.model import Candidate
from agents.settings import WorkflowConfig
from agents.verify import Pause, look, wait_until_settled
from proposals.errors import NoChange, NotExecutable
from proposals.model import Proposal, ProposalState
from proposals.service import ProposalService, Superseded, UndoRequest
from store.clock import Clock, stamp
from store.errors import Remedy, StratusError
from tools import errors
from tools.k8s import KubeClient
from tools.prometheus import PrometheusClient

St = IncidentState
P = ProposalState
SKIPPED = ""  # a step whose object already looked as wanted
_REFUSED = {P.REJECTED: "rejected", P.EXPIRED: "expired", P.CANCELLED: "cancelled"}
_AGENT = "agent:stratus"


class WriteInFlight(IncidentError):
    """The incident cannot end now: a write of it is being carried out (approved from a
    terminal, say). The cancel stays requested and is carried out once the write settled."""

    code = "write_in_flight"
    default_remedy = Remedy.RETRY


class AttemptRunner:
    """The attempt half of ``IncidentWorkflow`` (kept apart to keep each module small), and
    the one way an incident is changed: ``move`` (a state change) and ``update``."""

    service: ProposalService
    kube: KubeClient
    incidents: IncidentRepository
    clock: Clock
    config: WorkflowConfig
    pause: Pause
    prometheus: PrometheusClient | None

    def now(self) -> datetime:
        return self.clock.now()

    def health(self, incident: Incident) -> HealthScore:
        """The namespace's health score now (with Prometheus' parts when configured)."""
        return look(
            self.kube,
            incident.namespace,
            since=stamp(incident.created_at),
            prometheus=self.prometheus,
        )

    def wait_for_settle(self, incident: Incident) -> None:
        """Wait (bounded) until no pod of the namespace is on its way anywhere."""
        settled = wait_until_settled(
            self.kube,
            incident.namespace,
            pause=self.pause,
            timeout=self.config.settle_timeout,
            interval=self.config.poll_interval,
        )
        if not settled:
            self._say(incident, "the cluster was still moving at the settle timeout")

    def move(
        self, incident: Incident, to: IncidentState, *, message: str = "", **updates: object
    ) -> Incident:
        if not incident.can_move(to):
            raise RuntimeError(f"incident {incident.id}: {incident.state} → {to} is not a move")
        changed = incident.model_copy(update={**updates, "state": to, "updated_at": self.now()})
        # A cancel is one transaction: the open proposals withdrawn, no write of the incident
        # in flight, the incident stored. An approval or an execution of another process
        # (their moves are transactions too) lands wholly before it — and is seen here — or
        # after, on a withdrawn proposal, and is refused.
        with self.service.store.immediate():
            if to == St.CANCELLED:
                by = incident.cancel_requested or _AGENT
                self._withdraw_open(
                    incident, actor=by, why=f"incident {incident.id} was cancelled by {by}"
                )
                busy = self._in_flight(incident)
                if busy is not None:
                    raise WriteInFlight(
                        f"{busy.id} ({busy.intent}) is being carried out; the cancel of "
                        f"incident {incident.id} waits for it",
                        subject=incident.id,
                    )
            return self.incidents.save(
                changed,
                expected_version=incident.version,
                actor=_AGENT,
                message=message,
                previous=incident.state,
            )

    def update(self, incident: Incident, **updates: object) -> Incident:
        changed = incident.model_copy(update={**updates, "updated_at": self.now()})
        return self.incidents.save(changed, expected_version=incident.version, actor=_AGENT)

    # ------------------------------------------------------------------ begin and steps

    def begin_attempt(self, incident: Incident, candidate: Candidate) -> Incident:
        if incident.attempts or not incident.health_now:
            before = self.health(incident).to_dict()
        else:
            before = incident.health_now  # the first attempt: the look taken moments ago
        attempt = Attempt(
            number=len(incident.attempts) + 1,
            candidate=candidate,
            transaction_id=new_transaction_id(),
            health_before=before,
            started_at=self.now(),
        )
        incident = self.update(
            incident,
            attempts=[*incident.attempts, attempt],
            tried=[*incident.tried, candidate.key()],
        )
        self.incidents.note(
            incident,
            IncidentEventType.ATTEMPT,
            actor=_AGENT,
            message=f"attempt {attempt.number}: {candidate.intent}",
            data={
                "attempt": attempt.number,
                "candidate": candidate.model_dump(mode="json"),
                "health_before": attempt.health_before,
            },
        )
        return self.next_step(incident)

    def next_step(self, incident: Incident) -> Incident:
        """Propose the attempt's next step, or go verify when every step is done."""
        attempt = incident.current
        assert attempt is not None
        steps = attempt.candidate.steps
        while len(attempt.proposals) < len(steps):
            step = steps[len(attempt.proposals)]
            try:
                proposal = self.service.propose(
                    action=step.action,
                    kind=step.kind,
                    name=step.name,
                    namespace="" if step.kind == "Node" else incident.namespace,
                    params=step.params,
                    requester=_AGENT,
                    incident_id=incident.id,
                )
            except NoChange as why:
                self._say(incident, why.message)
                attempt = attempt.model_copy(update={"proposals": [*attempt.proposals, SKIPPED]})
                incident = self._with_attempt(incident, attempt)
                continue
            except StratusError as error:
                return self.end_attempt(incident, f"failed: {error.message}")
            attempt = attempt.model_copy(update={"proposals": [*attempt.proposals, proposal.id]})
            try:
                incident = self._with_attempt(incident, attempt)
            except StaleIncident:
                # A cancel (or a choice) landed while the step was proposed: the proposal is
                # recorded nowhere, so withdraw it; the next look proposes again if needed.
                with contextlib.suppress(StratusError):
                    self.service.cancel(
                        proposal.id, actor=_AGENT, reason="the incident changed meanwhile"
                    )
                raise
            return self._after_proposal(incident, proposal)
        if not _executed_steps(self, attempt):
            return self.end_attempt(incident, "no change: every object already looked as wanted")
        if incident.state == St.VERIFYING:
            return incident
        return self.move(incident, St.VERIFYING, message="waiting for the cluster to settle")

    def _after_proposal(self, incident: Incident, proposal: Proposal) -> Incident:
        if proposal.state == P.DENIED:
            key = incident.current.candidate.key() if incident.current else ""
            incident = self.update(
                incident,
                rejected=[*incident.rejected, (key, f"denied by policy: {proposal.reason}")],
            )
            return self.end_attempt(incident, f"denied by policy: {proposal.reason}")
        if proposal.state == P.APPROVED:
            return self._go(incident, St.EXECUTING, f"{proposal.intent} (allowed by policy)")
        return self._go(
            incident,
            St.AWAITING_APPROVAL,
            f"waiting for approval of {proposal.id}: {proposal.intent}",
        )

    # ------------------------------------------------------------------ waiting and executing

    def _await(self, incident: Incident) -> Incident | None:
        attempt = incident.current
        assert attempt is not None
        proposal, undoing = self._pending(attempt)
        if proposal is None:
            return self._go(incident, St.UNDOING if undoing else St.EXECUTING, "")
        if proposal.state == P.AWAITING_APPROVAL:
            if self.now() >= proposal.expires_at:
                self.service.expire()
                return self.incidents.get(incident.id)
            return None  # a human decides; nothing waits here
        if proposal.state in (P.APPROVED, P.EXECUTING, P.EXECUTED):
            return self._go(incident, St.UNDOING if undoing else St.EXECUTING, "")
        if proposal.state == P.SUPERSEDED:
            return self._replace(incident, proposal, undoing)
        why = _REFUSED.get(proposal.state, proposal.state.value)
        reason = f"{proposal.id} {why}" + (f": {proposal.reason}" if proposal.reason else "")
        if undoing:
            return self.move(
                incident,
                St.ESCALATED,
                message=f"the undo of attempt {attempt.number} was {why}; its changes remain "
                f"({reason})",
                reason="undo refused",
                attempts=[
                    *incident.attempts[:-1],
                    attempt.model_copy(
                        update={"outcome": f"undo {why}", "finished_at": self.now()}
                    ),
                ],
            )
        incident = self.update(
            incident, rejected=[*incident.rejected, (attempt.candidate.key(), reason)]
        )
        return self.end_attempt(incident, reason)

    def _execute(self, incident: Incident) -> Incident | None:
        attempt = incident.current
        assert attempt is not None
        proposal, undoing = self._pending(attempt)
        if proposal is None or proposal.state == P.EXECUTED:
            return self._undo(incident) if undoing else self.next_step(incident)
        try:
            self.service.execute(proposal.id, actor=_AGENT)
        except Superseded as moved:
            return self._replace(incident, self.service.get(proposal.id), undoing, moved.new)
        except (errors.LockHeld, errors.Unavailable, errors.OutcomeUnknown) as busy:
            self.incidents.note(
                incident,
                IncidentEventType.NOTE,
                actor=_AGENT,
                message=f"{proposal.id} must wait: {busy.message}",
            )
            return None
        except (StratusError, NotExecutable) as error:
            if undoing:
                return self.move(
                    incident,
                    St.ESCALATED,
                    message=f"undoing attempt {attempt.number} failed: {error.message}",
                    reason="undo failed",
                )
            return self.end_attempt(incident, f"failed: {error.message}")
        return self._undo(incident) if undoing else self.next_step(incident)

    def _replace(
        self,
        incident: Incident,
        old: Proposal,
        undoing: bool,
        new: Proposal | None = None,
    ) -> Incident | None:
        """A superseded proposal is followed by the one that replaces it (which may need a
        fresh approval, since the object or the policy moved)."""
        attempt = incident.current
        assert attempt is not None
        replacement = new or (self.service.get(old.superseded_by) if old.superseded_by else None)
        field = "undo_proposals" if undoing else "proposals"
        ids = list(getattr(attempt, field))
        ids[ids.index(old.id)] = replacement.id if replacement else SKIPPED
        incident = self._with_attempt(incident, attempt.model_copy(update={field: ids}))
        if replacement is None:
            return self._undo(incident) if undoing else self.next_step(incident)
        return self._after_proposal(incident, replacement)

    # ------------------------------------------------------------------ undoing

    def _undo(self, incident: Incident) -> Incident | None:
        """Undo the attempt's executed steps, last first, each through the service."""
        attempt = incident.current
        assert attempt is not None
        pending, undoing = self._pending(attempt)
        if not undoing:
            pending = None  # a forward step is not an undo to wait on
        if pending is not None and pending.state in (P.APPROVED, P.AWAITING_APPROVAL):
            state = St.UNDOING if pending.state == P.APPROVED else St.AWAITING_APPROVAL
            if state == St.UNDOING and incident.state == St.UNDOING:
                return self._execute_undo(incident)
            return self._go(incident, state, f"undo {pending.id}: {pending.intent}")
        if pending is not None and pending.state in _REFUSED:
            # Never ask again behind a person's back: a refused undo ends the automation.
            why = _REFUSED[pending.state]
            return self.move(
                incident,
                St.ESCALATED,
                message=f"the undo of attempt {attempt.number} was {why}; its changes remain "
                f"({pending.id})",
                reason="undo refused",
                attempts=[
                    *incident.attempts[:-1],
                    attempt.model_copy(
                        update={"outcome": f"undo {why}", "finished_at": self.now()}
                    ),
                ],
            )
        for proposal_id in reversed(attempt.proposals):
            original = self.service.get(proposal_id) if proposal_id else None
            if original is None or original.state != P.EXECUTED:
                continue
            if not original.undo_id:
                self.incidents.note(
                    incident,
                    IncidentEventType.NOTE,
                    actor=_AGENT,
                    message=f"{original.intent} cannot be undone (irreversible); left as is",
                )
                continue
            try:
                undo = self.service.propose_undo(
                    UndoRequest(entry_id=original.undo_id, incident_id=incident.id),
                    requester=_AGENT,
                )
            except StratusError as error:
                return self.move(
                    incident,
                    St.ESCALATED,
                    message=f"cannot undo {original.intent}: {error.message}",
                    reason="undo refused",
                )
            undos = [*attempt.undo_proposals, undo.id]
            attempt = attempt.model_copy(update={"undo_proposals": undos})
            incident = self._with_attempt(incident, attempt)
            if undo.state == P.DENIED:
                return self.move(
                    incident,
                    St.ESCALATED,
                    message=f"policy denies undoing {original.intent}: {undo.reason}",
                    reason="undo denied",
                )
            if undo.state == P.AWAITING_APPROVAL:
                return self._go(incident, St.AWAITING_APPROVAL, f"undo {undo.id}: {undo.intent}")
            incident = self._go(incident, St.UNDOING, f"undo {undo.id}: {undo.intent}")
            return self._execute_undo(incident)
        outcome = attempt.outcome or "undone"
        incident = self._with_attempt(
            incident, attempt.model_copy(update={"outcome": outcome, "finished_at": self.now()})
        )
        self.wait_for_settle(incident)  # look again only once the undo has rolled out
        if incident.cancel_requested:
            return self.move(
                incident,
                St.CANCELLED,
                message=f"cancelled by {incident.cancel_requested}; attempt {attempt.number} "
                "was undone",
                reason=f"cancelled by {incident.cancel_requested}",
            )
        return self.move(incident, St.PLANNING, message=f"attempt {attempt.number} undone")

    def _execute_undo(self, incident: Incident) -> Incident | None:
        return self._execute(incident)

    # ------------------------------------------------------------------ ends

    def end_attempt(self, incident: Incident, outcome: str) -> Incident:
        """The attempt stops short (refused, denied, failed): undo what it executed, if
        anything, else go plan the next candidate."""
        attempt = incident.current
        assert attempt is not None
        incident = self._with_attempt(incident, attempt.model_copy(update={"outcome": outcome}))
        self._say(incident, f"attempt {attempt.number}: {outcome}")
        if _executed_steps(self, attempt):
            return self._go(incident, St.UNDOING, f"undoing what attempt {attempt.number} did")
        incident = self._with_attempt(
            incident,
            attempt.model_copy(update={"outcome": outcome, "finished_at": self.now()}),
        )
        if incident.cancel_requested:
            return self.move(
                incident, St.CANCELLED, message=f"cancelled by {incident.cancel_requested}"
            )
        return self._go(incident, St.PLANNING, f"attempt {attempt.number}: {outcome}")

    def _cancel_now(self, incident: Incident) -> Incident | None:
        busy = self._wait_for_writes(incident)
        if busy is not None:
            self._say(incident, f"the cancel waits for {busy.id} ({busy.intent}) to finish")
            return None  # carried out by the next advance, once the write settled
        attempt = incident.current
        if incident.state == St.UNDOING:
            return self._undo(incident)
        if attempt is not None and not attempt.finished_at and attempt.undo_proposals:
            pending, _ = self._pending(attempt)
            if pending is not None and pending.state == P.AWAITING_APPROVAL:
                return None  # an undo waits for a human; the cancel completes after it
            # The undo was asked for already (by this cancel, or by TNR): carry it on — run
            # it, or end on its refusal — never ask again, never record the move again.
            return self._undo(incident)
        if attempt is not None and not attempt.finished_at:
            for proposal_id in attempt.proposals:  # never the undos: they clean up
                if not proposal_id:
                    continue
                proposal = self.service.get(proposal_id)
                if proposal.state in (P.AWAITING_APPROVAL, P.APPROVED):
                    # It may move on meanwhile; it is judged below by what it became.
                    # Withdrawn as every open proposal of a cancelled incident is: by whoever
                    # cancelled it, saying so (docs/workflow.md), never by Stratus's agent.
                    by = incident.cancel_requested or _AGENT
                    with contextlib.suppress(StratusError):
                        self.service.withdraw(
                            proposal.id,
                            incident_id=incident.id,
                            actor=by,
                            reason=f"incident {incident.id} was cancelled by {by}",
                        )
            executed = _executed_steps(self, attempt)
            if executed and _complete(self, attempt):
                return self._cancel_keeping(incident, attempt, executed)
            if executed:
                incident = self._with_attempt(
                    incident, attempt.model_copy(update={"outcome": "cancelled"})
                )
                return self._go(incident, St.UNDOING, "cancelled half-way: undoing the steps made")
        return self.move(
            incident,
            St.CANCELLED,
            message=f"cancelled by {incident.cancel_requested}",
            reason=f"cancelled by {incident.cancel_requested}",
        )

    def _cancel_keeping(
        self, incident: Incident, attempt: Attempt, executed: list[Proposal]
    ) -> Incident:
        """Every step of the attempt executed before the cancel (an approval won the race, or
        it was verifying): it is a whole action, not a half-done one. Its changes stay, on the
        undo stack like any write, and the record says which they are."""
        who = incident.cancel_requested
        undo = ", ".join(p.undo_id for p in executed if p.undo_id)
        steps = "; ".join(f"{p.intent} ({p.id})" for p in executed)
        return self.move(
            incident,
            St.CANCELLED,
            message=f"cancelled by {who}; attempt {attempt.number} was complete and stays, not "
            f"verified: {steps}" + (f" (undo entries: {undo})" if undo else ""),
            reason=f"cancelled by {who}",
            attempts=[
                *incident.attempts[:-1],
                attempt.model_copy(
                    update={
                        "outcome": "complete when cancelled; its changes stay (not verified)",
                        "finished_at": self.now(),
                    }
                ),
            ],
        )

    # ------------------------------------------------------------------ helpers

    def _withdraw_open(self, incident: Incident, *, actor: str, why: str) -> None:
        """Nothing of an ended incident stays open: every proposal of it still waiting or
        approved (one an answer approved while the cancel ran, one proposed by a move the
        cancel made stale, an undo a person asked for from a card) is withdrawn, whoever
        requested it, before the incident is stored as ended — before, so that no surface
        ever sees a cancelled incident with an approved proposal to run."""
        for proposal in self.service.by_incident(incident.id):
            if proposal.state in (P.AWAITING_APPROVAL, P.APPROVED):
                with contextlib.suppress(StratusError):  # it moved on; judged by what it is
                    self.service.withdraw(
                        proposal.id, incident_id=incident.id, actor=actor, reason=why
                    )

    def _in_flight(self, incident: Incident) -> Proposal | None:
        """A proposal of the incident being executed right now, if there is one."""
        return next(
            (p for p in self.service.by_incident(incident.id) if p.state == P.EXECUTING), None
        )

    def _wait_for_writes(self, incident: Incident) -> Proposal | None:
        """Wait (up to ``config.cancel_wait``) until no write of the incident is in flight;
        the one still in flight after that, or None."""
        deadline = time.monotonic() + self.config.cancel_wait
        while (busy := self._in_flight(incident)) is not None:
            if time.monotonic() >= deadline:
                return busy
            self.pause(self.config.poll_interval)
        return None

    def _pending(self, attempt: Attempt) -> tuple[Proposal | None, bool]:
        """The proposal the attempt waits on, and whether it is an undo."""
        if attempt.undo_proposals:
            last = self.service.get(attempt.undo_proposals[-1])
            if last.state != P.EXECUTED:
                return last, True
            return None, True
        if attempt.proposals and attempt.proposals[-1]:
            return self.service.get(attempt.proposals[-1]), False
        return None, False

    def _say(self, incident: Incident, message: str) -> None:
        self.incidents.note(incident, IncidentEventType.NOTE, actor=_AGENT, message=message)

    def _go(self, incident: Incident, to: IncidentState, message: str) -> Incident:
        if incident.state == to:
            return incident
        return self.move(incident, to, message=message)

    def _with_attempt(self, incident: Incident, attempt: Attempt) -> Incident:
        return self.update(incident, attempts=[*incident.attempts[:-1], attempt])


def _executed_steps(runner: AttemptRunner, attempt: Attempt) -> list[Proposal]:
    executed = []
    for proposal_id in attempt.proposals:
        if proposal_id:
            proposal = runner.service.get(proposal_id)
            if proposal.state == P.EXECUTED:
                executed.append(proposal)
    return executed


def _complete(runner: AttemptRunner, attempt: Attempt) -> bool:
    """Every step of the attempt was proposed and executed (or already looked as wanted)."""
    if len(attempt.proposals) < len(attempt.candidate.steps):
        return False
    return all(
        runner.service.get(proposal_id).state == P.EXECUTED
        for proposal_id in attempt.proposals
        if proposal_id
    )
