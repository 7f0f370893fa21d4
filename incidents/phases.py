"""The moves that look at the cluster: detect (the health at the start), diagnose and plan (a
fresh snapshot, the analyzers, the offline and model planners, what past incidents learned),
and verify an attempt (the health after it settled, judged against before).

Functions over the attempts' explicit dependencies (``incidents.moves.Deps``) and the planners; the
workflow calls them by the incident's state. Planners only supply a diagnosis and ranked
candidates: every move is decided here, in plain Python.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass
from typing import Any

from agents import snapshot as snapshots
from agents.analyzers import analyze
from agents.health import METRIC_PARTS, HealthScore, breakdown
from agents.model import Candidate, PlanResult, Usage
from agents.planner import Planner, PlanRequest
from agents.verify import Judgement, judge
from incidents import adoption, attempts, continuation, moves, plans, unfolding
from incidents.continuation import AttemptEnd
from incidents.memory import past_outcomes
from incidents.model import Incident, IncidentState
from incidents.moves import Deps
from incidents.repository import IncidentEventType
from store.clock import stamp
from tools.reads import ClusterReader

St = IncidentState


@dataclass(frozen=True)
class Planners:
    """The offline planner, and the model's when one is configured (it is asked first)."""

    offline: Planner
    llm: Planner | None = None


def detect(d: Deps, incident: Incident) -> Incident:
    health = moves.health(d, incident)
    health_dict = health.to_dict()
    d.incidents.note(
        incident,
        IncidentEventType.NOTE,
        actor=moves.AGENT,
        message=_health_line("health at start", health),
        data={"health": health_dict},
    )
    detected = None if health.healthy else d.clock.now()
    return moves.move(
        d,
        incident,
        St.DIAGNOSING,
        message="reading the namespace",
        health_at_start=health_dict,
        health_now=health_dict,
        detected_at=detected,
    )


def diagnose(d: Deps, planners: Planners, incident: Incident) -> Incident:
    snap = _look_again_while_moving(d, planners, incident)
    result = plan_for(d, planners, incident, snap)
    if result.diagnosis is None:
        health = moves.health(d, incident)
        if health.healthy:
            return moves.move(
                d,
                incident,
                St.RESOLVED,
                message="nothing is wrong: the namespace is healthy and no analyzer found a cause",
                reason="healthy",
                health_now=health.to_dict(),
                usage=usage_after(incident, result),
            )
        return moves.move(
            d,
            incident,
            St.ESCALATED,
            message="the namespace is unhealthy but no analyzer could name a cause: "
            + _health_line("health", health),
            reason="no diagnosis",
            health_now=health.to_dict(),
            usage=usage_after(incident, result),
        )
    return moves.move(
        d,
        incident,
        St.PLANNING,
        message=f"diagnosis: {result.diagnosis.summary}",
        diagnosis=result.diagnosis,
        candidates=result.candidates,
        detected_at=incident.detected_at or d.clock.now(),
        usage=usage_after(incident, result),
        planner=result.planner,
    )


def plan(d: Deps, planners: Planners, incident: Incident) -> Incident | None:
    # An MCP client's change waiting in the incident goes first: people were asked about it
    # already, and it is verified as an attempt of its own (docs/mcp.md).
    queued = continuation.queued_turn(incident, d.service.by_incident(incident.id))
    if queued is not None:
        return adoption.adopt(d, incident, queued)
    if not continuation.plans_own_fixes(incident):
        last = incident.current
        judged = f" (attempt {last.number}: {last.result or last.verdict})" if last else ""
        return moves.move(
            d,
            incident,
            St.ESCALATED,
            message=f"opened by {incident.requester}'s proposal{judged}; Stratus proposes no "
            "fixes of its own here: the agent may propose again, or a person takes over (Look "
            "again asks Stratus to diagnose it)",
            reason="agent's attempt ended",
        )
    if len(incident.attempts) >= incident.max_attempts:
        return moves.move(
            d,
            incident,
            St.ESCALATED,
            message=f"{len(incident.attempts)} attempts did not resolve it; a person "
            "should take over with what was learned",
            reason="attempts exhausted",
        )
    if incident.attempts:  # the cluster moved since the plan: look again
        result = plan_for(d, planners, incident)
        health = moves.health(d, incident)
        if result.diagnosis is None and incident.attempts[-1].verdict == "better":
            health = _wait_for_lagging_signals(d, incident, health)
        if health.healthy and result.diagnosis is None:
            return moves.move(
                d,
                incident,
                St.RESOLVED,
                message="the namespace is healthy",
                reason="mitigated",
                mitigated_at=incident.mitigated_at or d.clock.now(),
                health_now=health.to_dict(),
                usage=usage_after(incident, result),
            )
        # A look that names nothing (the cluster still moving, a symptom gone quiet) does
        # not throw away the hypotheses not tried yet.
        candidates = (
            result.candidates
            if result.diagnosis is not None
            else [c for c in incident.candidates if c.key() not in incident.tried]
        )
        incident = moves.update(
            d,
            incident,
            diagnosis=result.diagnosis or incident.diagnosis,
            candidates=candidates,
            usage=usage_after(incident, result),
        )
    refused = {key for key, _ in incident.rejected}
    done = set(incident.tried) | refused
    remaining = [c for c in incident.candidates if c.key() not in done]
    remaining.sort(key=lambda c: c.key() != incident.preferred)  # a person's pick first
    incident, remaining = _drop_unchanged(d, incident, remaining)
    if not remaining:
        found = incident.diagnosis
        message = (
            f"found {found.resource} ({found.category}): {found.summary}; but no catalog "
            "action fixes it, so a person should take over"
            if found is not None and not incident.attempts
            else "no candidate action is left to try; a person should take over"
        )
        return moves.move(d, incident, St.ESCALATED, message=message, reason="no candidates left")
    return attempts.begin_attempt(d, incident, remaining[0])


def _drop_unchanged(
    d: Deps, incident: Incident, remaining: list[Candidate]
) -> tuple[Incident, list[Candidate]]:
    """Skip, each with a note, the leading candidates whose every step would change nothing
    (``plans.changes_nothing``): they are never attempts, and are not offered again. Stops at
    the first that changes something — the one to try."""
    while remaining:
        why = plans.changes_nothing(
            d.service,
            remaining[0],
            namespace=incident.namespace,
            requester=moves.AGENT,
            cluster=incident.cluster,
        )
        if why is None:
            break
        skipped = remaining.pop(0)
        incident = moves.update(d, incident, tried=[*incident.tried, skipped.key()])
        moves.say(
            d, incident, f"skipped {skipped.intent!r}: it changes nothing ({why}); not an attempt"
        )
    return incident, remaining


def _look_again_while_moving(d: Deps, planners: Planners, incident: Incident) -> snapshots.Snapshot:
    """The snapshot to diagnose from. When a first, quiet look (the offline analysis) finds
    nothing to try while the namespace is still moving (a pod starting, a rollout under way),
    the fault may not have shown its cause yet: look again every poll interval until something
    can be tried, the namespace stops moving, or ``unfold_timeout`` passes. Only the last
    look is noted and planned in full (the model's too, when one is configured), so the
    thread never says "nothing can be done" about a moment that had not finished."""
    snap = snapshots.take(d.kube, incident.namespace, prometheus=d.prometheus)
    bound = d.config.unfold_timeout
    reasons = unfolding.moving(snap, now=d.clock.now())  # cheap: asked first
    if bound <= 0 or not reasons:
        return snap
    if planners.offline.plan(_request(d, incident, snap)).candidates:
        return snap
    d.incidents.note(
        incident,
        IncidentEventType.NOTE,
        actor=moves.AGENT,
        message=f"the namespace is still moving ({'; '.join(reasons)}); looking again for "
        f"up to {bound:g} s before concluding",
        data={"moving": reasons, "unfold_seconds": bound},
    )
    started = time.monotonic()
    found = False
    while time.monotonic() - started < bound:
        d.pause(d.config.poll_interval)
        snap = snapshots.take(d.kube, incident.namespace, prometheus=d.prometheus)
        found = bool(planners.offline.plan(_request(d, incident, snap)).candidates)
        reasons = unfolding.moving(snap, now=d.clock.now())
        if found or not reasons:
            break
    waited = time.monotonic() - started
    if found:
        still = "the cause has shown itself"
    else:
        still = f"still moving ({'; '.join(reasons)})" if reasons else "it has settled"
    d.incidents.note(
        incident,
        IncidentEventType.NOTE,
        actor=moves.AGENT,
        message=f"looked again for {waited:.0f} s: {still}",
        data={"moving": reasons, "waited_seconds": round(waited, 2)},
    )
    return snap


def _wait_for_lagging_signals(d: Deps, incident: Incident, health: HealthScore) -> HealthScore:
    """The last attempt helped and no analyzer names anything any more. When all that is
    left is failing requests in the workloads' latest log lines, those lines may predate the
    fix (new requests have not pushed them out yet): look again for a settle window before
    calling the namespace unhealthy, rather than escalating on the fix's own echo."""
    looks = int(d.config.settle_timeout / max(d.config.poll_interval, 0.01))
    for _ in range(min(looks, 100)):
        if not _lagging_only(health):
            break
        d.pause(d.config.poll_interval)
        health = moves.health(d, incident)
    return health


def _parts(before: dict[str, Any], after: dict[str, Any]) -> str:
    """What the scores are made of: the parts after (or before, once nothing is wrong), and
    why a score above 0 counts as healthy when it does."""
    shown, was = breakdown(after), ""
    if not shown:
        shown, was = breakdown(before), "was "
    if not shown:
        return ""
    parts = ", ".join(f"{p.name.replace('_', ' ')} {p.count}" for p in shown)
    lenient = (
        "; healthy: only warnings and request rates, which lag a fix, remain"
        if after.get("healthy") and after.get("total")
        else ""
    )
    return f": {was}{parts}{lenient}"


def verify(d: Deps, incident: Incident) -> Incident:
    attempt = incident.current
    assert attempt is not None
    before = HealthScore.from_dict(attempt.health_before)
    result = judge(
        d.kube,
        incident.namespace,
        before,
        since=stamp(attempt.started_at),
        pause=d.pause,
        timeout=d.config.settle_timeout,
        interval=d.config.poll_interval,
        prometheus=d.prometheus,
        written=[(p.target.kind, p.target.name) for p in attempts.executed_steps(d, attempt)],
    )
    after = result.after.to_dict()
    warned = result.after.parts.get("new_warning_events", 0)
    # The score counts new warnings, the verdict does not (``agents.health.verdict``): say so,
    # or "same (score 4 → 5)" reads as a contradiction.
    caveats = (
        "; new warning events are left out of the verdict"
        if result.verdict != "healthy" and warned > before.parts.get("new_warning_events", 0)
        else ""
    )
    caveats += (
        f"; not judged yet: {', '.join(result.not_restarted)} read what the attempt wrote only "
        "when they restart, and had not restarted since (a crash back-off)"
        if result.not_restarted
        else ""
    )
    revealed, caused = _blame(result)
    d.incidents.note(
        incident,
        IncidentEventType.VERIFIED,
        actor=moves.AGENT,
        message=f"attempt {attempt.number}: {result.verdict} (score {before.total} → "
        f"{result.after.total}{_parts(attempt.health_before, after)}"
        f"{'' if result.settled else ', still moving at the timeout'}){caveats}"
        + _judged(revealed, caused),
        data={
            "attempt": attempt.number,
            "verdict": result.verdict,
            "before": attempt.health_before,
            "after": after,
            "waited_seconds": round(result.waited, 2),
            "settled": result.settled,
            "not_restarted": list(result.not_restarted),
            "revealed": revealed,
            "caused": caused,
        },
    )
    recorded = list(incident.attempts)
    recorded[-1] = attempt.model_copy(
        update={
            "health_after": after,
            "verdict": result.verdict,
            "revealed": revealed,
            "caused": caused,
            "failed_pods": _running(d, incident, caused),
        }
    )
    end = continuation.attempt_end(executed=True, verdict=result.verdict, revealed=bool(revealed))
    # The outcome is one word whether or not a step stopped the attempt short: why it stopped
    # stays in ``stopped`` (issue 18 F2: the free text hid a fix from re-opening and memory).
    if end == AttemptEnd.RESOLVE:
        recorded[-1] = recorded[-1].model_copy(
            update={"outcome": "fixed", "finished_at": d.clock.now()}
        )
        queued = continuation.queued_turn(incident, d.service.by_incident(incident.id))
        if queued is not None:
            return moves.move(
                d,
                incident,
                St.PLANNING,
                message=f"attempt {attempt.number} left the namespace healthy; "
                f"{queued.requester}'s {queued.id} ({queued.intent}) has its turn next",
                attempts=recorded,
                health_now=after,
                mitigated_at=incident.mitigated_at or d.clock.now(),
            )
        # The credit goes to the attempt that made it healthy, not to a queued change that
        # ran after it and kept it so (an outside tester saw the agent's scale credited).
        first = next((a for a in recorded if a.verdict == "healthy"), recorded[-1])
        credit = (
            f"resolved by attempt {attempt.number}: {attempt.candidate.intent}"
            if first.number == attempt.number
            else f"resolved by attempt {first.number}: {first.candidate.intent}; attempt "
            f"{attempt.number} ({attempt.candidate.intent}) kept it healthy"
        )
        return moves.move(
            d,
            incident,
            St.RESOLVED,
            message=credit
            + (
                f" (stopped short: {attempt.stopped}; what it did is kept)"
                if attempt.stopped
                else ""
            ),
            attempts=recorded,
            reason="mitigated",
            mitigated_at=incident.mitigated_at or d.clock.now(),
            health_now=after,
        )
    if end == AttemptEnd.REPLAN:
        recorded[-1] = recorded[-1].model_copy(
            update={"outcome": "improved", "finished_at": d.clock.now()}
        )
        helped = (
            f"attempt {attempt.number} fixed its target and revealed a fault already there "
            f"behind it ({', '.join(revealed)}); what it did is kept; diagnosing that next"
            if revealed
            else f"attempt {attempt.number} helped but the namespace is not healthy yet; "
            + ("what it did is kept; " if attempt.stopped else "")
            + "looking again"
        )
        return moves.move(
            d, incident, St.PLANNING, message=helped, attempts=recorded, health_now=after
        )
    why = "made things worse" if result.verdict == "worse" else "changed nothing for the better"
    kept = attempts.cause_fixes(d, attempt)
    undoing = "undoing it" if not kept else "undoing what it did, except its fix of the cause"
    return moves.move(
        d,
        incident,
        St.UNDOING,
        message=f"attempt {attempt.number} {why}; {undoing}",
        attempts=recorded,
        health_now=after,
    )


def _blame(result: Judgement) -> tuple[list[str], list[str]]:
    """(revealed, caused) for a look that did not find the namespace better: whose the new
    failures are decides between keeping the attempt and undoing it. A better or healthy
    verdict needs no blame."""
    found = result.attribution
    if found is None or result.verdict not in ("worse", "same"):
        return [], []
    if found.revealed_only:
        return list(found.revealed), []
    return [], list(found.caused)


def _judged(revealed: list[str], caused: list[str]) -> str:
    """What the verification line says of whose the new failures are."""
    if revealed:
        return (
            f"; it fixed its target and revealed a fault already there behind it "
            f"({', '.join(revealed)}): the fix is kept"
        )
    if caused:
        return f"; it broke something: new failures of {', '.join(caused)}"
    return ""


# ------------------------------------------------------------------ planning


def plan_for(
    d: Deps, planners: Planners, incident: Incident, snap: snapshots.Snapshot | None = None
) -> PlanResult:
    """A fresh look (or ``snap``, taken moments ago) and a plan (the LLM planner when
    configured, else offline)."""
    if snap is None:
        snap = snapshots.take(d.kube, incident.namespace, prometheus=d.prometheus)
    base = _request(d, incident, snap)
    findings = base.findings
    history = base.history
    offline = planners.offline.plan(base)
    result = offline
    if planners.llm is not None:
        result = _llm_plan(planners.llm, PlanRequest(**{**base.__dict__, "offline": offline}))
    if result.diagnosis is not None and history:
        result = result.model_copy(
            update={"diagnosis": result.diagnosis.model_copy(update={"history": history})}
        )
    d.incidents.note(
        incident,
        IncidentEventType.FINDINGS,
        actor=moves.AGENT,
        message=f"{len(findings)} finding(s)",
        data={"findings": [f.model_dump(mode="json") for f in findings[:20]]},
    )
    if result.diagnosis is not None:
        d.incidents.note(
            incident,
            IncidentEventType.DIAGNOSED,
            actor=moves.AGENT,
            message=f"{result.diagnosis.resource} ({result.diagnosis.category}): "
            f"{result.diagnosis.summary}",
            data={"diagnosis": result.diagnosis.model_dump(mode="json")},
        )
    d.incidents.note(
        incident,
        IncidentEventType.PLANNED,
        actor=moves.AGENT,
        message=f"{len(result.candidates)} candidate(s) from the {result.planner} planner",
        data={
            "planner": result.planner,
            "candidates": [c.model_dump(mode="json") for c in result.candidates],
            "notes": result.notes,
        },
    )
    for note in result.notes:
        d.incidents.note(incident, IncidentEventType.NOTE, actor=moves.AGENT, message=note)
    return result


def _request(d: Deps, incident: Incident, snap: snapshots.Snapshot) -> PlanRequest:
    """What a planner is asked: the snapshot (with the pods the incident saw failing), the
    analyzers' findings, what was tried."""
    snap = dataclasses.replace(snap, seen_failing=seen_failing(incident))
    past, history = past_outcomes(d.incidents, incident)
    return PlanRequest(
        snapshot=snap,
        findings=analyze(snap),
        offline=PlanResult(diagnosis=None),
        question=incident.question,
        tried=list(incident.tried),
        rejected=list(incident.rejected),
        history=history,
        past=past,
        reader=ClusterReader(d.kube) if d.kubes else None,  # a fleet: the incident's cluster
    )


def seen_failing(incident: Incident) -> dict[str, str]:
    """The pods whose new failures undone attempts of the incident may have caused (pod name →
    why), as evidence against the template they ran: a rollback to a template that failed in
    this incident is not planned again, under whatever number the rollbacks gave it since."""
    found: dict[str, str] = {}
    for attempt in incident.attempts:
        if attempt.result != "undone":
            continue
        for pod in attempt.failed_pods:
            found[pod] = (
                f"its pods failed while attempt {attempt.number} of this incident ran "
                f"(pod/{pod}: verdict {attempt.verdict})"
            )
    return found


def _running(d: Deps, incident: Incident, caused: list[str]) -> list[str]:
    """The pods among ``caused`` that a node took (crash-looping, never ready, or failing to
    pull their image): a pod no node would take — a taint, a full node — says nothing of its
    template."""
    wanted = {c.removeprefix("pod/") for c in caused if c.startswith("pod/")}
    if not wanted:
        return []
    pods = d.kube.list("v1", "Pod", namespace=incident.namespace)
    return sorted(
        p["metadata"]["name"]
        for p in pods
        if p["metadata"]["name"] in wanted and (p.get("spec") or {}).get("nodeName")
    )


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


def usage_after(incident: Incident, result: PlanResult) -> Usage:
    usage = result.usage
    return Usage(
        model_calls=incident.usage.model_calls + usage.model_calls,
        prompt_tokens=incident.usage.prompt_tokens + usage.prompt_tokens,
        completion_tokens=incident.usage.completion_tokens + usage.completion_tokens,
        context_tokens=max(incident.usage.context_tokens, usage.context_tokens),
    )


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
