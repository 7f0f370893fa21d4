"""The executor: the one path by which a write reaches the cluster.

For one write: scope check → lock → read and plan (pure) → server dry-run → write-ahead record
(before-image and planned after-image stored first) → the write, with the observed
resourceVersion (a 409 re-plans once against the fresh object) → record the written version
and push the undo entry, atomically → audit → release the lock. A crash at any step leaves a
record that ``reconcile`` resolves at start-up: never an applied write without an undo entry.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from store.audit import AuditLog
from store.db import Store
from store.locks import LeaseLocks
from store.records import ABORTED, FAILED, ExecutionLog
from tools import crashpoints, errors
from tools.actions import CATALOG, Action, Plan
from tools.k8s import KubeClient
from tools.objects import ObjectRef, normalized
from tools.scope import WriteScope

IRREVERSIBLE = {name for name, cls in CATALOG.items() if not cls.reversible}
Planner = Callable[[dict[str, Any] | None], Plan]


@dataclass(frozen=True)
class Outcome:
    """What the executor did; ``execution_id`` and ``undo_id`` are None for previews."""

    ref: ObjectRef
    intent: str
    plan: Plan
    applied: bool
    execution_id: str | None = None
    undo_id: str | None = None
    written: dict[str, Any] | None = None


class Executor:
    def __init__(
        self,
        kube: KubeClient,
        store: Store,
        *,
        scope: WriteScope | None = None,
        lock_ttl: float = 60.0,
        lock_wait: float = 10.0,
    ) -> None:
        self.kube = kube
        self.store = store
        self.scope = scope or WriteScope()
        self.locks = LeaseLocks(store)
        self.executions = ExecutionLog(store)
        self.audit = AuditLog(store)
        self.lock_ttl = lock_ttl
        self.lock_wait = lock_wait

    # ------------------------------------------------------------ actions

    def preview(self, action: Action) -> Outcome:
        """Plan and server-dry-run an action without writing or recording anything."""
        ref = action.ref()
        self.scope.check(ref)
        current = self.kube.get(ref)
        plan = action.plan(current, self._related(action, current))
        self._dry_run(plan)
        return Outcome(ref, action.intent(current), plan, applied=False)

    def execute(
        self,
        action: Action,
        *,
        actor: str,
        incident_id: str | None = None,
        transaction_id: str | None = None,
    ) -> Outcome:
        intent_holder: list[str] = []

        def planner(current: dict[str, Any] | None) -> Plan:
            if current is None:
                raise errors.NotFound(f"{action.ref()}: not found")
            intent_holder[:] = [action.intent(current)]
            return action.plan(current, self._related(action, current))

        return self.run(
            action.ref(),
            planner,
            action=action.name,
            actor=actor,
            intent=lambda: intent_holder[0],
            incident_id=incident_id,
            transaction_id=transaction_id,
            needs_inverse=action.reversible,
        )

    def _related(self, action: Action, current: dict[str, Any]) -> list[dict[str, Any]]:
        wanted = action.related()
        if wanted is None:
            return []
        labels = ((current.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        return self.kube.list(
            wanted[0], wanted[1], namespace=action.ref().namespace, label_selector=selector or None
        )

    # ------------------------------------------------------------ the write path

    def run(
        self,
        ref: ObjectRef,
        planner: Planner,
        *,
        action: str,
        actor: str,
        intent: Callable[[], str],
        incident_id: str | None = None,
        transaction_id: str | None = None,
        inverse_of: str | None = None,
        needs_inverse: bool = True,
    ) -> Outcome:
        """Plan against the object read under the lock, then write it through every step."""
        self.scope.check(ref)
        holder = f"{actor}@{socket.gethostname()}:{os.getpid()}/{uuid.uuid4().hex[:8]}"
        blocker = self.locks.acquire(ref.key, holder, ttl=self.lock_ttl, wait=self.lock_wait)
        if blocker is not None:
            who = blocker.holder.rpartition("@")[0] or blocker.holder.split("/")[0]
            raise errors.LockHeld(f"{ref} is being changed by {who}; try again when it is done")
        crashpoints.reached("locked")
        try:
            for attempt in (1, 2):
                plan = planner(self.kube.find(ref))
                if not plan.changes_anything:
                    return Outcome(ref, intent(), plan, applied=False)
                try:
                    self._dry_run(plan)
                except errors.Conflict as conflict:
                    if attempt == 2:
                        raise errors.Conflict(
                            f"{ref} keeps changing under Stratus: it changed again after a "
                            "fresh read; nothing was written"
                        ) from conflict
                    continue
                crashpoints.reached("dry-run")
                execution_id = self.executions.begin(
                    action=action,
                    operation=plan.operation,
                    api_version=ref.api_version,
                    kind=ref.kind,
                    namespace=ref.namespace,
                    name=ref.name,
                    actor=actor,
                    before_image=plan.before,
                    planned_after=plan.after,
                    diff=plan.diff,
                    intent=intent(),
                    incident_id=incident_id,
                    transaction_id=transaction_id,
                    inverse_of=inverse_of,
                )
                crashpoints.reached("write-ahead")
                try:
                    written = self._write(plan)
                except errors.Conflict as conflict:
                    self.executions.finish(
                        execution_id, ABORTED, "conflict: the object changed before the write"
                    )
                    if attempt == 2:
                        raise errors.Conflict(
                            f"{ref} keeps changing under Stratus: it changed "
                            "again after a fresh read; nothing was written"
                        ) from conflict
                    continue
                except errors.ToolError as error:
                    self.executions.finish(execution_id, FAILED, error.message)
                    raise
                crashpoints.reached("written")
                written_rv = (written or {}).get("metadata", {}).get("resourceVersion")
                undo_id = self.executions.mark_applied(
                    execution_id, written_rv, needs_inverse=needs_inverse
                )
                crashpoints.reached("recorded")
                self.audit.append(
                    actor=actor,
                    event="undo" if inverse_of else "write",
                    subject=str(ref),
                    payload={
                        "execution": execution_id,
                        "action": action,
                        "intent": intent(),
                        "operation": plan.operation,
                        "undo_entry": undo_id,
                        "inverse_of": inverse_of,
                        "incident": incident_id,
                        "diff": plan.diff,
                    },
                )
                return Outcome(
                    ref,
                    intent(),
                    plan,
                    applied=True,
                    execution_id=execution_id,
                    undo_id=undo_id,
                    written=written,
                )
            raise AssertionError("unreachable")
        finally:
            self.locks.release(ref.key, holder)

    def _dry_run(self, plan: Plan) -> None:
        self._write(plan, dry_run=True)

    def _write(self, plan: Plan, *, dry_run: bool = False) -> dict[str, Any] | None:
        if plan.operation == "replace":
            assert plan.after is not None
            return self.kube.replace(plan.after, dry_run=dry_run)
        if plan.operation == "create":
            assert plan.after is not None
            return self.kube.create(plan.after, dry_run=dry_run)
        assert plan.before is not None
        meta = plan.before["metadata"]
        ref = ObjectRef(plan.before["kind"], meta["name"], meta.get("namespace", ""))
        self.kube.delete(ref, resource_version=meta.get("resourceVersion"), dry_run=dry_run)
        return None

    # ------------------------------------------------------------ crash recovery

    def reconcile(self, actor: str = "stratus-reconciler") -> list[str]:
        """Resolve executions a crash left pending: was the write applied or not?"""
        resolved = [
            f"released the lock on {r} held by a process that died"
            for r in self.locks.release_dead(socket.gethostname())
        ]
        for execution in self.executions.pending():
            ref = ObjectRef(execution.kind, execution.name, execution.namespace)
            try:
                current = self.kube.find(ref)
            except errors.ToolError as error:
                resolved.append(f"{execution.id}: cannot tell yet ({error.message})")
                continue
            applied = self._was_applied(
                execution.operation, current, execution.before_image, execution.planned_after
            )
            if applied:
                written_rv = (current or {}).get("metadata", {}).get("resourceVersion")
                self.executions.mark_applied(
                    execution.id,
                    written_rv if applied == "yes" else None,
                    needs_inverse=execution.action not in IRREVERSIBLE,
                )
                verdict = (
                    "applied"
                    if applied == "yes"
                    else "possibly applied (changed since; undo will ask for --force)"
                )
            else:
                self.executions.finish(
                    execution.id, ABORTED, "not applied: the process stopped before the write"
                )
                verdict = "not applied"
            self.audit.append(
                actor=actor,
                event="reconcile",
                subject=str(ref),
                payload={"execution": execution.id, "verdict": verdict},
            )
            resolved.append(f"{execution.id}: {verdict}")
        return resolved

    @staticmethod
    def _was_applied(
        operation: str,
        current: dict[str, Any] | None,
        before: dict[str, Any] | None,
        after: dict[str, Any] | None,
    ) -> str:
        """'yes', 'unsure' (neither before nor after: someone changed it since) or ''."""
        if operation == "delete":
            same = (
                current is not None
                and before is not None
                and current["metadata"].get("uid") == before["metadata"].get("uid")
            )
            return "" if same else "yes"
        if operation == "create":
            return "yes" if current is not None else ""
        if current is None:
            return "unsure"
        if normalized(current) == normalized(after):
            return "yes"
        if normalized(current) == normalized(before):
            return ""
        return "unsure"
