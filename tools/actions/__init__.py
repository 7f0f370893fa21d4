"""The typed write-action catalog: the only writes Stratus can make.

Each action names its target, declares its risk, whether it can be undone, and says in one
sentence what it does; ``plan(current)`` is pure (see ``tools.actions.base``). There is no
free-form shell and no free-form kubectl. The actions live in modules by area — workloads,
network (Services, NetworkPolicies), config (ConfigMaps, Secrets), cluster (nodes, pods,
HPAs, quotas, claims) — and this module is the catalog every caller imports.
"""

from __future__ import annotations

from typing import Any

from pydantic import ValidationError

from tools.actions.base import WORKLOADS, Action, Risk, WritePlan
from tools.actions.cluster import (
    Cordon,
    DeleteJob,
    DeletePod,
    DeletePvc,
    DeleteResourceQuota,
    PatchHpa,
    RemoveTaint,
    SetQuota,
    Uncordon,
)
from tools.actions.config import PatchConfigMapKey, RestoreConfigMapKey, RestoreSecretKey
from tools.actions.network import CreateService, DeleteNetworkPolicy, PatchService, ServicePort
from tools.actions.workloads import (
    HASH_LABEL,
    REVISION,
    RolloutRestart,
    RolloutUndo,
    Scale,
    SetCommand,
    SetEnv,
    SetImage,
    SetNodeSelector,
    SetResources,
)
from tools.errors import Invalid

__all__ = [
    "CATALOG",
    "HASH_LABEL",
    "POLICY_ACTIONS",
    "REVISION",
    "UNDO",
    "WORKLOADS",
    "Action",
    "Cordon",
    "CreateService",
    "DeleteJob",
    "DeleteNetworkPolicy",
    "DeletePod",
    "DeletePvc",
    "DeleteResourceQuota",
    "PatchConfigMapKey",
    "PatchHpa",
    "PatchService",
    "RemoveTaint",
    "RestoreConfigMapKey",
    "RestoreSecretKey",
    "Risk",
    "RolloutRestart",
    "RolloutUndo",
    "Scale",
    "ServicePort",
    "SetCommand",
    "SetEnv",
    "SetImage",
    "SetNodeSelector",
    "SetQuota",
    "SetResources",
    "Uncordon",
    "WritePlan",
    "build",
]

CATALOG: dict[str, type[Action]] = {
    cls.name: cls
    for cls in (
        Scale,
        RolloutRestart,
        RolloutUndo,
        SetImage,
        SetEnv,
        SetResources,
        SetCommand,
        SetNodeSelector,
        PatchService,
        CreateService,
        PatchConfigMapKey,
        RestoreConfigMapKey,
        RestoreSecretKey,
        PatchHpa,
        Cordon,
        Uncordon,
        RemoveTaint,
        DeletePod,
        DeleteJob,
        DeleteNetworkPolicy,
        SetQuota,
        DeleteResourceQuota,
        DeletePvc,
    )
}


def build(name: str, params: dict[str, Any]) -> Action:
    """An action from its catalog name and parameters, with one clear error if they are wrong."""
    cls = CATALOG.get(name)
    if cls is None:
        raise Invalid(f"unknown action {name!r}; known actions: {', '.join(sorted(CATALOG))}")
    if "kind" not in params:
        params = {**params, "kind": cls.kinds[0]}
    try:
        action = cls.model_validate(params)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc']) or 'action'}: {e['msg']}" for e in exc.errors()
        )
        raise Invalid(f"{name}: {problems}") from exc
    action.ref()  # the target's kind, name and namespace are valid before anything else
    return action


# Undoing an earlier write is decided by policy as an action of its own, so a rule about
# ``scale`` (a freeze, say) does not block undoing a scale unless a rule names ``undo`` too.
UNDO = "undo"
POLICY_ACTIONS: tuple[str, ...] = (*CATALOG, UNDO)
