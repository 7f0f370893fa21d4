"""The offline planner: analyzers → diagnosis → remedies → ranked candidates, with no model.

It is deterministic and cheap, so it runs on every look: the LLM planner starts from its answer
and falls back to it. Candidates are ranked by the remedies' own order (roll back before
patching a field, patch before guessing), adjusted by incident memory — an action that fixed
the same mechanism before moves up, one that was undone or refused moves down — and a
candidate already tried in this incident is dropped. The alternatives stay on the result so a
person can pick another.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from agents.analyzers import _workloads as w
from agents.analyzers import analyze
from agents.diagnose import diagnose
from agents.model import Candidate, Diagnosis, Finding, PlanResult, Step
from agents.planner import PlanRequest
from agents.planner.unchanged import unchanged
from agents.remedies import escalation, remedies_for
from agents.snapshot import Snapshot

NAME = "offline"
MAX_CANDIDATES = 8
# How much one remembered outcome moves a candidate (scores are about 0..1).
MEMORY_WEIGHT = {"fixed": 0.3, "undone": -0.3, "rejected": -0.2}

Outcome = tuple[str, str, str]


def remembered(candidate: Candidate, past: Iterable[Outcome]) -> tuple[float, list[str]]:
    """The score change incident memory gives a candidate, and why."""
    delta = 0.0
    notes = []
    for mechanism, key, outcome in past:
        if key != candidate.key() or (mechanism and mechanism != candidate.mechanism):
            continue
        delta += MEMORY_WEIGHT.get(outcome, 0.0)
        notes.append(outcome)
    if not notes:
        return 0.0, []
    counts = ", ".join(f"{o} {notes.count(o)} time(s)" for o in sorted(set(notes)))
    return delta, [f"incident memory: the same action on the same mechanism was {counts} before"]


def _ranked(
    candidates: list[Candidate], past: Sequence[Outcome], skip: set[str]
) -> list[Candidate]:
    adjusted: list[Candidate] = []
    for candidate in candidates:
        # Two findings on one resource (a policy that blocks both the callee and DNS) may
        # propose the same action: it is one candidate.
        if candidate.key() in skip or any(a.key() == candidate.key() for a in adjusted):
            continue
        delta, notes = remembered(candidate, past)
        why = "; ".join([candidate.why, *notes]) if notes else candidate.why
        adjusted.append(
            candidate.model_copy(update={"score": round(candidate.score + delta, 4), "why": why})
        )
    return sorted(adjusted, key=lambda c: (-c.score, c.key()))


def candidates_for(
    diagnoses: list[Diagnosis],
    snapshot: Snapshot,
    *,
    tried: Iterable[str] = (),
    past: Sequence[Outcome] = (),
) -> list[Candidate]:
    """Candidates of every diagnosis, the first diagnosis's first, without repeats."""
    tried = list(tried)
    skip = set(tried)
    chosen: list[Candidate] = []
    for diagnosis in diagnoses:
        own: list[Candidate] = []
        for finding in _root_findings(diagnosis):
            own += remedies_for(finding, snapshot)
        ranked = _ranked(own, past, skip)
        skip.update(c.key() for c in ranked)
        chosen += ranked
    # Undoing a rollback to revision M renumbers M's ReplicaSet (a rollback makes the revision
    # it returns to the newest, the undo then makes the bad one newer still): the next look
    # proposes the same template again under a new number. That repeat goes after every fresh
    # idea — it changed nothing, so another fault may be masking it — and stays on the list
    # for when nothing else is left.
    again = renumbered_rollbacks(snapshot, tried)
    return sorted(chosen, key=lambda c: c.key() in again)[:MAX_CANDIDATES]


_ROLLBACK_KEY = re.compile(r"^rollout-undo Deployment/(\S+) \[\('to_revision', (\d+)\)\]$")


def renumbered_rollbacks(snapshot: Snapshot, tried: Iterable[str]) -> set[str]:
    """Keys of the rollbacks that return to a template already tried under another number: a
    tried rollback of deployment D to revision M, M gone from D's revisions, is now the newest
    revision older than D's current one."""
    found = set()
    for key in tried:
        match = _ROLLBACK_KEY.match(key)
        deployment = snapshot.get("Deployment", match[1]) if match else None
        if match is None or deployment is None:
            continue
        found_revisions = w.revisions(snapshot, deployment)
        annotations = deployment["metadata"].get("annotations") or {}
        current = int(annotations.get(w.REVISION, "0") or 0)
        older = [r for r in found_revisions if r < current]
        if int(match[2]) in found_revisions or not older:
            continue
        step = Step(
            action="rollout-undo",
            kind="Deployment",
            name=match[1],
            params={"to_revision": max(older)},
        )
        found.add(step.key())
    return found


def _root_findings(diagnosis: Diagnosis) -> list[Finding]:
    """The findings on the diagnosed resource (the others are what it explains)."""
    return [
        f
        for f in diagnosis.findings
        if (f.resource.kind, f.resource.name) == (diagnosis.resource.kind, diagnosis.resource.name)
    ]


def plan_findings(
    snapshot: Snapshot,
    findings: list[Finding],
    *,
    tried: Iterable[str] = (),
    past: Sequence[Outcome] = (),
) -> PlanResult:
    diagnoses = diagnose(findings, snapshot)
    if not diagnoses:
        return PlanResult(diagnosis=None, planner=NAME)
    candidates, skipped = _changing(
        candidates_for(diagnoses, snapshot, tried=tried, past=past), snapshot
    )
    notes = [f"also: {d.resource} ({d.category}): {d.summary}" for d in diagnoses[1:4]]
    notes += skipped
    if not candidates:
        what = next(
            filter(None, (escalation.manual(f) for f in _root_findings(diagnoses[0]))), None
        )
        notes.append(
            "no catalog action fixes this; a person has to" + (f": {what}" if what else "")
        )
    return PlanResult(diagnosis=diagnoses[0], candidates=candidates, planner=NAME, notes=notes)


def _changing(candidates: list[Candidate], snapshot: Snapshot) -> tuple[list[Candidate], list[str]]:
    """The candidates that would change something, and a note for each one that would not
    (``unchanged``): never an attempt."""
    kept: list[Candidate] = []
    notes: list[str] = []
    for candidate in candidates:
        why = unchanged(candidate, snapshot)
        if why is None:
            kept.append(candidate)
        else:
            notes.append(f"skipped {candidate.intent!r}: it changes nothing ({why})")
    return kept, notes


def plan_offline(
    snapshot: Snapshot, *, tried: Iterable[str] = (), past: Sequence[Outcome] = ()
) -> PlanResult:
    """Analyze the snapshot and plan: a diagnosis and ranked candidates, or nothing."""
    return plan_findings(snapshot, analyze(snapshot), tried=tried, past=past)


class OfflinePlanner:
    """The ``Planner`` the workflow uses when no model is configured (and as the fallback)."""

    name = NAME

    def plan(self, request: PlanRequest) -> PlanResult:
        refused = [key for key, _reason in request.rejected]
        return plan_findings(
            request.snapshot,
            list(request.findings),
            tried=[*request.tried, *refused],
            past=request.past,
        )
