"""The values one write passes through on the executor's path, and the errors that stop it.

What its write-ahead record says (``WriteRecord``), the write once it reached the object
(``Sent``), the write marked applied whose audit row the caller must write in the same
transaction (``AppliedWrite``), and the refusals on the way: the object moved (``Replan``,
then "keeps changing"), the plan names another object, the change is in the cluster but not
in the database. Apart from ``tools.executor`` so that the executor reads as the path itself;
this module knows nothing of the executor (an ``AppliedWrite`` is given the audit log).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from store.audit import AuditLog
from store.db import StoreError
from store.records import Execution
from tools import errors
from tools.actions import WritePlan
from tools.identity import KubeIdentity
from tools.objects import ObjectRef, same_object


@dataclass(frozen=True)
class WriteRecord:
    """What the write-ahead record says about a write besides its plan."""

    action: str
    intent: str
    proposal_id: str | None = None
    incident_id: str | None = None
    inverse_of: str | None = None  # the execution this write undoes
    needs_inverse: bool = True  # False for an irreversible action: no Secret keeper to keep
    # Whom the dry-run and the write are sent as (impersonation); None: Stratus itself.
    writer: KubeIdentity | None = None


@dataclass(frozen=True)
class Sent:
    """A write that reached the object (read back when its answer was lost), not yet recorded
    as applied: ``held.recording(sent)`` does that."""

    ref: ObjectRef
    execution_id: str
    plan: WritePlan
    written: dict[str, Any] | None
    record: WriteRecord


class Replan(errors.Conflict):
    """The object moved between the read and the write (the dry-run or the write met 409):
    nothing was written; read and plan again. Raised once per held object; the second time
    the executor raises the "keeps changing" conflict instead."""


class AppliedWrite:
    """A write just marked applied, inside the transaction that records it
    (``HeldObject.recording``, ``Executor.settling``). The caller pushes its undo entry
    (``undo.entries``), then ``audit(undo_entry=…)`` writes the write's audit row naming that
    entry, then the caller writes its own rows; all commit together. Leaving the block
    without the audit row rolls the transaction back: an applied write is never unaudited."""

    def __init__(
        self,
        audit: AuditLog,
        *,
        execution: Execution,
        ref: ObjectRef,
        plan: WritePlan,
        record: WriteRecord,
        actor: str,
        verdict: str,
    ) -> None:
        self._audit = audit
        self.execution = execution  # as recorded now: applied, with the resourceVersion written
        self.ref = ref
        self.plan = plan
        self.record = record
        self.actor = actor
        self.verdict = verdict  # applied, or possibly applied (recovery)
        self.audited = False

    def audit(self, *, undo_entry: str | None) -> None:
        """The write's audit row, naming its undo entry (None: an undo, which pushes none)."""
        record, plan = self.record, self.plan
        self._audit.append(
            actor=self.actor,
            event="undo" if record.inverse_of else "write",
            subject=str(self.ref),
            payload={
                "execution": self.execution.id,
                "action": record.action,
                "intent": record.intent,
                "operation": plan.operation,
                "undo_entry": undo_entry,
                "inverse_of": record.inverse_of,
                "incident": record.incident_id,
                "diff": plan.diff,
                "verdict": self.verdict,
                "record_digest": self.execution.before_digest,
                **({"sent_as": str(record.writer)} if record.writer else {}),
                **({"cluster": self.execution.cluster} if self.execution.cluster else {}),
            },
        )
        self.audited = True

    def check_audited(self) -> None:
        if not self.audited:
            raise RuntimeError(
                f"execution {self.execution.id} was marked applied without its audit row; "
                "the transaction is rolled back"
            )


def check_identity(plan: WritePlan, ref: ObjectRef) -> None:
    """The write goes only to the object that was checked: a plan (or a stored before-image)
    that names another object is refused before anything is sent."""
    for body in (plan.before, plan.after):
        if not same_object(body, ref):
            meta = (body or {}).get("metadata") or {}
            raise errors.Tampered(
                f"refusing to write: the planned object "
                f"{(body or {}).get('kind')}/{meta.get('namespace')}/{meta.get('name')} is not "
                f"{ref}",
                subject=str(ref),
            )


def not_recorded(
    ref: ObjectRef, intent: str, execution_id: str, failure: Exception
) -> errors.NotRecorded:
    why = failure.message if isinstance(failure, StoreError) else str(failure)
    return errors.NotRecorded(
        f"the change is in the cluster ({intent}), but the database could not record it "
        f"({why}); its record {execution_id} stays pending, and recovery records it as "
        "applied, with its undo entry, the next time Stratus runs once the database takes "
        "writes again",
        subject=str(ref),
        details={"execution": execution_id},
    )


def keeps_changing(ref: ObjectRef) -> errors.Conflict:
    return errors.Conflict(
        f"{ref} keeps changing under Stratus: it changed again after a fresh read; nothing "
        "was written",
        subject=str(ref),
    )
