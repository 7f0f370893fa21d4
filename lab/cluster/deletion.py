"""What a DELETE does once it is allowed: the object goes, or is stamped and drained.

A pod on a node is stamped and drained by its kubelet (``graceful_delete``); a namespace is
stamped Terminating and emptied (``namespace_deletion``); an object its finalizers hold
stays Terminating (``finalizers``); whatever goes takes its dependents with it (the garbage
collector) or leaves them orphaned. ``ApiService.delete`` checks the request (preconditions,
dry run, the immortal namespaces) and hands it here.
"""

from __future__ import annotations

from typing import Any

from lab.cluster import finalizers, graceful_delete, namespace_deletion
from lab.cluster.clock import Clock
from lab.cluster.resources import RESOURCE_TYPES, ResourceType, by_kind
from lab.cluster.store import ObjectStore


class Deletion:
    def __init__(self, store: ObjectStore, clock: Clock) -> None:
        self.store = store
        self.clock = clock
        # Pods deleted with DeleteOptions.gracePeriodSeconds (uid -> seconds).
        self.pod_grace: dict[str, float] = {}

    def pod(
        self, pod: dict[str, Any], options: dict[str, Any], *, dry_run: bool = False
    ) -> dict[str, Any]:
        """A pod on a node is stamped Terminating; the kubelet deletes it when it has stopped
        (``graceful_delete``). One that is gone at once keeps the grace asked for, for the
        processes a real-process container still has to stop."""
        meta = pod["metadata"]
        since = None
        if meta.get("deletionTimestamp"):
            since = self.clock.parse(meta["deletionTimestamp"]) - float(
                meta.get("deletionGracePeriodSeconds") or 0
            )
        decision = graceful_delete.decide(pod, options, now=self.clock.now(), deleting_since=since)
        if dry_run:  # the answer the delete would give, stamp included; nothing changes
            if decision.now or decision.unchanged:
                return pod
            return graceful_delete.stamped(
                pod, decision, self.clock.timestamp(decision.deletion_at)
            )
        if decision.now:
            grace = options.get("gracePeriodSeconds")
            if isinstance(grace, int) and grace >= 0:
                self.pod_grace[meta["uid"]] = float(grace)
            return self.now(by_kind("Pod"), pod, "Background")
        if decision.unchanged:
            return pod
        timestamp = self.clock.timestamp(decision.deletion_at)
        return self.store.replace("pods", graceful_delete.stamped(pod, decision, timestamp))

    def namespace(self, namespace: dict[str, Any]) -> dict[str, Any]:
        """Stamp the namespace Terminating and delete what it holds: pods gracefully, the rest
        at once; it goes when its last pod has (``namespace_deletion``)."""
        if namespace["metadata"].get("deletionTimestamp"):
            return namespace
        name = namespace["metadata"]["name"]
        answer = self.store.replace(
            "namespaces", namespace_deletion.stamped(namespace, self.clock.timestamp())
        )
        for rt in RESOURCE_TYPES:
            if rt.namespaced and rt.plural != "pods":
                for listed in self.store.list_objects(rt.key, name):
                    obj = self._current(rt.key, listed)
                    if obj is not None and not obj["metadata"].get("deletionTimestamp"):
                        self.now(rt, obj, "Background")
        for listed in self.store.list_objects("pods", name):
            pod = self._current("pods", listed)
            if pod is not None:
                self.pod(pod, {})
        self.namespace_drained(name)
        # As a real server answers: the stamped namespace, even when it is already gone.
        return self.store.get("namespaces", "", name) or answer

    def namespace_drained(self, name: str) -> None:
        """A terminating namespace with no pods left goes; with pods left, its status says
        how many."""
        namespace = self.store.get("namespaces", "", name)
        if namespace is None or not namespace_deletion.is_terminating(namespace):
            return
        pods = len(self.store.list_objects("pods", name))
        held: dict[str, int] = {}
        for rt in RESOURCE_TYPES:
            if rt.namespaced and rt.plural not in ("pods", "events"):
                for obj in self.store.list_objects(rt.key, name):
                    for finalizer in finalizers.holding(obj):
                        held[finalizer] = held.get(finalizer, 0) + 1
        if pods or held:
            self.store.replace(
                "namespaces",
                namespace_deletion.with_remaining(namespace, pods, held, self.clock.timestamp()),
            )
            return
        self.store.delete("namespaces", "", name)
        self.namespace_contents(name)  # events the drain wrote meanwhile

    def now(self, rt: ResourceType, obj: dict[str, Any], propagation: str) -> dict[str, Any]:
        meta = obj["metadata"]
        if rt.plural != "namespaces" and finalizers.holding(obj):  # stays until released
            if obj["metadata"].get("deletionGracePeriodSeconds") == 0:
                return obj
            return self.store.replace(rt.key, finalizers.stamped(obj, self.clock.timestamp()))
        final = self.store.delete(rt.key, meta.get("namespace", ""), meta["name"])
        self.collect_dependents(meta.get("namespace", ""), meta["uid"], propagation)
        if rt.namespaced:
            self.namespace_drained(meta.get("namespace", ""))
        return final

    def collect_dependents(self, namespace: str, owner_uid: str, propagation: str) -> None:
        """Garbage collection: dependents of a deleted owner go too (or are orphaned)."""
        for key in (
            "replicasets.apps",
            "controllerrevisions.apps",
            "jobs.batch",
            "pods",
            "endpointslices.discovery.k8s.io",
            "persistentvolumeclaims",
        ):
            for listed in self.store.list_objects(key, namespace or None):
                dep = self._current(key, listed)
                if dep is None:
                    continue
                refs = dep["metadata"].get("ownerReferences") or []
                if not any(r.get("uid") == owner_uid for r in refs):
                    continue
                dep_rt = by_kind(dep["kind"])
                if propagation == "Orphan":
                    kept = [r for r in refs if r.get("uid") != owner_uid]
                    meta = {k: v for k, v in dep["metadata"].items() if k != "ownerReferences"}
                    orphan = {
                        **dep,
                        "metadata": {**meta, **({"ownerReferences": kept} if kept else {})},
                    }
                    self.store.replace(key, orphan)
                elif dep_rt.plural == "pods":  # the garbage collector's DELETE is graceful
                    self.pod(dep, {})
                else:
                    self.now(dep_rt, dep, propagation)

    def _current(self, key: str, listed: dict[str, Any]) -> dict[str, Any] | None:
        """The object as it is now, or None when it went while a loop over a listing ran:
        deleting one object cascades (its dependents, the drained namespace and its events)
        and can take later items of the same listing with it."""
        meta = listed["metadata"]
        now = self.store.get(key, meta.get("namespace", ""), meta["name"])
        if now is None or now["metadata"].get("uid") != meta.get("uid"):
            return None
        return now

    def namespace_contents(self, namespace: str) -> None:
        for rt in RESOURCE_TYPES:
            if rt.namespaced:
                for obj in self.store.list_objects(rt.key, namespace):
                    self.store.delete(rt.key, namespace, obj["metadata"]["name"])
