"""REST semantics of the API server, independent of HTTP.

Get, list, create, update, patch, delete and the scale/status subresources, with the rules a
real API server enforces: optimistic concurrency on resourceVersion, generation bumps on spec
changes, status kept apart from spec, ``dryRun=All`` (validated, never persisted), owner
garbage collection, and RBAC-style denials the lab can be told to make.
"""

from __future__ import annotations

import copy
import json
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from fnmatch import fnmatchcase
from typing import Any

from lab.cluster import (
    admission,
    conversion,
    finalizers,
    managed_fields,
    namespace_deletion,
    patching,
)
from lab.cluster.audit import AuditTrail
from lab.cluster.clock import Clock
from lab.cluster.deletion import Deletion
from lab.cluster.errors import (
    ApiError,
    already_exists,
    bad_request,
    conflict,
    forbidden,
    invalid,
    not_found,
)
from lab.cluster.rbac import AccessControl, Attributes, UserInfo
from lab.cluster.resources import ResourceType
from lab.cluster.selectors import FieldSelector, LabelSelector, object_filter
from lab.cluster.store import ObjectStore

AdmissionHook = Callable[[str, ResourceType, dict[str, Any], dict[str, Any] | None], None]
_SCALABLE = ("deployments", "replicasets", "statefulsets", "replicationcontrollers")


def random_suffix(length: int = 5) -> str:
    return "".join(secrets.choice("bcdfghjklmnpqrstvwxz2456789") for _ in range(length))


@dataclass(frozen=True)
class Denial:
    """An RBAC refusal the lab is configured to make (verbs, resources, namespaces are globs)."""

    verb: str = "*"
    resource: str = "*"
    namespace: str = "*"
    user: str = "stratus"

    def applies(self, verb: str, rt: ResourceType, namespace: str) -> bool:
        return (
            fnmatchcase(verb, self.verb)
            and fnmatchcase(rt.plural, self.resource)
            and fnmatchcase(namespace or "", self.namespace)
        )


class ApiService:
    def __init__(self, store: ObjectStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        self.admission_hooks: list[AdmissionHook] = []
        self.denials: list[Denial] = []
        self.access = AccessControl(store)
        self.audit = AuditTrail()  # writes, and who sent them as whom
        self.deletion = Deletion(store, clock)
        # Pods deleted with DeleteOptions.gracePeriodSeconds (uid -> seconds): the kubelet's
        # grace for a pod running a real process (``--grace-period=0 --force`` kills at once).
        self.pod_grace = self.deletion.pod_grace

    # ------------------------------------------------------------ authorization

    def authorize(
        self,
        verb: str,
        rt: ResourceType,
        namespace: str,
        name: str = "",
        *,
        subresource: str = "",
        user: UserInfo | None = None,
    ) -> None:
        """RBAC for ``user`` (when the lab runs with it), then the configured denials."""
        if user is not None:
            self.access.check(
                user,
                Attributes(verb, rt.group, rt.plural, subresource, namespace, name),
            )
        for denial in self.denials:
            if denial.applies(verb, rt, namespace):
                target = f'{rt.plural} "{name}"' if name else rt.plural
                where = f' in the namespace "{namespace}"' if namespace else " at the cluster scope"
                raise forbidden(
                    f'{target} is forbidden: User "{denial.user}" cannot {verb} resource '
                    f'"{rt.plural}" in API group "{rt.group}"{where}',
                    kind=rt.plural,
                    name=name,
                )

    # ------------------------------------------------------------ reads

    def get(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        obj = self.store.get(rt.key, namespace if rt.namespaced else "", name)
        if obj is None:
            raise not_found(rt.plural, name, rt.group)
        return obj

    def list_objects(
        self,
        rt: ResourceType,
        namespace: str | None,
        labels: LabelSelector = (),
        fields: FieldSelector = (),
    ) -> list[dict[str, Any]]:
        accept = object_filter(labels, fields)
        return [
            o
            for o in self.store.list_objects(rt.key, namespace if rt.namespaced else None)
            if accept(o)
        ]

    # ------------------------------------------------------------ create

    def create(
        self,
        rt: ResourceType,
        namespace: str,
        body: Any,
        *,
        dry_run: bool = False,
        manager: str = "",
    ) -> dict[str, Any]:
        """Create ``body``; a ``manager`` is recorded as owning what it set (the controllers'
        own writes pass none and are not tracked)."""
        obj = self._decode_body(rt, body)
        meta = obj.setdefault("metadata", {})
        if not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        if rt.namespaced:
            body_ns = meta.get("namespace")
            if body_ns and namespace and body_ns != namespace:
                raise bad_request(
                    "the namespace of the provided object does not match the "
                    "namespace sent on the request"
                )
            namespace = namespace or body_ns or "default"
            meta["namespace"] = namespace
            if self.store.get("namespaces", "", namespace) is None:
                raise not_found("namespaces", namespace)
        else:
            meta.pop("namespace", None)
        if not meta.get("name") and meta.get("generateName"):
            meta["name"] = f"{meta['generateName']}{random_suffix()}"
        if rt.namespaced and namespace_deletion.is_terminating(
            self.store.get("namespaces", "", namespace)
        ):
            raise namespace_deletion.refused_create(namespace, rt.plural, str(meta.get("name")))
        for server_set in ("uid", "resourceVersion", "creationTimestamp", "deletionTimestamp"):
            meta.pop(server_set, None)
        admission.apply_defaults(rt, obj)
        admission.validate(rt, obj)
        if self.store.get(rt.key, namespace if rt.namespaced else "", meta["name"]) is not None:
            raise already_exists(rt.plural, meta["name"], rt.group)
        if isinstance(obj.get("spec"), dict):
            meta["generation"] = 1
        if manager:
            meta["managedFields"] = self._record(rt, None, obj, manager)
        for hook in self.admission_hooks:
            hook("create", rt, obj, None)
        if dry_run:
            meta.setdefault("uid", "00000000-0000-0000-0000-000000000000")
            meta["creationTimestamp"] = self.clock.timestamp()
            return obj
        return self.store.create(rt.key, obj)

    # ------------------------------------------------------------ update / patch

    def update(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: Any,
        *,
        subresource: str = "",
        dry_run: bool = False,
        manager: str = "",
    ) -> dict[str, Any]:
        old = self.get(rt, namespace, name)
        new = self._decode_body(rt, body)
        return self._write(rt, old, new, subresource=subresource, dry_run=dry_run, manager=manager)

    def patch(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: bytes,
        content_type: str,
        *,
        subresource: str = "",
        dry_run: bool = False,
        manager: str = "",
    ) -> dict[str, Any]:
        old = self.get(rt, namespace, name)
        # A patch applies to the object as the requested version serves it.
        view = conversion.from_storage(rt, copy.deepcopy(old))
        patched = conversion.to_storage(
            rt, _without_nulls(patching.apply_patch(view, body, content_type))
        )
        # A patch that carries a resourceVersion is a precondition; one that does not is not.
        return self._write(
            rt, old, patched, subresource=subresource, dry_run=dry_run, manager=manager
        )

    def apply(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        body: bytes,
        *,
        manager: str,
        force: bool,
        dry_run: bool = False,
    ) -> tuple[dict[str, Any], bool]:
        """Server-side apply of ``body``: (the object, whether the apply created it)."""
        managed_fields.validate_options(manager=manager, apply=True, force=force)
        config = patching.decode_apply(body, rt, name)
        try:
            old: dict[str, Any] | None = self.get(rt, namespace, name)
        except ApiError as error:
            if error.code != 404:
                raise
            old = None
        view = conversion.from_storage(rt, copy.deepcopy(old)) if old is not None else None
        merged = managed_fields.apply(
            view,
            config,
            manager=manager,
            force=force,
            api_version=rt.api_version,
            now=self.clock.timestamp(),
            kind=rt.kind,
        )
        if old is None:  # an apply of an object that does not exist creates it
            return self.create(rt, namespace, merged, dry_run=dry_run), True
        applied = conversion.to_storage(rt, _without_nulls(merged))
        return self._write(rt, old, applied, subresource="", dry_run=dry_run), False

    def _record(
        self,
        rt: ResourceType,
        old: dict[str, Any] | None,
        new: dict[str, Any],
        manager: str,
        subresource: str = "",
    ) -> list[dict[str, Any]]:
        return managed_fields.record_update(
            old,
            new,
            manager=manager,
            api_version=rt.api_version,
            now=self.clock.timestamp(),
            kind=rt.kind,
            subresource=subresource,
        )

    def _write(
        self,
        rt: ResourceType,
        old: dict[str, Any],
        new: dict[str, Any],
        *,
        subresource: str,
        dry_run: bool,
        manager: str = "",
        via: str = "",
    ) -> dict[str, Any]:
        """Replace ``old`` by ``new``; with a ``manager``, the write is recorded as its update
        (without one the caller has set ``managedFields`` itself, or they are left alone)."""
        old_meta = old["metadata"]
        meta = new.get("metadata")
        if not isinstance(meta, dict):
            raise bad_request("metadata must be an object")
        if meta.get("name", old_meta["name"]) != old_meta["name"]:
            raise bad_request(
                f"the name of the object ({meta.get('name')}) does not match the "
                f"name on the URL ({old_meta['name']})"
            )
        sent_rv = meta.get("resourceVersion")
        if sent_rv and str(sent_rv) != old_meta["resourceVersion"]:
            raise conflict(rt.plural, old_meta["name"], rt.group)
        sent_uid = meta.get("uid")
        if sent_uid and sent_uid != old_meta["uid"]:
            raise conflict(rt.plural, old_meta["name"], rt.group)
        if subresource == "status":
            result = {**copy.deepcopy(old), "status": new.get("status", {})}
            if rt.plural == "namespaces":
                namespace_deletion.check_phase(result)
        else:
            result = new
            stored = conversion.storage_type(rt)
            result["kind"], result["apiVersion"] = stored.kind, stored.api_version
            if "status" in rt.subresources:
                if "status" in old:
                    result["status"] = copy.deepcopy(old["status"])
                else:
                    result.pop("status", None)
            for keep in (
                "uid",
                "creationTimestamp",
                "namespace",
                "name",
                "generation",
                "deletionTimestamp",
                "deletionGracePeriodSeconds",
            ):
                if keep in old_meta:
                    meta[keep] = old_meta[keep]
                else:  # only the server sets these: a client's own is dropped
                    meta.pop(keep, None)
            admission.apply_defaults(rt, result)
            admission.validate(rt, result, old)
            if self._spec_changed(old, result) and "generation" in old_meta:
                meta["generation"] = int(old_meta["generation"]) + 1
            if manager:
                meta["managedFields"] = self._record(rt, old, result, manager, via)
            elif "managedFields" in old_meta and "managedFields" not in meta:
                meta["managedFields"] = old_meta["managedFields"]
        result["metadata"]["resourceVersion"] = old_meta["resourceVersion"]
        held = rt.plural != "namespaces"  # a namespace's own finalizers are in its spec
        if held:
            finalizers.check_update(rt.kind, old, result)
        for hook in self.admission_hooks:
            hook("update", rt, result, old)
        if dry_run:
            return result
        written = self.store.replace(rt.key, result)
        if held and finalizers.released(old, written):  # the last finalizer is off: it goes
            return self.deletion.now(rt, written, "Background")
        return written

    @staticmethod
    def _spec_changed(old: dict[str, Any], new: dict[str, Any]) -> bool:
        ignored = {"metadata", "status", "kind", "apiVersion"}
        before = {k: v for k, v in old.items() if k not in ignored}
        after = {k: v for k, v in new.items() if k not in ignored}
        return before != after

    def _decode_body(self, rt: ResourceType, body: Any) -> dict[str, Any]:
        if isinstance(body, bytes | str):
            try:
                body = json.loads(body or b"null")
            except ValueError as exc:
                raise bad_request(f"error decoding request body: {exc}") from exc
        if not isinstance(body, dict):
            raise bad_request("the request body must be a JSON object")
        obj = _without_nulls(body)
        kind, api_version = obj.get("kind"), obj.get("apiVersion")
        if kind and kind != rt.kind:
            raise bad_request(
                f"the API version in the data ({api_version}) and kind ({kind}) "
                f"do not match the resource {rt.plural}.{rt.group or 'core'}"
            )
        if api_version and api_version != rt.api_version:
            raise bad_request(
                f"the API version in the data ({api_version}) does not match the "
                f"expected API version ({rt.api_version})"
            )
        obj["kind"], obj["apiVersion"] = rt.kind, rt.api_version
        decoded: dict[str, Any] = conversion.to_storage(rt, obj)
        return decoded

    # ------------------------------------------------------------ delete

    def delete(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        *,
        options: dict[str, Any] | None = None,
        dry_run: bool = False,
    ) -> dict[str, Any]:
        obj = self.get(rt, namespace, name)
        if rt.plural == "namespaces" and name in namespace_deletion.IMMORTAL:
            raise namespace_deletion.refused_delete(name)
        options = options or {}
        preconditions = options.get("preconditions") or {}
        meta = obj["metadata"]
        if preconditions.get("uid") and preconditions["uid"] != meta["uid"]:
            raise conflict(rt.plural, name, rt.group)
        if (
            preconditions.get("resourceVersion")
            and preconditions["resourceVersion"] != meta["resourceVersion"]
        ):
            raise conflict(rt.plural, name, rt.group)
        if rt.plural == "pods":
            return self.deletion.pod(obj, options, dry_run=dry_run)
        if dry_run:
            return obj
        if rt.plural == "namespaces":
            return self.deletion.namespace(obj)
        propagation = options.get("propagationPolicy") or "Background"
        if options.get("orphanDependents") is True:
            propagation = "Orphan"
        return self.deletion.now(rt, obj, propagation)

    def delete_collection(
        self,
        rt: ResourceType,
        namespace: str,
        labels: LabelSelector,
        fields: FieldSelector,
        *,
        dry_run: bool = False,
    ) -> list[dict[str, Any]]:
        victims = self.list_objects(rt, namespace, labels, fields)
        if dry_run:
            return victims
        if rt.plural == "pods":
            return [self.deletion.pod(v, {}) for v in victims]
        return [self.deletion.now(rt, v, "Background") for v in victims]

    # ------------------------------------------------------------ scale subresource

    def get_scale(self, rt: ResourceType, namespace: str, name: str) -> dict[str, Any]:
        if rt.plural not in _SCALABLE:
            raise not_found(f"{rt.plural}/scale", name, rt.group)
        return _scale_of(self.get(rt, namespace, name))

    def write_scale(
        self,
        rt: ResourceType,
        namespace: str,
        name: str,
        scale: dict[str, Any],
        *,
        dry_run: bool = False,
        manager: str = "",
    ) -> dict[str, Any]:
        """Set replicas through the scale subresource; answers the Scale as written."""
        replicas = (scale.get("spec") or {}).get("replicas")
        if not isinstance(replicas, int) or replicas < 0:
            raise invalid(
                "Scale",
                name,
                [
                    (
                        "spec.replicas",
                        f"Invalid value: {replicas}: must be greater than or equal to 0",
                    )
                ],
                "autoscaling",
            )
        old = self.get(rt, namespace, name)
        sent_rv = (scale.get("metadata") or {}).get("resourceVersion")
        if sent_rv and sent_rv != old["metadata"]["resourceVersion"]:
            raise conflict(rt.plural, name, rt.group)
        new = copy.deepcopy(old)
        new["spec"]["replicas"] = replicas
        written = self._write(
            rt, old, new, subresource="", dry_run=dry_run, manager=manager, via="scale"
        )
        return _scale_of(written)


def _scale_of(obj: dict[str, Any]) -> dict[str, Any]:
    """The autoscaling/v1 Scale view of a scalable object."""
    meta = obj["metadata"]
    selector = (obj.get("spec") or {}).get("selector") or {}
    # A ReplicationController's selector is the label map itself.
    match_labels = (
        selector
        if obj.get("kind") == "ReplicationController"
        else selector.get("matchLabels") or {}
    )
    return {
        "kind": "Scale",
        "apiVersion": "autoscaling/v1",
        "metadata": {
            k: meta[k]
            for k in ("name", "namespace", "uid", "resourceVersion", "creationTimestamp")
            if k in meta
        },
        "spec": {"replicas": obj["spec"].get("replicas", 1)},
        "status": {
            "replicas": (obj.get("status") or {}).get("replicas", 0),
            "selector": ",".join(f"{k}={v}" for k, v in sorted(match_labels.items())),
        },
    }


def _without_nulls(value: Any) -> Any:
    """Drop null fields, as decoding into the API types and re-encoding does on a real server."""
    if isinstance(value, dict):
        return {k: _without_nulls(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_without_nulls(v) for v in value]
    return value
