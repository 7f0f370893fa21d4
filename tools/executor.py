"""The executor: the one path by which a write reaches the cluster.

For one write, the caller holds the object (``with executor.locked(ref, actor=…) as held``):
scope check → lock → refuse while an earlier write to it is unsettled; then it reads
(``held.read()``), plans (pure) and checks the plan is still the approved one itself, and
``held.apply(plan, record=…)`` does the server dry-run → write-ahead record (before-image and
planned after-image stored first, with the owning process) → the write, with the observed
resourceVersion. ``with held.recording(sent) as applied`` then opens ONE transaction with the
execution marked applied, in which the caller pushes the undo entry (``undo.entries``: tools/
does not know the undo stack), writes the write's audit row naming it (``applied.audit``) and
then its own rows; the lock is released when the caller leaves the ``locked`` block. Control
never climbs back into the caller: each step returns what happened.

A write whose answer was lost is never retried blindly: the executor reads the object to tell
whether it landed, and if it cannot tell, leaves the record pending for recovery. Recovery
(``unsettled`` → ``judge`` → ``settling``) only touches records whose owning process is gone,
so a slow write in another process is never declared "not applied" while it is still in
flight.

A dead owner settles nothing by itself: a write it sent may still be held by a proxy or the
API server and land later. Only the object decides. It shows the planned after-image: applied.
It moved past the resourceVersion the write was planned on without showing it: the write's
precondition can no longer hold, so it never will land — not applied. It still sits at that
resourceVersion: unknown for ``settle_after`` seconds from the moment the write was sent (the
record is stamped just before it leaves; a record never stamped was never sent); after that,
recovery *fences* the object (``tools.fences``) — a write under the same precondition that
only marks it, or for a create the approved create itself — so that exactly one of the two can
land, and judges again from what the object shows. While a write to an object is unknown, no
other write to that object starts.

The values a write passes through (``WriteRecord``, ``Sent``, ``AppliedWrite``) and the
errors that stop it on the way are in ``tools.write_steps``; reading the object right after a
lost answer is ``LostWrites.answer_lost`` (``tools.lost_writes``), beside recovery's judging.
"""

from __future__ import annotations

import contextlib
import logging
import socket
import sqlite3
from collections.abc import Callable, Iterator
from datetime import datetime
from typing import Any

from store.audit import AuditLog
from store.db import Store, StoreError
from store.locks import LeaseLocks, holder_alive, holder_name
from store.records import ABORTED, FAILED, PENDING, Execution, ExecutionLog
from tools import crashpoints, errors, secrets, write_steps
from tools.actions import Action, WritePlan
from tools.identity import KubeIdentity
from tools.k8s import KubeClient
from tools.lost_writes import Judged, LostWrites, Resolution
from tools.objects import ObjectRef
from tools.scope import WriteScope
from tools.write_steps import AppliedWrite, Replan, Sent, WriteRecord

log = logging.getLogger("stratus.executor")


class Executor:
    def __init__(
        self,
        kube: KubeClient,
        store: Store,
        *,
        scope: WriteScope | None = None,
        lock_ttl: float = 60.0,
        lock_wait: float = 10.0,
        settle_after: float | None = None,
        fence: Callable[[], None] | None = None,
        cluster: str = "",
        default: bool = True,
    ) -> None:
        self.kube = kube
        # Raises when this process may not write now: with leader election, only while it
        # holds the Lease (``tools.leader.Elector.ensure_leading``); None: always may.
        self.fence = fence
        self.store = store
        # Which cluster of the fleet ``kube`` talks to ('': the only one). ``default``: this
        # executor also owns the records written before fleets, which name no cluster.
        self.cluster = cluster
        self.default = default
        self.scope = scope or WriteScope()
        self.locks = LeaseLocks(store)
        self.executions = ExecutionLog(store)
        self.audit = AuditLog(store)
        self.lock_ttl = lock_ttl
        self.lock_wait = lock_wait
        # How long a write whose answer was lost may still land: twice the read timeout.
        self.settle_after = settle_after if settle_after is not None else 2 * kube.timeout[1]
        self.lost = LostWrites(
            kube, store, scope=self.scope, audit=self.audit, settle_after=self.settle_after
        )

    # ------------------------------------------------------------ actions

    def plan(self, action: Action) -> tuple[dict[str, Any], WritePlan]:
        """Read the target and plan the action (pure), without writing anything. For a create
        the object returned is the one it would make (there is nothing to read yet)."""
        ref = action.ref()
        self.scope.check(ref)
        if action.operation == "create":
            plan = action.plan(self.kube.find(ref))
            assert plan.after is not None
            return plan.after, plan
        current = self.kube.get(ref)
        return current, self.plan_action(action, current)

    def preview(
        self,
        action: Action,
        *,
        attempts: int = 3,
        writer: KubeIdentity | None = None,
        refused_ok: bool = False,
    ) -> tuple[dict[str, Any], WritePlan]:
        """WritePlan and server-dry-run an action (as ``writer``). An object that moves between
        the read and the dry-run is read again (a busy deployment's status changes all the
        time). ``refused_ok``: a 403 on the dry-run is no answer yet (writes made as the
        approver: the cluster decides for them, at execution, with its own dry-run)."""
        for attempt in range(1, attempts + 1):
            current, plan = self.plan(action)
            try:
                if plan.changes_anything:
                    self.dry_run(plan, writer=writer)
            except errors.Forbidden:
                if not refused_ok:
                    raise
            except errors.Conflict as conflict:
                if attempt == attempts:
                    raise errors.Conflict(
                        f"{action.ref()} kept changing while Stratus previewed the change "
                        f"({attempts} reads); nothing was written",
                        subject=str(action.ref()),
                    ) from conflict
                continue
            return current, plan
        raise AssertionError("unreachable")

    def related(self, action: Action, current: dict[str, Any]) -> list[dict[str, Any]]:
        wanted = action.related()
        if wanted is None:
            return []
        labels = ((current.get("spec") or {}).get("selector") or {}).get("matchLabels") or {}
        selector = ",".join(f"{k}={v}" for k, v in labels.items())
        return self.kube.list(
            wanted[0], wanted[1], namespace=action.ref().namespace, label_selector=selector or None
        )

    def plan_action(self, action: Action, current: dict[str, Any] | None) -> WritePlan:
        """The action's plan (pure) on the object as read; None is a create, or NotFound."""
        if current is None:
            return action.plan(None)
        return action.plan(current, self.related(action, current))

    # ------------------------------------------------------------ the write path

    def owns(self, cluster: str) -> bool:
        """Whether a record naming ``cluster`` was written through this executor's cluster."""
        return cluster == self.cluster or (not cluster and self.default)

    def lock_key(self, ref: ObjectRef) -> str:
        """The lease's name for one object: per cluster, so that the same deployment in two
        clusters is two resources (unnamed for the only cluster, as before fleets)."""
        return f"cluster:{self.cluster}/{ref.key}" if self.cluster else ref.key

    @contextlib.contextmanager
    def locked(self, ref: ObjectRef, *, actor: str) -> Iterator[HeldObject]:
        """Hold one object for a write: scope check, its lease, and no earlier write to it
        unsettled. The lease is released when the block ends, whatever happened in it."""
        self.scope.check(ref)
        if self.fence is not None:
            self.fence()  # before anything is locked or recorded: nothing to undo
        holder = holder_name(actor)
        blocker = self.locks.acquire(
            self.lock_key(ref), holder, ttl=self.lock_ttl, wait=self.lock_wait
        )
        if blocker is not None:
            who = blocker.holder.rpartition("@")[0] or blocker.holder.split("/")[0]
            raise errors.LockHeld(
                f"{ref} is being changed by {who}; try again when it is done", subject=str(ref)
            )
        crashpoints.reached("locked")
        try:
            self._refuse_unsettled(ref)
            yield HeldObject(self, ref, actor=actor, holder=holder)
        finally:
            # A database that cannot take the release (a full disk) must not hide what
            # happened to the write; the lease ends with this process or its TTL anyway.
            with contextlib.suppress(sqlite3.Error, StoreError):
                self.locks.release(self.lock_key(ref), holder)

    @contextlib.contextmanager
    def _applying(
        self,
        *,
        execution_id: str,
        ref: ObjectRef,
        plan: WritePlan,
        written: dict[str, Any] | None,
        record: WriteRecord,
        actor: str,
        verdict: str,
    ) -> Iterator[AppliedWrite]:
        """ONE transaction (joining the caller's): the write's record marked applied, and
        whatever the caller writes in the block — its undo entry, the audit row
        (``AppliedWrite.audit``), its own rows."""
        written_rv = (written or {}).get("metadata", {}).get("resourceVersion")
        with self.store.immediate():
            execution = self.executions.mark_applied(
                execution_id, written_rv if verdict == "applied" else None
            )
            applied = AppliedWrite(
                self.audit,
                execution=execution,
                ref=ref,
                plan=plan,
                record=record,
                actor=actor,
                verdict=verdict,
            )
            yield applied
            applied.check_audited()

    def _keep_secret(self, execution_id: str, plan: WritePlan) -> bool:
        """Before a Secret is overwritten, its values go to a keeper in the cluster (never to
        the store), for undo. A keeper that cannot be written stops the write."""
        if plan.operation == "create" or not secrets.is_secret(plan.before):
            return False
        assert plan.before is not None
        keeper = secrets.keeper(execution_id, plan.before)
        ref = secrets.keeper_ref(execution_id, plan.before["metadata"].get("namespace", ""))
        try:
            self.scope.check(ref)
            self.kube.create(keeper)
        except errors.ToolError as error:
            self.executions.finish(
                execution_id, ABORTED, f"the Secret's values could not be kept: {error.message}"
            )
            raise errors.ToolError(
                f"nothing was written: {ref} could not be created to keep the values undo "
                f"would restore ({error.message})",
                subject=str(ref),
            ) from error
        return True

    def forget_secret(self, execution_id: str, namespace: str) -> None:
        """Delete a keeper whose values are no longer needed; one left behind holds only
        what the cluster already held, so a failure is logged, not raised."""
        ref = secrets.keeper_ref(execution_id, namespace)
        try:
            self.kube.delete(ref)
        except errors.NotFound:
            pass
        except errors.ToolError as error:
            log.warning("could not delete %s: %s", ref, error.message)

    def dry_run(self, plan: WritePlan, *, writer: KubeIdentity | None = None) -> None:
        self._write(plan, dry_run=True, writer=writer)

    def _write(
        self, plan: WritePlan, *, dry_run: bool = False, writer: KubeIdentity | None = None
    ) -> dict[str, Any] | None:
        with self.kube.acting_as(writer):
            return self._send(plan, dry_run=dry_run)

    def _send(self, plan: WritePlan, *, dry_run: bool) -> dict[str, Any] | None:
        if plan.operation == "replace":
            assert plan.after is not None
            return self.kube.replace(plan.after, dry_run=dry_run)
        if plan.operation == "create":
            assert plan.after is not None
            return self.kube.create(plan.after, dry_run=dry_run)
        assert plan.before is not None
        meta = plan.before["metadata"]
        ref = ObjectRef(plan.before["kind"], meta["name"], meta.get("namespace", ""))
        # Both preconditions: the object as planned on, not one re-created under its name.
        self.kube.delete(
            ref, resource_version=meta.get("resourceVersion"), uid=meta.get("uid"), dry_run=dry_run
        )
        return None

    # ------------------------------------------------------------ crash recovery

    def unsettled(self, *, ref: ObjectRef | None = None) -> list[Execution]:
        """Writes a crash (or a lost answer) left pending whose owner is gone: a process on
        this host that no longer runs, a record its writer gave up on, or — for another host —
        one whose lease has expired. With ``ref``, only the writes to that object."""
        self.locks.release_dead(socket.gethostname())
        pending = (
            self.executions.pending()
            if ref is None
            else self.executions.pending_on(kind=ref.kind, namespace=ref.namespace, name=ref.name)
        )
        return [
            execution
            for execution in pending
            if self.owns(execution.cluster) and self._owner_gone(execution)
        ]

    def judge(
        self, execution: Execution, *, actor: str = "stratus-reconciler", creates_held: str = ""
    ) -> Judged | Resolution:
        """Did an interrupted write land? (``tools.lost_writes.LostWrites.judge``)."""
        return self.lost.judge(execution, actor=actor, creates_held=creates_held)

    def settles_by(self, execution: Execution) -> datetime:
        return self.lost.settles_by(execution)

    @contextlib.contextmanager
    def settling(
        self, judged: Judged, *, actor: str
    ) -> Iterator[tuple[Resolution, AppliedWrite | None] | None]:
        """Record a judged write in one transaction that first checks the record is still
        pending (None when another process resolved it first); the caller's rows commit in
        it. Applied (or possibly): the record applied and an ``AppliedWrite`` for the caller,
        who pushes the undo entry and audits it, as after ``HeldObject.recording``. Not
        applied: the record aborted and an audit row; no ``AppliedWrite``."""
        execution = judged.execution
        ref = ObjectRef(execution.kind, execution.name, execution.namespace)
        with self.store.immediate():
            fresh = self.executions.get(execution.id)
            if fresh is None or fresh.state != PENDING:
                yield None
                return
            if judged.applied:
                verdict = "applied" if judged.applied == "yes" else "possibly applied"
                with self._applying(
                    execution_id=execution.id,
                    ref=ref,
                    plan=WritePlan(
                        execution.operation,
                        execution.before_image,
                        execution.planned_after,
                        execution.diff,
                    ),
                    written=judged.current,
                    record=WriteRecord(
                        action=execution.action,
                        intent=execution.intent,
                        incident_id=execution.incident_id,
                        inverse_of=execution.inverse_of,
                    ),
                    actor=actor,
                    verdict=verdict,
                ) as applied:
                    yield Resolution(execution, verdict), applied
                return
            self.executions.finish(execution.id, ABORTED, f"not applied: {judged.why}")
            self.audit.append(
                actor=actor,
                event="reconcile",
                subject=str(ref),
                payload={
                    "execution": execution.id,
                    "verdict": "not applied",
                    "why": judged.why,
                    **({"cluster": execution.cluster} if execution.cluster else {}),
                },
            )
            yield Resolution(execution, "not applied", why=judged.why), None
        if secrets.is_secret(execution.before_image) and not execution.inverse_of:
            self.forget_secret(execution.id, execution.namespace)  # nothing to undo

    def _refuse_unsettled(self, ref: ObjectRef) -> None:
        """One unsettled write per object: a new write planned on an object that an earlier
        write may still change would race it (and the undo stack would order them wrongly)."""
        earlier = [
            execution
            for execution in self.executions.pending_on(
                kind=ref.kind, namespace=ref.namespace, name=ref.name
            )
            if self.owns(execution.cluster)
        ]
        if not earlier:
            return
        first = earlier[0]
        raise errors.LockHeld(
            f"{ref}: an earlier write ({first.id}, {first.intent}) was sent but its outcome is "
            "not recorded yet; recovery records it as soon as the object shows whether it "
            f"landed, by {self.settles_by(first):%Y-%m-%d %H:%M:%S} UTC at the latest; "
            "nothing was written",
            subject=str(ref),
            details={"execution": first.id},
        )

    def _owner_gone(self, execution: Execution) -> bool:
        if not execution.owner:
            return True  # its writer gave up on it (a lost answer), or it predates owners
        alive = holder_alive(execution.owner)
        if alive is not None:
            return not alive
        return not self.locks.held_by(execution.owner)  # another host: its lease tells


class HeldObject:
    """One object held for a write (``Executor.locked``): read it, check a plan names it,
    apply the plan, record it. Each step returns what happened; none calls the caller."""

    def __init__(self, executor: Executor, ref: ObjectRef, *, actor: str, holder: str) -> None:
        self.executor = executor
        self.ref = ref
        self.actor = actor
        self.holder = holder
        self.conflicts = 0

    def read(self) -> dict[str, Any] | None:
        """The object as it is now, under the lock (None when it does not exist)."""
        return self.executor.kube.find(self.ref)

    def check(self, plan: WritePlan) -> None:
        """The write goes only to the object that was checked: a plan (or a stored
        before-image) that names another object is refused before anything is sent."""
        write_steps.check_identity(plan, self.ref)

    def apply(self, plan: WritePlan, *, record: WriteRecord) -> Sent:
        """Server dry-run → write-ahead record → the write. ``Replan`` when the object moved
        since it was read (once; then the "keeps changing" conflict); ``OutcomeUnknown`` when
        the answer was lost and the object does not show the write."""
        executor, ref = self.executor, self.ref
        try:
            # As the writer: a cluster that refuses them refuses here, before any record.
            executor.dry_run(plan, writer=record.writer)
        except errors.Conflict as conflict:
            raise self._moved() from conflict
        crashpoints.reached("dry-run")
        execution_id = executor.executions.begin(
            action=record.action,
            operation=plan.operation,
            api_version=ref.api_version,
            kind=ref.kind,
            namespace=ref.namespace,
            name=ref.name,
            actor=self.actor,
            # A Secret's values are stored as digests only (``tools.secrets``).
            before_image=secrets.stored_image(plan.before),
            planned_after=secrets.stored_image(plan.after),
            diff=plan.diff,
            intent=record.intent,
            owner=self.holder,
            proposal_id=record.proposal_id,
            incident_id=record.incident_id,
            inverse_of=record.inverse_of,
            cluster=executor.cluster,
        )
        crashpoints.reached("write-ahead")
        keeps = (
            record.needs_inverse
            and record.inverse_of is None
            and executor._keep_secret(execution_id, plan)
        )
        if not executor.executions.mark_sent(execution_id):
            if keeps:
                executor.forget_secret(execution_id, ref.namespace)
            raise errors.LockHeld(
                f"{ref}: this write was settled as not applied by another process's "
                "recovery before it was sent (this process was taken for gone); "
                "nothing was written",
                subject=str(ref),
            )
        try:
            written = executor._write(plan, writer=record.writer)
        except errors.Conflict as conflict:
            executor.executions.finish(
                execution_id, ABORTED, "conflict: the object changed before the write"
            )
            if keeps:
                executor.forget_secret(execution_id, ref.namespace)
            raise self._moved() from conflict
        except errors.Unavailable as lost:
            written = executor.lost.answer_lost(execution_id, ref, plan, lost)
        except errors.ToolError as error:
            executor.executions.finish(execution_id, FAILED, error.message)
            if keeps:
                executor.forget_secret(execution_id, ref.namespace)
            raise
        crashpoints.reached("written")
        return Sent(ref, execution_id, plan, written, record)

    @contextlib.contextmanager
    def recording(self, sent: Sent) -> Iterator[AppliedWrite]:
        """ONE transaction: the write's record applied, then what the caller writes inside the
        block — its undo entry (``undo.entries``), the audit row naming it
        (``applied.audit``), its own rows. A database that fails here leaves the record
        pending (``NotRecorded``): the change is in the cluster, and recovery records it at
        the next command."""
        try:
            with self.executor._applying(
                execution_id=sent.execution_id,
                ref=sent.ref,
                plan=sent.plan,
                written=sent.written,
                record=sent.record,
                actor=self.actor,
                verdict="applied",
            ) as applied:
                yield applied
        except (sqlite3.Error, StoreError) as failure:
            raise write_steps.not_recorded(
                sent.ref, sent.record.intent, sent.execution_id, failure
            ) from failure
        crashpoints.reached("recorded")

    def _moved(self) -> errors.Conflict:
        self.conflicts += 1
        if self.conflicts >= 2:
            return write_steps.keeps_changing(self.ref)
        return Replan(f"{self.ref} changed since it was read; read it again", subject=str(self.ref))
