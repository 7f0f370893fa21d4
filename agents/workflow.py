"""The incident workflow: a persisted state machine that the surfaces advance.

detecting → diagnosing → planning → awaiting_approval → executing → verifying → resolved,
with undoing → planning (next hypothesis) when an attempt made things worse or changed nothing,
and escalated or cancelled as the other ends. Every move is plain Python here; planners only
supply a diagnosis and ranked candidates, and every write is a proposal through the proposal
service — there is no second gate.

``advance`` runs moves until the incident must wait for a human or ends. Nothing waits on a
person inside a coroutine: the incident is stored after every move, and a click (or a
restart) calls ``advance`` again, which picks up from the stored state. One process advances
an incident at a time (a lease); at most one incident per namespace is open.
"""

from __future__ import annotations

import time
import unicodedata
from collections.abc import Callable
from datetime import datetime, timedelta

from agents import snapshot as snapshots
from agents.analyzers import analyze
from agents.attempts import AttemptRunner, WriteInFlight
from agents.health import METRIC_PARTS, HealthScore
from agents.incident import (
    Incident,
    IncidentState,
    new_incident_id,
)
from agents.incident_store import IncidentEventType, IncidentRepository, StaleIncident
from agents.memory import past_outcomes
from agents.model import PlanResult, Usage
from agents.planner import Planner, PlanRequest
from agents.settings import WorkflowConfig
from agents.verify import Pause, judge
from policies import authority
from policies.approvals import ApprovalRequest
from proposals.model import ProposalState
from proposals.service import ProposalService
from store.clock import stamp
from store.locks import LeaseLocks, holder_name
from tools import errors, names
from tools.k8s import KubeClient
from tools.objects import ObjectRef
from tools.prometheus import PrometheusClient

St = IncidentState
AGENT = "agent:stratus"  # who proposes the workflow's actions
RECHECKS = 3  # rounds of ``advance`` when the incident was changed while we held its lease


class IncidentWorkflow(AttemptRunner):
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

    # ------------------------------------------------------------------ use-cases

    def start(
        self, namespace: str, *, requester: str, question: str = "", source: str = "cli"
    ) -> tuple[Incident, bool]:
        """Open an incident on ``namespace``, or join the one already open there.
        Returns (incident, joined)."""
        names.check_namespace(namespace)  # a bad or empty one is named as a namespace
        if self.kube.find(ObjectRef("Namespace", namespace)) is None:
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
        )
        self.release_parked_in(namespace)
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

    def advance(self, incident_id: str, *, budget: int = 100, wait: float = 0.0) -> Incident:
        """Make moves until the incident waits for a human or ends (or another process is
        advancing it, in which case it is returned as it is). ``wait``: how long to wait for
        that other process to let go first."""
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
            admins=tuple(self.service.policy().policy.defaults.approvers),
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
        waiting = [p for p in (attempt.proposals if attempt else []) if p][-1:]
        for proposal_id in waiting:
            if self.service.get(proposal_id).state == ProposalState.AWAITING_APPROVAL:
                self.service.answer(proposal_id, user=actor, choice="reject", reason=reason)
        self.incidents.note(incident, IncidentEventType.NOTE, actor=actor, message=reason)
        return incident

    def park(self, incident_id: str, *, reason: str, actor: str) -> Incident:
        """The incident could not reach the surface it was asked from (its Slack thread could
        not be posted): it stays where it is, visibly parked with ``reason``, until a retry
        succeeds (``unpark``) or ``config.park_seconds`` pass (``release_parked``)."""
        return self._set_parked(incident_id, reason=reason, actor=actor)

    def unpark(self, incident_id: str, *, actor: str) -> Incident:
        """A retry reached the surface: the incident carries on (the caller advances it)."""
        return self._set_parked(incident_id, reason="", actor=actor)

    def release_parked(self) -> list[Incident]:
        """End every incident parked for longer than ``config.park_seconds``: escalated (a
        person asked and was never answered), its namespace free for a new investigation."""
        now = self.clock.now()
        ended = []
        for incident in self.incidents.recent(limit=500, open_only=True):
            if _parked_too_long(incident, now, self.config.park_seconds):
                released = self._end_parked(incident)
                if released is not None:
                    ended.append(released)
        return ended

    def release_parked_in(self, namespace: str) -> None:
        """End the namespace's open incident if it was parked past the bound, so that a new
        investigation (a command's, an alert's) opens its own instead of joining it."""
        existing = self.incidents.open_for(namespace)
        if existing is not None and _parked_too_long(
            existing, self.clock.now(), self.config.park_seconds
        ):
            self._end_parked(existing)

    def _end_parked(self, incident: Incident) -> Incident | None:
        minutes = max(1, round(self.config.park_seconds / 60))
        self._withdraw_open(
            incident, actor=AGENT, why=f"incident {incident.id} ended: its thread was never posted"
        )
        try:
            return self.move(
                incident,
                St.ESCALATED,
                message=f"parked for {minutes} min without reaching its thread "
                f"({incident.parked}); ended so that the namespace can be investigated again",
                reason="unreachable",
            )
        except StaleIncident:
            return None  # someone retried or moved it meanwhile: judged next time

    def _set_parked(self, incident_id: str, *, reason: str, actor: str) -> Incident:
        for _ in range(8):
            incident = self.incidents.get(incident_id)
            if not incident.is_open or incident.parked == reason:
                return incident
            now = self.clock.now()
            updates: dict[str, object] = {"parked": reason, "updated_at": now}
            if not reason:
                updates["parked_at"] = None
            elif incident.parked_at is None:
                updates["parked_at"] = now
            try:
                saved = self.incidents.save(
                    incident.model_copy(update=updates),
                    expected_version=incident.version,
                    actor=actor,
                )
            except StaleIncident:
                continue
            self.incidents.note(
                saved,
                IncidentEventType.NOTE,
                actor=actor,
                message=f"parked: {reason}" if reason else "its thread was posted; carrying on",
            )
            return saved
        return self.incidents.get(incident_id)

    # ------------------------------------------------------------------ moves

    def _step(self, incident: Incident) -> Incident | None:
        if incident.cancel_requested:
            return self._cancel_now(incident)
        handler: dict[IncidentState, Callable[[Incident], Incident | None]] = {
            St.DETECTING: self._detect,
            St.DIAGNOSING: self._diagnose,
            St.PLANNING: self._plan,
            St.AWAITING_APPROVAL: self._await,
            St.EXECUTING: self._execute,
            St.VERIFYING: self._verify,
            St.UNDOING: self._undo,
        }
        return handler[incident.state](incident)

    def _detect(self, incident: Incident) -> Incident:
        health = self.health(incident)
        health_dict = health.to_dict()
        self.incidents.note(
            incident,
            IncidentEventType.NOTE,
            actor=AGENT,
            message=_health_line("health at start", health),
            data={"health": health_dict},
        )
        detected = None if health.healthy else self.clock.now()
        return self.move(
            incident,
            St.DIAGNOSING,
            message="reading the namespace",
            health_at_start=health_dict,
            health_now=health_dict,
            detected_at=detected,
        )

    def _diagnose(self, incident: Incident) -> Incident:
        result = self.plan_for(incident)
        if result.diagnosis is None:
            health = self.health(incident)
            if health.healthy:
                return self.move(
                    incident,
                    St.RESOLVED,
                    message="nothing is wrong: the namespace is healthy and no analyzer found a "
                    "cause",
                    reason="healthy",
                    health_now=health.to_dict(),
                    usage=self.usage_after(incident, result),
                )
            return self.move(
                incident,
                St.ESCALATED,
                message="the namespace is unhealthy but no analyzer could name a cause: "
                + _health_line("health", health),
                reason="no diagnosis",
                health_now=health.to_dict(),
                usage=self.usage_after(incident, result),
            )
        return self.move(
            incident,
            St.PLANNING,
            message=f"diagnosis: {result.diagnosis.summary}",
            diagnosis=result.diagnosis,
            candidates=result.candidates,
            detected_at=incident.detected_at or self.clock.now(),
            usage=self.usage_after(incident, result),
            planner=result.planner,
        )

    def _plan(self, incident: Incident) -> Incident | None:
        if len(incident.attempts) >= incident.max_attempts:
            return self.move(
                incident,
                St.ESCALATED,
                message=f"{len(incident.attempts)} attempts did not resolve it; a person "
                "should take over with what was learned",
                reason="attempts exhausted",
            )
        if incident.attempts:  # the cluster moved since the plan: look again
            result = self.plan_for(incident)
            health = self.health(incident)
            if result.diagnosis is None and incident.attempts[-1].outcome == "improved":
                health = self._wait_for_lagging_signals(incident, health)
            if health.healthy and result.diagnosis is None:
                return self.move(
                    incident,
                    St.RESOLVED,
                    message="the namespace is healthy",
                    reason="mitigated",
                    mitigated_at=incident.mitigated_at or self.clock.now(),
                    health_now=health.to_dict(),
                    usage=self.usage_after(incident, result),
                )
            # A look that names nothing (the cluster still moving, a symptom gone quiet) does
            # not throw away the hypotheses not tried yet.
            candidates = (
                result.candidates
                if result.diagnosis is not None
                else [c for c in incident.candidates if c.key() not in incident.tried]
            )
            incident = self.update(
                incident,
                diagnosis=result.diagnosis or incident.diagnosis,
                candidates=candidates,
                usage=self.usage_after(incident, result),
            )
        refused = {key for key, _ in incident.rejected}
        done = set(incident.tried) | refused
        remaining = [c for c in incident.candidates if c.key() not in done]
        remaining.sort(key=lambda c: c.key() != incident.preferred)  # a person's pick first
        if not remaining:
            return self.move(
                incident,
                St.ESCALATED,
                message="no candidate action is left to try; a person should take over",
                reason="no candidates left",
            )
        return self.begin_attempt(incident, remaining[0])

    def _wait_for_lagging_signals(self, incident: Incident, health: HealthScore) -> HealthScore:
        """The last attempt helped and no analyzer names anything any more. When all that is
        left is failing requests in the workloads' latest log lines, those lines may predate the
        fix (new requests have not pushed them out yet): look again for a settle window before
        calling the namespace unhealthy, rather than escalating on the fix's own echo."""
        looks = int(self.config.settle_timeout / max(self.config.poll_interval, 0.01))
        for _ in range(min(looks, 100)):
            if not _lagging_only(health):
                break
            self.pause(self.config.poll_interval)
            health = self.health(incident)
        return health

    def _verify(self, incident: Incident) -> Incident:
        attempt = incident.current
        assert attempt is not None
        before = HealthScore.from_dict(attempt.health_before)
        result = judge(
            self.kube,
            incident.namespace,
            before,
            since=stamp(attempt.started_at),
            pause=self.pause,
            timeout=self.config.settle_timeout,
            interval=self.config.poll_interval,
            prometheus=self.prometheus,
        )
        after = result.after.to_dict()
        self.incidents.note(
            incident,
            IncidentEventType.VERIFIED,
            actor=AGENT,
            message=f"attempt {attempt.number}: {result.verdict} (score {before.total} → "
            f"{result.after.total}{'' if result.settled else ', still moving at the timeout'})",
            data={
                "attempt": attempt.number,
                "verdict": result.verdict,
                "before": attempt.health_before,
                "after": after,
                "waited_seconds": round(result.waited, 2),
                "settled": result.settled,
            },
        )
        attempts = list(incident.attempts)
        attempts[-1] = attempt.model_copy(update={"health_after": after, "verdict": result.verdict})
        if result.verdict == "healthy":
            attempts[-1] = attempts[-1].model_copy(
                update={"outcome": "fixed", "finished_at": self.clock.now()}
            )
            return self.move(
                incident,
                St.RESOLVED,
                message=f"resolved by attempt {attempt.number}: {attempt.candidate.intent}",
                attempts=attempts,
                reason="mitigated",
                mitigated_at=self.clock.now(),
                health_now=after,
            )
        if result.verdict == "better":
            attempts[-1] = attempts[-1].model_copy(
                update={"outcome": "improved", "finished_at": self.clock.now()}
            )
            return self.move(
                incident,
                St.PLANNING,
                message=f"attempt {attempt.number} helped but the namespace is not healthy "
                "yet; looking again",
                attempts=attempts,
                health_now=after,
            )
        why = "made things worse" if result.verdict == "worse" else "changed nothing for the better"
        return self.move(
            incident,
            St.UNDOING,
            message=f"attempt {attempt.number} {why}; undoing it",
            attempts=attempts,
            health_now=after,
        )

    # ------------------------------------------------------------------ planning

    def plan_for(self, incident: Incident) -> PlanResult:
        """A fresh look and a plan (the LLM planner when configured, else offline)."""
        snap = snapshots.take(self.kube, incident.namespace, prometheus=self.prometheus)
        findings = analyze(snap)
        past, history = past_outcomes(self.incidents, incident)
        base = PlanRequest(
            snapshot=snap,
            findings=findings,
            offline=PlanResult(diagnosis=None),
            question=incident.question,
            tried=list(incident.tried),
            rejected=list(incident.rejected),
            history=history,
            past=past,
        )
        offline = self.offline.plan(base)
        result = offline
        if self.llm is not None:
            result = self._llm_plan(self.llm, PlanRequest(**{**base.__dict__, "offline": offline}))
        if result.diagnosis is not None and history:
            result = result.model_copy(
                update={"diagnosis": result.diagnosis.model_copy(update={"history": history})}
            )
        self.incidents.note(
            incident,
            IncidentEventType.FINDINGS,
            actor=AGENT,
            message=f"{len(findings)} finding(s)",
            data={"findings": [f.model_dump(mode="json") for f in findings[:20]]},
        )
        if result.diagnosis is not None:
            self.incidents.note(
                incident,
                IncidentEventType.DIAGNOSED,
                actor=AGENT,
                message=f"{result.diagnosis.resource} ({result.diagnosis.category}): "
                f"{result.diagnosis.summary}",
                data={"diagnosis": result.diagnosis.model_dump(mode="json")},
            )
        self.incidents.note(
            incident,
            IncidentEventType.PLANNED,
            actor=AGENT,
            message=f"{len(result.candidates)} candidate(s) from the {result.planner} planner",
            data={
                "planner": result.planner,
                "candidates": [c.model_dump(mode="json") for c in result.candidates],
                "notes": result.notes,
            },
        )
        for note in result.notes:
            self.incidents.note(incident, IncidentEventType.NOTE, actor=AGENT, message=note)
        return result

    @staticmethod
    def _llm_plan(llm: Planner, request: PlanRequest) -> PlanResult:
        """The model planner's answer; whatever escapes it is the offline plan with a note —
        an incident must never stay in ``diagnosing`` because a model misbehaved."""
        try:
            return llm.plan(request)
        except Exception as exc:  # a failing planner is a fallback, never a stop
            why = " ".join(str(exc).split())[:200] or type(exc).__name__
            return request.offline.model_copy(
                update={
                    "notes": [
                        *request.offline.notes,
                        f"the {llm.name} planner failed ({type(exc).__name__}: {why}); the "
                        "offline plan is used",
                    ]
                }
            )

    @staticmethod
    def usage_after(incident: Incident, result: PlanResult) -> Usage:
        usage = result.usage
        return Usage(
            model_calls=incident.usage.model_calls + usage.model_calls,
            prompt_tokens=incident.usage.prompt_tokens + usage.prompt_tokens,
            completion_tokens=incident.usage.completion_tokens + usage.completion_tokens,
            context_tokens=max(incident.usage.context_tokens, usage.context_tokens),
        )


def _parked_too_long(incident: Incident, now: datetime, bound: float) -> bool:
    return (
        incident.is_open
        and bool(incident.parked)
        and incident.parked_at is not None
        and now - incident.parked_at >= timedelta(seconds=bound)
    )


def printable(text: str) -> str:
    """Text a person typed, safe to show anywhere: control characters (a carriage return can
    fake a line on a terminal) and bidirectional overrides become spaces."""
    return "".join(" " if unicodedata.category(ch) in ("Cc", "Cf") else ch for ch in text).strip()


def _health_line(label: str, health: HealthScore) -> str:
    parts = ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in health.parts.items() if v)
    return f"{label}: score {health.total}" + (f" ({parts})" if parts else " (healthy)")


def _lagging_only(health: HealthScore) -> bool:
    """Unhealthy only through failing requests read from the latest log lines."""
    return not health.healthy and all(
        count == 0
        for name, count in health.parts.items()
        if name not in ("failing_requests", "new_warning_events", *METRIC_PARTS)
    )
