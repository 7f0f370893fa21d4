"""Deployment controller: replica sets per pod template, revisions and rolling updates.

Follows the real controller's arithmetic (maxSurge rounds up, maxUnavailable rounds down,
unhealthy old replicas are cleaned up first), so ``kubectl rollout status``, ``history`` and
``undo`` see the same objects and annotations they see on a real cluster.
"""

from __future__ import annotations

import copy
from datetime import datetime
from typing import Any

from lab.cluster.resources import by_kind
from lab.controllers.context import ControllerContext, owner_reference
from lab.controllers.workloads import (
    HASH_LABEL,
    condition,
    owned,
    resolve_int_or_percent,
    template_hash,
    without_hash_label,
)

REVISION = "deployment.kubernetes.io/revision"
COMPONENT = "deployment-controller"


# What the controller never copies from a deployment to its replica sets (its own bookkeeping
# and kubectl's), as in ``deploymentutil.skipCopyAnnotation``.
_NOT_COPIED = frozenset(
    {
        "kubectl.kubernetes.io/last-applied-configuration",
        REVISION,
        "deployment.kubernetes.io/revision-history",
        "deployment.kubernetes.io/desired-replicas",
        "deployment.kubernetes.io/max-replicas",
        "deprecated.deployment.rollback.to",
    }
)


def copied_annotations(deployment: dict[str, Any]) -> dict[str, str]:
    """The deployment's annotations its new replica set carries (``kubernetes.io/change-cause``
    among them); one removed from the deployment stays on the replica set, as there."""
    annotations = deployment["metadata"].get("annotations") or {}
    return {str(k): str(v) for k, v in annotations.items() if k not in _NOT_COPIED}


def _revision(rs: dict[str, Any]) -> int:
    try:
        return int((rs["metadata"].get("annotations") or {}).get(REVISION, "0"))
    except ValueError:
        return 0


def _replicas(rs: dict[str, Any]) -> int:
    return int((rs.get("spec") or {}).get("replicas", 0))


def _available(rs: dict[str, Any]) -> int:
    return int((rs.get("status") or {}).get("availableReplicas", 0))


class DeploymentController:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self._deadlines: dict[str, float] = {}

    def reconcile(self) -> None:
        for deployment in self.ctx.store.iter_all("deployments.apps"):
            self._sync(deployment)

    def _sync(self, deployment: dict[str, Any]) -> None:
        spec = deployment["spec"]
        replica_sets = owned(self.ctx, "replicasets.apps", deployment)
        new_rs = next(
            (
                rs
                for rs in replica_sets
                if without_hash_label(rs["spec"]["template"]) == spec["template"]
            ),
            None,
        )
        max_revision = max((_revision(rs) for rs in replica_sets), default=0)
        if new_rs is None:
            new_rs = self._create_replica_set(deployment, max_revision + 1)
            replica_sets.append(new_rs)
        elif _revision(new_rs) < max_revision or not _revision(new_rs):
            new_rs = self._annotate(new_rs, deployment, max_revision + 1)
        else:
            new_rs = self._annotate(new_rs, deployment, _revision(new_rs))
        old = [rs for rs in replica_sets if rs["metadata"]["uid"] != new_rs["metadata"]["uid"]]
        if not spec.get("paused"):
            if (spec.get("strategy") or {}).get("type") == "Recreate":
                self._recreate(deployment, new_rs, old)
            else:
                self._rolling(deployment, new_rs, old)
            self._cleanup(deployment, old)
        self._sync_revision_annotation(deployment, new_rs)
        self._update_status(deployment)

    def _create_replica_set(self, deployment: dict[str, Any], revision: int) -> dict[str, Any]:
        template = copy.deepcopy(deployment["spec"]["template"])
        pod_hash = template_hash(template)
        template.setdefault("metadata", {}).setdefault("labels", {})[HASH_LABEL] = pod_hash
        selector = copy.deepcopy(deployment["spec"]["selector"])
        selector.setdefault("matchLabels", {})[HASH_LABEL] = pod_hash
        annotations = {
            REVISION: str(revision),
            "deployment.kubernetes.io/desired-replicas": str(deployment["spec"].get("replicas", 1)),
        }
        annotations.update(copied_annotations(deployment))
        name = f"{deployment['metadata']['name']}-{pod_hash}"
        rs: dict[str, Any] = {
            "apiVersion": "apps/v1",
            "kind": "ReplicaSet",
            "metadata": {
                "name": name,
                "namespace": deployment["metadata"]["namespace"],
                "labels": dict(template["metadata"]["labels"]),
                "annotations": annotations,
                "ownerReferences": [owner_reference(deployment)],
            },
            "spec": {
                "replicas": 0,
                "minReadySeconds": deployment["spec"].get("minReadySeconds", 0),
                "selector": selector,
                "template": template,
            },
        }
        return self.ctx.api.create(by_kind("ReplicaSet"), rs["metadata"]["namespace"], rs)

    def _annotate(
        self, rs: dict[str, Any], deployment: dict[str, Any], revision: int
    ) -> dict[str, Any]:
        """The new replica set with its revision and the deployment's annotations, which the
        controller copies on every sync (a change-cause annotated after ``set image`` reaches
        the replica set that ``rollout history`` reads)."""
        current = dict(rs["metadata"].get("annotations") or {})
        annotations = {**current, **copied_annotations(deployment), REVISION: str(revision)}
        if annotations == current:
            return rs
        return self.ctx.write_object(
            "replicasets.apps", {**rs, "metadata": {**rs["metadata"], "annotations": annotations}}
        )

    def _scale(self, deployment: dict[str, Any], rs: dict[str, Any], replicas: int) -> None:
        current = _replicas(rs)
        if current == replicas:
            return
        fresh = (
            self.ctx.store.get(
                "replicasets.apps", rs["metadata"]["namespace"], rs["metadata"]["name"]
            )
            or rs
        )
        annotations = {
            **(fresh["metadata"].get("annotations") or {}),
            "deployment.kubernetes.io/desired-replicas": str(deployment["spec"].get("replicas", 1)),
        }
        updated = {
            **fresh,
            "metadata": {**fresh["metadata"], "annotations": annotations},
            "spec": {**fresh["spec"], "replicas": replicas},
        }
        meta = updated["metadata"]
        meta["generation"] = int(meta.get("generation", 1)) + 1
        self.ctx.write_object("replicasets.apps", updated)
        direction = "up" if replicas > current else "down"
        self.ctx.events.record(
            deployment,
            "Normal",
            "ScalingReplicaSet",
            f"Scaled {direction} replica set {rs['metadata']['name']} to {replicas} from {current}",
            component=COMPONENT,
        )

    def _recreate(
        self, deployment: dict[str, Any], new_rs: dict[str, Any], old: list[dict[str, Any]]
    ) -> None:
        active_old = [rs for rs in old if _replicas(rs) > 0]
        for rs in active_old:
            self._scale(deployment, rs, 0)
        still_running = any(int((rs.get("status") or {}).get("replicas", 0)) > 0 for rs in old)
        if not active_old and not still_running:
            self._scale(deployment, new_rs, int(deployment["spec"].get("replicas", 1)))

    def _rolling(
        self, deployment: dict[str, Any], new_rs: dict[str, Any], old: list[dict[str, Any]]
    ) -> None:
        desired = int(deployment["spec"].get("replicas", 1))
        rolling = (deployment["spec"].get("strategy") or {}).get("rollingUpdate") or {}
        surge = resolve_int_or_percent(rolling.get("maxSurge", "25%"), desired, round_up=True)
        unavailable = resolve_int_or_percent(
            rolling.get("maxUnavailable", "25%"), desired, round_up=False
        )
        if surge == 0 and unavailable == 0:
            unavailable = 1
        if not any(_replicas(rs) for rs in old):
            self._scale(deployment, new_rs, desired)
            return
        total = _replicas(new_rs) + sum(_replicas(rs) for rs in old)
        if _replicas(new_rs) < desired:
            room = min(desired + surge - total, desired - _replicas(new_rs))
            if room > 0:
                self._scale(deployment, new_rs, _replicas(new_rs) + room)
                total += room
        elif _replicas(new_rs) > desired:
            self._scale(deployment, new_rs, desired)
        min_available = desired - unavailable
        new_unavailable = _replicas(new_rs) - _available(new_rs)
        budget = total - min_available - new_unavailable
        if budget <= 0:
            return
        old_sorted = sorted(old, key=lambda rs: rs["metadata"].get("creationTimestamp", ""))
        remaining: dict[str, int] = {rs["metadata"]["uid"]: _replicas(rs) for rs in old_sorted}
        for rs in old_sorted:
            unhealthy = remaining[rs["metadata"]["uid"]] - _available(rs)
            cut = min(max(unhealthy, 0), budget)
            if cut > 0:
                remaining[rs["metadata"]["uid"]] -= cut
                budget -= cut
        available = _available(new_rs) + sum(
            min(_available(rs), remaining[rs["metadata"]["uid"]]) for rs in old_sorted
        )
        can_remove = available - min_available
        for rs in old_sorted:
            cut = min(remaining[rs["metadata"]["uid"]], max(can_remove, 0))
            remaining[rs["metadata"]["uid"]] -= cut
            can_remove -= cut
        for rs in old_sorted:
            self._scale(deployment, rs, remaining[rs["metadata"]["uid"]])

    def _cleanup(self, deployment: dict[str, Any], old: list[dict[str, Any]]) -> None:
        limit = int(deployment["spec"].get("revisionHistoryLimit", 10))
        idle = sorted(
            (
                rs
                for rs in old
                if _replicas(rs) == 0 and not (rs.get("status") or {}).get("replicas")
            ),
            key=_revision,
        )
        for rs in idle[: max(len(idle) - limit, 0)]:
            self.ctx.api.delete(
                by_kind("ReplicaSet"), rs["metadata"]["namespace"], rs["metadata"]["name"]
            )

    def _sync_revision_annotation(self, deployment: dict[str, Any], new_rs: dict[str, Any]) -> None:
        fresh = self.ctx.store.get(
            "deployments.apps", deployment["metadata"]["namespace"], deployment["metadata"]["name"]
        )
        if fresh is None:
            return
        revision = str(
            _revision(
                self.ctx.store.get(
                    "replicasets.apps", new_rs["metadata"]["namespace"], new_rs["metadata"]["name"]
                )
                or new_rs
            )
        )
        annotations = fresh["metadata"].get("annotations") or {}
        if annotations.get(REVISION) != revision:
            self.ctx.write_object(
                "deployments.apps",
                {
                    **fresh,
                    "metadata": {
                        **fresh["metadata"],
                        "annotations": {**annotations, REVISION: revision},
                    },
                },
            )

    def _update_status(self, deployment: dict[str, Any]) -> None:
        fresh = self.ctx.store.get(
            "deployments.apps", deployment["metadata"]["namespace"], deployment["metadata"]["name"]
        )
        if fresh is None:
            return
        spec = fresh["spec"]
        replica_sets = owned(self.ctx, "replicasets.apps", fresh)
        new_rs = next(
            (
                rs
                for rs in replica_sets
                if without_hash_label(rs["spec"]["template"]) == spec["template"]
            ),
            None,
        )

        def total(field: str) -> int:
            return sum(int((rs.get("status") or {}).get(field, 0)) for rs in replica_sets)

        desired = int(spec.get("replicas", 1))
        replicas = total("replicas")
        available = total("availableReplicas")
        updated = int((new_rs.get("status") or {}).get("replicas", 0)) if new_rs else 0
        rolling = (spec.get("strategy") or {}).get("rollingUpdate") or {}
        max_unavailable = (
            resolve_int_or_percent(rolling.get("maxUnavailable", "25%"), desired, round_up=False)
            if (spec.get("strategy") or {}).get("type") != "Recreate"
            else 0
        )
        old_status = fresh.get("status") or {}
        previous = old_status.get("conditions") or []
        now = self.ctx.clock.timestamp()
        rs_name = new_rs["metadata"]["name"] if new_rs else fresh["metadata"]["name"]
        minimum = available >= desired - max_unavailable
        conditions = [
            condition(
                "Available",
                minimum,
                "MinimumReplicasAvailable" if minimum else "MinimumReplicasUnavailable",
                "Deployment has minimum availability."
                if minimum
                else "Deployment does not have minimum availability.",
                now,
                previous,
            )
        ]
        complete = updated == desired and replicas == desired and available == desired
        counts = {
            "replicas": replicas,
            "updated": updated,
            "ready": total("readyReplicas"),
            "available": available,
        }
        progressing = self._progressing(fresh, counts, complete, rs_name, now, previous, old_status)
        conditions.append(progressing)
        status: dict[str, Any] = {
            "observedGeneration": fresh["metadata"].get("generation", 1),
            "replicas": replicas,
            "updatedReplicas": updated,
            "readyReplicas": total("readyReplicas"),
            "availableReplicas": available,
            "conditions": conditions,
        }
        unavailable = max(desired - available, 0) if replicas or desired else 0
        if unavailable:
            status["unavailableReplicas"] = unavailable
        status = {k: v for k, v in status.items() if v != 0 or k == "observedGeneration"}
        self.ctx.write_status("deployments.apps", fresh, status)

    def _progressing(
        self,
        deployment: dict[str, Any],
        counts: dict[str, int],
        complete: bool,
        rs_name: str,
        now: str,
        previous: list[dict[str, Any]],
        old_status: dict[str, Any],
    ) -> dict[str, Any]:
        """The Progressing condition by the real controller's rules: a finished rollout
        (every replica updated, once NewReplicaSetAvailable) keeps its condition; progress
        is more updated, ready or available replicas or fewer old ones; without progress for
        ``progressDeadlineSeconds`` it is False/ProgressDeadlineExceeded for good."""
        old = next((c for c in previous if c.get("type") == "Progressing"), None)
        if (
            old is not None
            and old.get("reason") == "NewReplicaSetAvailable"
            and counts["replicas"] == counts["updated"]
        ):
            return old
        if complete:
            return condition(
                "Progressing",
                True,
                "NewReplicaSetAvailable",
                f'ReplicaSet "{rs_name}" has successfully progressed.',
                now,
                previous,
            )

        def was(field: str) -> int:
            return int(old_status.get(field, 0))

        made_progress = (
            old is None
            or counts["updated"] > was("updatedReplicas")
            or counts["replicas"] - counts["updated"] < was("replicas") - was("updatedReplicas")
            or counts["ready"] > was("readyReplicas")
            or counts["available"] > was("availableReplicas")
        )
        if not made_progress and old is not None:
            if old.get("reason") == "ProgressDeadlineExceeded":
                return old
            started = datetime.strptime(old["lastUpdateTime"], "%Y-%m-%dT%H:%M:%SZ").timestamp()
            deadline = int(deployment["spec"].get("progressDeadlineSeconds", 600))
            if self.ctx.clock.now() - started > deadline:
                return condition(
                    "Progressing",
                    False,
                    "ProgressDeadlineExceeded",
                    f'ReplicaSet "{rs_name}" has timed out progressing.',
                    now,
                    previous,
                )
            self._wake_at_deadline(deployment, started + deadline)
            return old
        result = condition(
            "Progressing",
            True,
            "ReplicaSetUpdated",
            f'ReplicaSet "{rs_name}" is progressing.',
            now,
            previous,
        )
        result["lastUpdateTime"] = now
        deadline = int(deployment["spec"].get("progressDeadlineSeconds", 600))
        self._wake_at_deadline(deployment, self.ctx.clock.now() + deadline)
        return result

    def _wake_at_deadline(self, deployment: dict[str, Any], at: float) -> None:
        """The controller looks again when the deadline passes (the real one requeues the
        deployment): a steady wait, so the clock gets there only when time is let pass."""
        uid = deployment["metadata"]["uid"]
        if self._deadlines.get(uid) == at:
            return
        self._deadlines[uid] = at
        self.ctx.clock.call_later(at - self.ctx.clock.now() + 1.0, lambda: None, steady=True)
