"""Writes a real API server refuses: immutable fields, update-only rules, undecodable data.

Registered as an admission hook (it runs on create and update, after defaulting), it answers
with the Status a real server gives:

- a Pod update that changes anything in ``spec`` other than container images,
  ``activeDeadlineSeconds`` (set or lowered), tolerations (additions only),
  ``terminationGracePeriodSeconds`` (negative → 1) and ``schedulingGates`` (removals) → 422;
- a PersistentVolumeClaim whose spec changes other than ``resources.requests`` of a bound
  claim → 422; a shrink → 422; growth of a claim whose StorageClass lacks
  ``allowVolumeExpansion`` → 403 (the PersistentVolumeClaimResize admission plugin);
- a StatefulSet spec change outside replicas, ordinals, template, updateStrategy,
  persistentVolumeClaimRetentionPolicy and minReadySeconds → 422;
- a ConfigMap or Secret marked ``immutable: true`` whose data (or the mark) changes → 422,
  a Secret's ``type`` change → 422;
- Secret ``data`` that is not base64 → 400, worded as the JSON decoder words it;
- an HPA whose maxReplicas is below minReplicas (or below 1) → 422.
"""

from __future__ import annotations

import copy
import json
from typing import Any

from lab.cluster import quantity
from lab.cluster.errors import ApiError, invalid
from lab.cluster.resources import ResourceType
from lab.cluster.store import ObjectStore

_POD_UPDATE_FORBIDDEN = (
    "Forbidden: pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)"
)
_STS_UPDATABLE = (
    "replicas",
    "ordinals",
    "template",
    "updateStrategy",
    "persistentVolumeClaimRetentionPolicy",
    "minReadySeconds",
)
_STS_FORBIDDEN = (
    "Forbidden: updates to statefulset spec for fields other than 'replicas', 'ordinals', "
    "'template', 'updateStrategy', 'persistentVolumeClaimRetentionPolicy' and "
    "'minReadySeconds' are forbidden"
)
_PVC_FORBIDDEN = (
    "Forbidden: spec is immutable after creation except resources.requests and "
    "volumeAttributesClassName for bound claims"
)
_IMMUTABLE_SET = "Forbidden: field is immutable when `immutable` is set"
_B64 = set(b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/")


def _go_value(value: Any) -> str:
    return json.dumps(value) if isinstance(value, str) else str(value)


def base64_error(text: str) -> int | None:
    """The offset Go's ``base64.StdEncoding`` reports for ``text``, or None when it decodes."""
    src = text.encode()
    si, n = 0, len(src)
    while True:
        j = 0
        while j < 4:
            if si == n:
                if j == 0:
                    return None
                return si - j
            byte = src[si]
            si += 1
            if byte in _B64:
                j += 1
                continue
            if byte in b"\r\n":
                continue
            if byte != ord("="):
                return si - 1
            if j in (0, 1):
                return si - 1
            if j == 2:
                while si < n and src[si] in b"\r\n":
                    si += 1
                if si == n:
                    return n
                if src[si] != ord("="):
                    return si - 1
                si += 1
            while si < n and src[si] in b"\r\n":
                si += 1
            return si if si < n else None


def _tolerations_only_added(old: list[Any], new: list[Any]) -> bool:
    remaining = list(new)
    for toleration in old:
        if toleration in remaining:
            remaining.remove(toleration)
            continue
        # A toleration may only gain a shorter tolerationSeconds.
        match = next(
            (
                t
                for t in remaining
                if isinstance(t, dict)
                and isinstance(toleration, dict)
                and {k: v for k, v in t.items() if k != "tolerationSeconds"}
                == {k: v for k, v in toleration.items() if k != "tolerationSeconds"}
            ),
            None,
        )
        if match is None:
            return False
        remaining.remove(match)
    return True


def _pod_spec_problem(old: dict[str, Any], new: dict[str, Any]) -> bool:
    """Whether ``new`` changes a pod spec field no update may change."""
    before, after = copy.deepcopy(old), copy.deepcopy(new)
    for group in ("containers", "initContainers", "ephemeralContainers"):
        olds, news = before.get(group) or [], after.get(group) or []
        if len(olds) != len(news):
            return True
        for a, b in zip(olds, news, strict=True):
            if isinstance(a, dict) and isinstance(b, dict):
                a.pop("image", None)
                b.pop("image", None)
    old_deadline, new_deadline = (
        before.pop("activeDeadlineSeconds", None),
        after.pop("activeDeadlineSeconds", None),
    )
    if old_deadline is not None and (new_deadline is None or new_deadline > old_deadline):
        return True
    if not _tolerations_only_added(
        before.pop("tolerations", None) or [], after.pop("tolerations", None) or []
    ):
        return True
    old_grace, new_grace = (
        before.pop("terminationGracePeriodSeconds", None),
        after.pop("terminationGracePeriodSeconds", None),
    )
    if old_grace != new_grace and not (
        isinstance(old_grace, int) and old_grace < 0 and new_grace == 1
    ):
        return True
    old_gates = before.pop("schedulingGates", None) or []
    new_gates = after.pop("schedulingGates", None) or []
    if any(g not in old_gates for g in new_gates):
        return True
    return before != after


class UpdateRules:
    """The admission hook; ``store`` is read for StorageClasses."""

    def __init__(self, store: ObjectStore) -> None:
        self.store = store

    def __call__(
        self, operation: str, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        name = str((obj.get("metadata") or {}).get("name", ""))
        if rt.plural == "secrets":
            self._secret_data(obj)
        if rt.plural == "horizontalpodautoscalers":
            self._hpa(rt, name, obj.get("spec") or {})
        if old is None:
            return
        problems: list[tuple[str, str]] = []
        spec, old_spec = obj.get("spec") or {}, old.get("spec") or {}
        if rt.plural == "pods" and _pod_spec_problem(old_spec, spec):
            problems.append(("spec", _POD_UPDATE_FORBIDDEN))
        elif rt.plural == "statefulsets":
            rest = {k: v for k, v in spec.items() if k not in _STS_UPDATABLE}
            old_rest = {k: v for k, v in old_spec.items() if k not in _STS_UPDATABLE}
            if rest != old_rest:
                problems.append(("spec", _STS_FORBIDDEN))
        elif rt.plural in ("configmaps", "secrets"):
            problems.extend(self._immutable_data(rt, obj, old))
        elif rt.plural == "persistentvolumeclaims":
            self._claim(rt, name, obj, old, problems)
        if problems:
            raise invalid(rt.kind, name, problems, rt.group)

    @staticmethod
    def _secret_data(obj: dict[str, Any]) -> None:
        for value in (obj.get("data") or {}).values():
            offset = base64_error(value) if isinstance(value, str) else 0
            if offset is not None:
                raise ApiError(
                    400,
                    "BadRequest",
                    'Secret in version "v1" cannot be handled as a Secret: '
                    f"illegal base64 data at input byte {offset}",
                )

    @staticmethod
    def _hpa(rt: ResourceType, name: str, spec: dict[str, Any]) -> None:
        problems: list[tuple[str, str]] = []
        low, high = spec.get("minReplicas"), spec.get("maxReplicas")
        if isinstance(low, int) and low < 1:
            problems.append(
                ("spec.minReplicas", f"Invalid value: {low}: must be greater than or equal to 1")
            )
        if isinstance(high, int) and high < 1:
            problems.append(("spec.maxReplicas", f"Invalid value: {high}: must be greater than 0"))
        if isinstance(low, int) and isinstance(high, int) and high < low:
            problems.append(
                (
                    "spec.maxReplicas",
                    f"Invalid value: {high}: must be greater than or equal to `minReplicas`",
                )
            )
        if problems:
            raise invalid(rt.kind, name, problems, rt.group)

    @staticmethod
    def _immutable_data(
        rt: ResourceType, obj: dict[str, Any], old: dict[str, Any]
    ) -> list[tuple[str, str]]:
        problems: list[tuple[str, str]] = []
        if rt.plural == "secrets" and obj.get("type") != old.get("type"):
            problems.append(
                ("type", f"Invalid value: {_go_value(obj.get('type'))}: field is immutable")
            )
        if old.get("immutable") is True:
            if obj.get("immutable") is not True:
                problems.append(("immutable", _IMMUTABLE_SET))
            for section in ("data", "binaryData") if rt.plural == "configmaps" else ("data",):
                if (obj.get(section) or {}) != (old.get(section) or {}):
                    problems.append((section, _IMMUTABLE_SET))
        return problems

    def _claim(
        self,
        rt: ResourceType,
        name: str,
        obj: dict[str, Any],
        old: dict[str, Any],
        problems: list[tuple[str, str]],
    ) -> None:
        spec, old_spec = obj.get("spec") or {}, old.get("spec") or {}
        bound = (old.get("status") or {}).get("phase") == "Bound"
        resizable = ("resources", "volumeAttributesClassName") if bound else ()
        # The binder fills volumeName and storageClassName; a client may send them back empty.
        filled = ("volumeName", "storageClassName")

        def comparable(s: dict[str, Any], other: dict[str, Any]) -> dict[str, Any]:
            out = {k: v for k, v in s.items() if k not in resizable}
            for key in filled:
                if key not in out and key in other:
                    out[key] = other[key]
            return out

        if comparable(spec, old_spec) != comparable(old_spec, spec):
            problems.append(("spec", _PVC_FORBIDDEN))
            return
        new_size = ((spec.get("resources") or {}).get("requests") or {}).get("storage")
        old_size = ((old_spec.get("resources") or {}).get("requests") or {}).get("storage")
        capacity = ((old.get("status") or {}).get("capacity") or {}).get("storage") or old_size
        if not (quantity.is_valid(new_size) and quantity.is_valid(old_size)):
            return
        if quantity.parse(new_size) < quantity.parse(capacity):
            problems.append(
                (
                    "spec.resources.requests.storage",
                    "Forbidden: field can not be less than status.capacity",
                )
            )
            return
        if quantity.parse(new_size) > quantity.parse(old_size):
            class_name = spec.get("storageClassName") or old_spec.get("storageClassName") or ""
            storage_class = self.store.get("storageclasses.storage.k8s.io", "", class_name)
            if not (storage_class or {}).get("allowVolumeExpansion"):
                raise ApiError(
                    403,
                    "Forbidden",
                    f'persistentvolumeclaims "{name}" is forbidden: only dynamically '
                    "provisioned pvc can be resized and the storageclass that provisions "
                    "the pvc must support resize",
                    kind="persistentvolumeclaims",
                    name=name,
                )
