"""What the incident workflow reasons with: findings, diagnoses and candidate actions.

These are plain pydantic values so they can be stored with an incident, shown on a card,
given to a model as JSON and validated when a model gives them back.

- A **Finding** is one thing an analyzer saw, named by *mechanism* (how it breaks, e.g. an
  OOM kill or a Service whose targetPort nothing listens on), with the resource the analyzer
  believes is at fault, where the symptom showed, and evidence that cites its source.
- A **Diagnosis** is the workflow's answer to "what is wrong": the faulty resource, the
  root-cause category, a sentence, the evidence, and the findings it rests on.
- A **Candidate** is a remedy: one or more catalog actions applied as one attempt (one undo
  transaction), with its intent, why it ranks where it does, and the evidence for it.
"""

from __future__ import annotations

import enum
from typing import Any

from pydantic import BaseModel, ConfigDict, Field


class _Value(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class Category(enum.StrEnum):
    """Root-cause categories (the ones the scenario oracles and AIOpsLab/ITBench use)."""

    AUTHENTICATION = "authentication"
    BAD_DEPLOY = "bad-deploy"
    CAPACITY = "capacity"
    CONFIGURATION = "configuration"
    HEALTH_CHECK = "health-check"
    NETWORK = "network-misconfiguration"
    NETWORK_POLICY = "network-policy"
    RESOURCES = "resources"
    SCHEDULING = "scheduling"
    STORAGE = "storage"


class ResourceKey(_Value):
    kind: str
    name: str
    namespace: str = ""  # empty for cluster-scoped objects (nodes)

    def __str__(self) -> str:
        return f"{self.kind}/{self.name}"


class Evidence(_Value):
    """One observed fact and where it came from (``event``, ``log``, ``spec``, ``status``,
    ``revision``, ``metrics``, ``memory``), so a person can check it."""

    source: str
    ref: str  # the object it was read from, e.g. "pod/geo-7d9f-abc" or "deployment/geo"
    text: str  # quoted as read (bounded), never an instruction to anyone


class Finding(_Value):
    analyzer: str  # which analyzer saw it
    mechanism: str  # stable id of how it breaks, e.g. "oom-killed", "service-target-port"
    category: Category
    resource: ResourceKey  # what the analyzer believes is at fault
    symptoms: list[ResourceKey] = Field(default_factory=list)  # where it shows
    summary: str
    evidence: list[Evidence] = Field(default_factory=list)
    severity: int = 2  # 1 minor … 3 breaks callers
    confidence: float = 0.8  # 0..1: how sure the analyzer is this is a cause, not a symptom
    # Mechanism-specific facts the planner needs (container name, the port pods listen on, the
    # revision to roll back to …). Documented by the analyzer that sets them.
    facts: dict[str, Any] = Field(default_factory=dict)


class Diagnosis(_Value):
    resource: ResourceKey
    category: Category
    mechanism: str
    summary: str
    evidence: list[Evidence] = Field(default_factory=list)
    findings: list[Finding] = Field(default_factory=list)
    # Past incidents on the same resource or mechanism (incident memory), as short lines.
    history: list[str] = Field(default_factory=list)
    source: str = "offline"  # offline | llm


class Step(_Value):
    """One catalog action of a candidate (what ``ProposalService.propose`` takes)."""

    action: str
    kind: str
    name: str
    params: dict[str, Any] = Field(default_factory=dict)

    def key(self) -> str:
        return f"{self.action} {self.kind}/{self.name} {sorted(self.params.items())}"


class Candidate(_Value):
    steps: list[Step] = Field(min_length=1, max_length=4)
    intent: str
    why: str = ""  # why it ranks where it does (reversibility, history, risk)
    evidence: list[Evidence] = Field(default_factory=list)
    mechanism: str = ""  # the finding it remedies
    score: float = 0.0  # higher is tried first

    def key(self) -> str:
        return " + ".join(step.key() for step in self.steps)


class Usage(_Value):
    """What a planner spent: model calls and tokens (zero for the offline planner)."""

    model_calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    context_tokens: int = 0  # the telemetry context's size, counted with the tokenizer


class PlanResult(_Value):
    diagnosis: Diagnosis | None  # None: nothing is wrong (or nothing the analyzers can name)
    candidates: list[Candidate] = Field(default_factory=list)  # best first
    planner: str = "offline"
    notes: list[str] = Field(default_factory=list)  # e.g. "the model timed out; offline used"
    usage: Usage = Field(default_factory=Usage)
