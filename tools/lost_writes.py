"""Writes whose answer was lost: did they land? Only the object decides (``tools.executor``'s
docstring tells the whole rule). ``judge`` reads the object; while it cannot tell and the
grace period (``settle_after`` from the moment the write was sent) has not passed, it says
"cannot tell yet"; past it, it *fences* the object (``tools.fences``) so that exactly one of
the write and the fence can land, and judges again from what the object then shows.
``answer_lost`` is the same question asked at once, by the write that lost its answer: the
object read right away, and the record left pending for recovery when it does not say."""

from __future__ import annotations

import contextlib
import sqlite3
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from store.audit import AuditLog
from store.clock import parse_stamp
from store.db import Store, StoreError
from store.records import Execution, ExecutionLog
from tools import errors, fences, secrets
from tools.actions import WritePlan
from tools.k8s import KubeClient
from tools.landing import moved_past, planned_rv, was_applied
from tools.objects import FENCE_ANNOTATION, ObjectRef, same_object
from tools.scope import WriteScope


@dataclass(frozen=True)
class Resolution:
    """What recovery decided about one interrupted execution."""

    execution: Execution
    verdict: str  # applied, possibly applied, not applied, cannot tell yet
    why: str = ""  # for "not applied" and "cannot tell yet": what the object showed

    @property
    def settled(self) -> bool:
        return not self.verdict.startswith("cannot tell yet")

    def __str__(self) -> str:
        why = f" ({self.why})" if self.why else ""
        return f"{self.execution.id} ({self.execution.intent}): {self.verdict}{why}"


@dataclass(frozen=True)
class Judged:
    """What the object says about an interrupted write, before it is recorded: ``applied`` is
    'yes', 'unsure' (possibly applied) or '' (not applied, for the reason ``why``)."""

    execution: Execution
    current: dict[str, Any] | None
    applied: str
    why: str = ""


class LostWrites:
    """Judges the writes recovery found unsettled, and fences the ones still unknown; reads the
    object right after a write whose answer was lost."""

    def __init__(
        self,
        kube: KubeClient,
        store: Store,
        *,
        scope: WriteScope,
        audit: AuditLog,
        settle_after: float,
    ) -> None:
        self.kube = kube
        self.store = store
        self.scope = scope
        self.audit = audit
        self.settle_after = settle_after

    def judge(
        self, execution: Execution, *, actor: str = "stratus-reconciler", creates_held: str = ""
    ) -> Judged | Resolution:
        """Did an interrupted write land? Read the object and judge; past the grace period,
        fence it and judge again. A ``Resolution`` "cannot tell yet" when the object does not
        say; ``creates_held`` says why a held create must not be completed by its fence now
        (Stratus is paused)."""
        ref = ObjectRef(execution.kind, execution.name, execution.namespace)
        for _ in range(fences.ROUNDS):
            try:
                current = self.kube.find(ref)
            except errors.ToolError as error:
                return Resolution(execution, "cannot tell yet", why=error.message)
            # A record never stamped as sent was never sent: whatever the object shows now is
            # someone else's doing.
            applied = execution.sent_at and was_applied(
                execution.operation, current, execution.before_image, execution.planned_after
            )
            why = ""
            if not applied:
                why, settled = self._not_landed(execution, current)
                if not settled and self.store.clock.now() < self.settles_by(execution):
                    return Resolution(execution, "cannot tell yet", why=why)
                if not settled:
                    unfenced = self._fence(execution, ref, current, actor, creates_held)
                    if unfenced:
                        return Resolution(execution, "cannot tell yet", why=unfenced)
                    continue  # the fence was answered: the object says what happened now
            return Judged(execution, current, applied or "", why)
        return Resolution(
            execution,
            "cannot tell yet",
            why="the object kept changing while recovery fenced the write; tried again later",
        )

    def _not_landed(self, execution: Execution, current: dict[str, Any] | None) -> tuple[str, bool]:
        """For a write the object does not show: why, and whether that is final. The owner's
        death proves nothing (the request may be held on its way); the object does."""
        if execution.sent_at is None:
            return "its process stopped before sending it", True
        planned_on = planned_rv(execution)
        moved = moved_past(execution.operation, current, planned_on)
        if moved and fences.fenced_by(current) == execution.id:
            return (
                f"the object did not show it within {self.settle_after:g} s of sending, and "
                f"recovery fenced it (resourceVersion {planned_on} → {moved}, "
                f"annotation {FENCE_ANNOTATION}), so it can never land",
                True,
            )
        if moved:
            return (
                f"the object moved on (resourceVersion {planned_on} → {moved}) "
                "without it, so its precondition can no longer hold",
                True,
            )
        deadline = self.settles_by(execution)
        if self.store.clock.now() >= deadline:
            return f"the object did not show it within {self.settle_after:g} s of sending", False
        return (
            "the write may still be on its way; settled by "
            f"{deadline:%Y-%m-%d %H:%M:%S} UTC at the latest",
            False,
        )

    def _fence(
        self,
        execution: Execution,
        ref: ObjectRef,
        current: dict[str, Any] | None,
        actor: str,
        creates_held: str = "",
    ) -> str:
        """Write the fence of a write whose grace period has passed (``tools.fences``). ''
        when it was answered — it landed, or met 409 because the object moved — so the object
        is judged again; otherwise why the write stays unknown: the fence could not be sent,
        or its own answer was lost (it may be held too; the next recovery reads the object,
        and fences again under the same precondition if it must)."""
        cannot = "the object does not show it yet and recovery cannot fence it"
        if not execution.intact():
            return f"{cannot}: its record was edited after it was written"
        if execution.operation == "create" and creates_held:
            # A create's fence is the approved create itself: a real change, held like any.
            return f"{cannot} now: {creates_held}"
        try:
            self.scope.check(ref)
            if execution.operation == "create":
                body = self._approved_create(execution, ref)
            elif current is None or not planned_rv(execution):
                return f"{cannot}: it names no resourceVersion to fence"
            else:
                body = fences.fence_body(
                    current, execution_id=execution.id, precondition=planned_rv(execution)
                )
        except errors.ToolError as error:
            return f"{cannot}: {error.message}"
        with self.store.immediate():
            self.audit.append(
                actor=actor,
                event="fence",
                subject=str(ref),
                payload={
                    **fences.audit_payload(
                        execution_id=execution.id,
                        operation=execution.operation,
                        precondition=planned_rv(execution),
                    ),
                    **({"cluster": execution.cluster} if execution.cluster else {}),
                },
            )
        try:
            if execution.operation == "create":
                self.kube.create(body)
            else:
                self.kube.replace(body)
        except errors.Conflict:
            return ""  # the object moved: read it again
        except errors.Unavailable as lost:
            return f"recovery fenced it, but the fence's answer was lost ({lost.message})"
        except errors.ToolError as error:
            return f"{cannot}: {error.message}"
        return ""

    def _approved_create(self, execution: Execution, ref: ObjectRef) -> dict[str, Any]:
        """The object a create was approved to make, as it was sent. A Secret's values are
        stored as digests only: they come back from the keeper of the write it undoes."""
        body = execution.planned_after
        if body is None or not same_object(body, ref):
            raise errors.Tampered(f"its record names no object to create as {ref}")
        if not secrets.is_secret(body):
            return body
        if not execution.inverse_of:
            raise errors.NotFound("the values of the Secret it creates are not kept anywhere")
        kept = self.kube.find(secrets.keeper_ref(execution.inverse_of, execution.namespace))
        return secrets.restored(body, kept, execution_id=execution.inverse_of)

    def answer_lost(
        self, execution_id: str, ref: ObjectRef, plan: WritePlan, lost: errors.Unavailable
    ) -> dict[str, Any] | None:
        """A write just sent whose answer was lost (the executor's path, not recovery): read
        the object to tell whether it landed; if that cannot be told, leave the record pending
        for recovery and say so."""
        try:
            current = self.kube.find(ref)
        except errors.ToolError:
            current = None
            verdict = "cannot tell"
        else:
            verdict = was_applied(plan.operation, current, plan.before, plan.after)
        if verdict == "yes":
            return current
        # Unchanged is not proof: a gateway may answer 504 while the write is still on its
        # way. The record stays pending, owned by nobody; recovery decides after a grace
        # period (``settle_after``) — applied if it landed, not applied if it never did.
        with contextlib.suppress(sqlite3.Error, StoreError):
            # A database that fails now leaves the record owned by this process: recovery
            # takes it over when the process has ended, which is as good.
            ExecutionLog(self.store).orphan(execution_id, f"outcome unknown: {lost.message}")
        raise errors.OutcomeUnknown(
            f"{ref}: the API server did not confirm the write ({lost.message}); the record "
            f"{execution_id} stays pending until recovery reads the object and decides",
            subject=str(ref),
            details={"execution": execution_id},
        ) from lost

    def settles_by(self, execution: Execution) -> datetime:
        """When a sent write that the object does not show is declared "not applied": a write
        still in flight by then would have landed or timed out on the server."""
        sent = parse_stamp(execution.sent_at or execution.updated_at or execution.created_at)
        return sent + timedelta(seconds=self.settle_after)
