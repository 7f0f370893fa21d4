"""Faults and scenarios as declarative YAML, and the injector that applies them through the API.

A *fault* is a list of API mutations (patch, create, delete, restart) with parameters, applied
as a user or a bad deploy would. A *scenario* names an app, the faults to inject with their
parameters, the faulty resources and root-cause category (for scoring diagnosis), extra oracle
checks, and a known fix as kubectl commands. The format is documented in docs/scenarios.md.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from importlib import resources as pkg_resources
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from lab.cluster.api import ApiService
from lab.cluster.errors import ApiError
from lab.cluster.resources import by_kind

LAB_DIR = Path(str(pkg_resources.files("lab")))
FAULTS_DIR = LAB_DIR / "faults"
SCENARIOS_DIR = LAB_DIR / "scenarios"
_PLACEHOLDER = re.compile(r"^\{(\w+)\}$")


class ScenarioError(Exception):
    """A fault or scenario file is invalid, or names something that does not exist."""


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class ResourceRef(_Strict):
    kind: str
    name: str


class PatchStep(_Strict):
    kind: str
    name: str
    type: Literal["json", "merge", "strategic"] = "strategic"
    body: Any


class DeleteStep(_Strict):
    kind: str
    name: str


class Step(_Strict):
    patch: PatchStep | None = None
    create: dict[str, Any] | None = None
    delete: DeleteStep | None = None
    restart: ResourceRef | None = None
    settle: Literal[True] | None = None  # run the cluster to steady state before the next step
    # Let this many seconds of cluster time pass (timers run, events older than the API
    # server's one-hour TTL expire): "an hour later, someone …".
    wait: float | None = Field(default=None, gt=0, le=7 * 24 * 3600)


class Param(_Strict):
    description: str = ""
    default: Any = None


class Fault(_Strict):
    name: str
    description: str
    category: str
    params: dict[str, Param] = Field(default_factory=dict)
    targets: list[ResourceRef] = Field(default_factory=list)
    steps: list[Step]


class FaultUse(_Strict):
    fault: str
    params: dict[str, Any] = Field(default_factory=dict)


class RootCause(_Strict):
    category: str
    resources: list[ResourceRef]


class Check(_Strict):
    """A fault-specific oracle check on one field of one object."""

    kind: str
    name: str
    path: str = ""
    equals: Any = None
    not_equals: Any = None
    exists: bool | None = None


class Oracle(_Strict):
    checks: list[Check] = Field(default_factory=list)


class FixStep(_Strict):
    kubectl: list[str]
    stdin: str | None = None


class Scenario(_Strict):
    name: str
    app: str
    namespace: str
    description: str
    faults: list[FaultUse] = Field(default_factory=list)
    root_cause: RootCause | None = None
    oracle: Oracle = Field(default_factory=Oracle)
    fix: list[FixStep] = Field(default_factory=list)
    # The right outcome: mitigated, or — where no catalog action can fix the fault — an
    # escalation that says what a person should do (the oracle then stays unmitigated), or —
    # for changes that harm nothing (a harmless rollout, capacity added) — nothing at all.
    expected: Literal["mitigated", "escalated", "healthy"] = "mitigated"

    @property
    def is_noop(self) -> bool:
        """Nothing wrong to fix: nothing injected, or only changes that harm nothing. Any
        proposal on it is a false positive."""
        return not self.faults or self.expected == "healthy"


def _load_yaml(path: Path) -> Any:
    try:
        return yaml.safe_load(path.read_text())
    except yaml.YAMLError as exc:
        raise ScenarioError(f"{path}: invalid YAML: {exc}") from exc


_Model = TypeVar("_Model", bound=BaseModel)


def _validated(model: type[_Model], path: Path) -> _Model:
    try:
        return model.model_validate(_load_yaml(path))
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise ScenarioError(f"{path}: {problems}") from exc


def _dirs(directory: Path | Sequence[Path]) -> list[Path]:
    return [directory] if isinstance(directory, Path) else list(directory)


def fault_dirs(pack: Path | None = None) -> list[Path]:
    """Where faults are looked up: a scenario pack's ``faults/`` first, then the bundled ones."""
    return ([Path(pack) / "faults"] if pack is not None else []) + [FAULTS_DIR]


def find_fault(name: str, directory: Path | Sequence[Path] = FAULTS_DIR) -> Path | None:
    return next(
        (d / f"{name}.yaml" for d in _dirs(directory) if (d / f"{name}.yaml").is_file()), None
    )


def find_scenario(name: str, directory: Path | Sequence[Path] = SCENARIOS_DIR) -> Path | None:
    if name.endswith(".yaml"):
        return Path(name) if Path(name).is_file() else None
    return next(
        (d / f"{name}.yaml" for d in _dirs(directory) if (d / f"{name}.yaml").is_file()), None
    )


def load_fault(name: str, directory: Path | Sequence[Path] = FAULTS_DIR) -> Fault:
    path = find_fault(name, directory)
    if path is None:
        known = ", ".join(sorted({p.stem for d in _dirs(directory) for p in d.glob("*.yaml")}))
        raise ScenarioError(f'unknown fault "{name}"; known faults: {known}')
    return _validated(Fault, path)


def load_scenario(
    name: str,
    directory: Path | Sequence[Path] = SCENARIOS_DIR,
    faults: Path | Sequence[Path] | None = None,
) -> Scenario:
    """A scenario by name (or path); its faults are looked up in ``faults``, by default the
    scenario directory's ``faults/`` and then the bundled library."""
    path = find_scenario(name, directory)
    if path is None:
        raise ScenarioError(f'unknown scenario "{name}"; run "stratus lab scenarios" for the list')
    scenario = _validated(Scenario, path)
    for use in scenario.faults:
        load_fault(use.fault, fault_dirs(path.parent) if faults is None else faults)
    return scenario


def list_scenarios(directory: Path = SCENARIOS_DIR) -> list[Scenario]:
    return [load_scenario(p.stem, directory) for p in sorted(directory.glob("*.yaml"))]


def list_faults(directory: Path | Sequence[Path] = FAULTS_DIR) -> list[Fault]:
    """Every fault in the directories; an earlier directory's fault hides a later namesake."""
    seen: dict[str, Path] = {}
    for folder in _dirs(directory):
        for path in sorted(folder.glob("*.yaml")):
            seen.setdefault(path.stem, folder)
    return [load_fault(name, seen[name]) for name in sorted(seen)]


def scenario_request(name: str, pack: Path | None = None) -> dict[str, Any]:
    """What ``POST /lab/v1/scenarios/{name}/inject`` carries for a scenario outside the
    bundled library: the scenario and the faults it uses, read here, validated there."""
    dirs = [Path(pack), SCENARIOS_DIR] if pack is not None else [SCENARIOS_DIR]
    path = find_scenario(name, dirs)
    if path is None:
        raise ScenarioError(f'unknown scenario "{name}"; run "stratus lab scenarios" for the list')
    scenario = load_scenario(name, dirs)
    used = fault_dirs(path.parent)
    return {
        "scenario": scenario.model_dump(mode="json"),
        "faults": {
            use.fault: load_fault(use.fault, used).model_dump(mode="json")
            for use in scenario.faults
        },
    }


def from_request(body: dict[str, Any]) -> tuple[Scenario, dict[str, Fault]]:
    """The scenario and faults a client sent (see ``scenario_request``)."""
    try:
        scenario = Scenario.model_validate(body["scenario"])
        faults = {
            str(name): Fault.model_validate(doc) for name, doc in (body.get("faults") or {}).items()
        }
    except (ValidationError, KeyError, AttributeError) as exc:
        raise ScenarioError(f"invalid scenario in the request: {exc}") from exc
    for use in scenario.faults:
        if use.fault not in faults:
            faults[use.fault] = load_fault(use.fault)
    return scenario, faults


def substitute(value: Any, params: dict[str, Any]) -> Any:
    """Replace ``{param}`` placeholders; a whole-string placeholder keeps the value's type."""
    if isinstance(value, str):
        whole = _PLACEHOLDER.match(value)
        if whole and whole[1] in params:
            return params[whole[1]]
        try:
            return value.format_map(params) if "{" in value else value
        except (KeyError, IndexError, ValueError) as exc:
            raise ScenarioError(f"missing fault parameter in {value!r}: {exc}") from exc
    if isinstance(value, list):
        return [substitute(v, params) for v in value]
    if isinstance(value, dict):
        return {str(substitute(k, params)): substitute(v, params) for k, v in value.items()}
    return value


def resolve_params(fault: Fault, given: dict[str, Any]) -> dict[str, Any]:
    unknown = set(given) - set(fault.params)
    if unknown:
        raise ScenarioError(f"fault {fault.name} has no parameter(s) {', '.join(sorted(unknown))}")
    resolved = {}
    for name, param in fault.params.items():
        if name in given:
            resolved[name] = given[name]
        elif param.default is not None:
            resolved[name] = param.default
        else:
            raise ScenarioError(
                f"fault {fault.name} needs parameter {name!r} ({param.description})"
            )
    return resolved


_PATCH_TYPES = {
    "json": "application/json-patch+json",
    "merge": "application/merge-patch+json",
    "strategic": "application/strategic-merge-patch+json",
}


def apply_fault(
    api: ApiService,
    fault: Fault,
    namespace: str,
    params: dict[str, Any],
    now: str,
    settle: Callable[[], object] | None = None,
    wait: Callable[[float], object] | None = None,
) -> list[str]:
    """Apply a fault's steps through the API; returns one line per mutation made. A
    ``settle`` step runs ``settle`` (the cluster to steady state) before the next step; a
    ``wait`` step lets that much cluster time pass."""
    values = resolve_params(fault, params)
    done: list[str] = []
    for raw in fault.steps:
        step = Step.model_validate(substitute(raw.model_dump(), values))
        if step.settle:
            if settle is not None:
                settle()
            done.append("settled")
            continue
        if step.wait is not None:
            if wait is not None:
                wait(step.wait)
            done.append(f"waited {step.wait:g}s")
            continue
        try:
            done.append(_apply_step(api, step, namespace, now))
        except ApiError as error:
            raise ScenarioError(f"fault {fault.name}: {error.message}") from error
    return done


def _apply_step(api: ApiService, step: Step, namespace: str, now: str) -> str:
    if step.patch is not None:
        rt = by_kind(step.patch.kind)
        api.patch(
            rt,
            namespace,
            step.patch.name,
            json.dumps(step.patch.body).encode(),
            _PATCH_TYPES[step.patch.type],
        )
        return f"patched {rt.singular}/{step.patch.name}"
    if step.create is not None:
        rt = by_kind(step.create["kind"])
        created = api.create(rt, namespace if rt.namespaced else "", step.create)
        return f"created {rt.singular}/{created['metadata']['name']}"
    if step.delete is not None:
        rt = by_kind(step.delete.kind)
        api.delete(rt, namespace if rt.namespaced else "", step.delete.name)
        return f"deleted {rt.singular}/{step.delete.name}"
    if step.restart is not None:
        rt = by_kind(step.restart.kind)
        body = {
            "spec": {
                "template": {
                    "metadata": {"annotations": {"kubectl.kubernetes.io/restartedAt": now}}
                }
            }
        }
        api.patch(
            rt, namespace, step.restart.name, json.dumps(body).encode(), _PATCH_TYPES["strategic"]
        )
        return f"restarted {rt.singular}/{step.restart.name}"
    raise ScenarioError("a fault step must be one of patch, create, delete, restart, settle, wait")
