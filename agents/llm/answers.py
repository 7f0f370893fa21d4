"""What the models must answer, and what survives of it.

The answer models are the JSON schemas the agents are held to (OpenAI structured output:
every field required, no free-form objects, so action parameters travel as a JSON string).
Parsing an answer is not trusting it: :func:`to_diagnosis` and :func:`to_candidates` turn
answers into the shared model, and keep only what the catalog allows —

- an action that is not in ``tools.actions.CATALOG`` is dropped;
- parameters are validated by ``tools.actions.build`` exactly as the proposal service will;
- the target must exist in the snapshot, in the incident's namespace (the model names a kind
  and a name, never a namespace);
- a candidate already tried or rejected by a person is not offered again.

Each drop is explained in a note, which the workflow shows in the incident's events.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from agents.llm.telemetry import clean
from agents.model import Candidate, Category, Diagnosis, Evidence, Finding, ResourceKey, Step
from agents.snapshot import Snapshot
from tools import actions, errors

MAX_CANDIDATES = 5
_SET_BY_US = ("kind", "target", "namespace")
_PLACEHOLDER_STAMP = "1970-01-01T00:00:00Z"  # stamped for real by the proposal service


class _Answer(BaseModel):
    model_config = ConfigDict(extra="forbid")


class EvidenceAnswer(_Answer):
    source: str = Field(description="event, log, spec, status, revision or metrics")
    ref: str = Field(description="the object it was read from, e.g. pod/geo-7d9f-abc")
    text: str = Field(description="the fact, quoted as read")


class DiagnosisAnswer(_Answer):
    healthy: bool = Field(description="true only if nothing in the namespace is wrong")
    kind: str = Field(description="kind of the faulty resource, e.g. Deployment or Service")
    name: str = Field(description="name of the faulty resource")
    category: Category
    mechanism: str = Field(description="short id of how it breaks, e.g. service-target-port")
    summary: str = Field(description="one or two sentences a person can check")
    evidence: list[EvidenceAnswer]


class StepAnswer(_Answer):
    action: str = Field(description="a catalog action name")
    kind: str = Field(description="the target's kind")
    name: str = Field(description="the target's name")
    params_json: str = Field(
        description='the action\'s parameters as a JSON object, e.g. {"replicas": 2}'
    )


class CandidateAnswer(_Answer):
    steps: list[StepAnswer] = Field(description="1 to 4 catalog actions applied as one attempt")
    intent: str = Field(description="what the attempt does, in one sentence")
    why: str = Field(description="why it ranks here: reversibility, risk, evidence")


class MitigationAnswer(_Answer):
    candidates: list[CandidateAnswer] = Field(description="best first, at most 5")


class InvalidAnswer(ValueError):
    """The answer parses but cannot be used (it names nothing that exists)."""


@dataclass
class Vetted:
    candidates: list[Candidate] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def _exists(snapshot: Snapshot, kind: str, name: str) -> bool:
    return snapshot.get(kind, name) is not None


def to_diagnosis(answer: DiagnosisAnswer, snapshot: Snapshot, findings: list[Finding]) -> Diagnosis:
    if not _exists(snapshot, answer.kind, answer.name):
        raise InvalidAnswer(
            f"the diagnosis names {answer.kind}/{answer.name}, which is not in namespace "
            f"{snapshot.namespace}; name a resource that exists"
        )
    namespace = "" if answer.kind == "Node" else snapshot.namespace
    resource = ResourceKey(kind=answer.kind, name=answer.name, namespace=namespace)
    related = [f for f in findings if f.resource == resource] or findings[:3]
    return Diagnosis(
        resource=resource,
        category=answer.category,
        mechanism=clean(answer.mechanism, 60) or "unknown",
        summary=clean(answer.summary, 400),
        evidence=[
            Evidence(source=clean(e.source, 20), ref=clean(e.ref, 120), text=clean(e.text, 300))
            for e in answer.evidence[:6]
        ],
        findings=related,
        source="llm",
    )


def _step(answer: StepAnswer, snapshot: Snapshot) -> Step:
    """A catalog step, or ``errors.Invalid`` saying why not."""
    cls = actions.CATALOG.get(answer.action)
    if cls is None:
        raise errors.Invalid(f"{clean(answer.action, 60)!r} is not a catalog action")
    try:
        params = json.loads(answer.params_json or "{}")
    except ValueError as exc:
        raise errors.Invalid(f"{answer.action}: params_json is not JSON") from exc
    if not isinstance(params, dict):
        raise errors.Invalid(f"{answer.action}: params_json is not a JSON object")
    params = {k: v for k, v in params.items() if k not in _SET_BY_US}
    values: dict[str, Any] = {
        **params,
        "kind": answer.kind,
        "target": answer.name,
        "namespace": snapshot.namespace,
    }
    if cls is actions.RolloutRestart:
        values.setdefault("restarted_at", _PLACEHOLDER_STAMP)
    built = actions.build(answer.action, values)
    if not _exists(snapshot, answer.kind, answer.name):
        raise errors.Invalid(
            f"{answer.action}: {answer.kind}/{clean(answer.name, 80)} does not exist in "
            f"namespace {snapshot.namespace}"
        )
    kept = built.model_dump(mode="json", exclude=set(_SET_BY_US), exclude_unset=True)
    if kept.get("restarted_at") == _PLACEHOLDER_STAMP:
        kept.pop("restarted_at")
    return Step(action=answer.action, kind=answer.kind, name=answer.name, params=kept)


def to_candidates(
    answer: MitigationAnswer,
    snapshot: Snapshot,
    *,
    mechanism: str,
    evidence: list[Evidence],
    excluded: set[str],
) -> Vetted:
    """The answer's candidates that are catalog actions on objects that exist, best first."""
    vetted = Vetted()
    for rank, proposed in enumerate(answer.candidates[:MAX_CANDIDATES]):
        try:
            if not 1 <= len(proposed.steps) <= 4:
                raise errors.Invalid(f"{len(proposed.steps)} steps (1 to 4 allowed)")
            steps = [_step(s, snapshot) for s in proposed.steps]
        except errors.ToolError as exc:
            vetted.notes.append(f"dropped the model's candidate {rank + 1}: {clean(exc, 200)}")
            continue
        candidate = Candidate(
            steps=steps,
            intent=clean(proposed.intent, 300),
            why=clean(proposed.why, 300),
            evidence=evidence[:4],
            mechanism=mechanism,
            score=float(100 - rank),
        )
        if candidate.key() in excluded:
            vetted.notes.append(
                f"dropped the model's candidate {rank + 1}: {candidate.key()} was already tried "
                "or rejected"
            )
            continue
        if any(c.key() == candidate.key() for c in vetted.candidates):
            continue
        vetted.candidates.append(candidate)
    if len(answer.candidates) > MAX_CANDIDATES:
        vetted.notes.append(
            f"kept the model's first {MAX_CANDIDATES} of {len(answer.candidates)} candidates"
        )
    return vetted
