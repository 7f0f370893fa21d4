"""The kill switch: while Stratus is paused, nothing executes without a human.

The switch is a stream of events in the store (``pause``/``resume``, each with who and why),
so every process sees the same state and the history is kept; each flip is also an audit row.
It is enforced where decisions are made (``proposals.core.decide_now``): while paused, a
decision that would allow a write without a human (a rule or an "Always allow" grant) asks
instead, with the policy's default approvers. Execution re-decides under the object's lock, so work
that was auto-allowed before the pause and has not run yet is superseded by a proposal that
asks a human — nothing is written, nothing is lost. Who may flip the switch is the surface's
question (the bot lets the policy's default approvers do it); this module only stores it.

Whoever can write the database file could lift a pause by appending a "resumed" event, or by
deleting the "paused" one. So each flip carries a ``seal`` (``store.integrity``: an HMAC under
``STRATUS_AUDIT_KEY``) over what it says and the seal of the flip before it, and its audit row
records the same seal. The state counts only when the newest event's seal is genuine, the
newest pause/resume audit row is proven and records that seal, and no audit row was taken out
since; anything else reads as **paused** (fail closed), naming what was found, and
``stratus audit verify`` lists it. A pause or resume made through Stratus seals a new state.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from policies.approvers import conjunction
from policies.evaluate import CompiledPolicy, PolicyDecision
from store import integrity
from store.audit import AuditLog, ProvenRecord
from store.clock import parse_stamp
from store.db import Store
from store.events import EventStore

STREAM = "killswitch"
SUBJECT = "stratus"
FLIPS = ("pause", "resume")  # the audit events of a flip


@dataclass(frozen=True)
class SwitchState:
    paused: bool
    actor: str = ""
    reason: str = ""
    at: datetime | None = None
    # What was done to the stored switch outside Stratus ("": intact); it then reads paused.
    tampered: str = ""


def flip_seal(*, paused: bool, actor: str, reason: str, previous: str) -> str:
    """What a flip's seal binds: the state, who set it and why, and the flip before it."""
    return integrity.digest(
        {
            "record": "killswitch",
            "paused": paused,
            "actor": actor,
            "reason": reason,
            "previous": previous,
        }
    )


class KillSwitch:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.events = EventStore(store)
        self.audit = AuditLog(store)

    def state(self) -> SwitchState:
        """The switch as stored, checked against its seal and audit row. Read without a lock
        first; a problem is confirmed under the write lock, where a flip committing between
        the reads of the event and of its audit row cannot be mistaken for tampering."""
        state = self._read()
        if state.tampered:
            with self.store.immediate():
                state = self._read()
        return state

    def _read(self) -> SwitchState:
        rows = self.store.query(
            "SELECT at, payload FROM events WHERE stream = ? ORDER BY seq DESC LIMIT 1", [STREAM]
        )
        audited = self.audit.newest_event(events=FLIPS, subject=SUBJECT)
        if not rows:
            if audited is None:
                return SwitchState(paused=False)
            return _tampered("its events were removed (the audit log recorded a flip)")
        try:
            payload = json.loads(rows[0]["payload"])
        except ValueError:
            payload = None
        if not isinstance(payload, dict):
            return _tampered("its newest event is not a flip")
        problem = _problem(payload, audited) or (
            self.audit.removed_since(audited.record.seq) if audited else None
        )
        if problem:
            return _tampered(problem)
        return SwitchState(
            paused=bool(payload.get("paused")),
            actor=str(payload.get("actor", "")),
            reason=str(payload.get("reason", "")),
            at=parse_stamp(rows[0]["at"]),
        )

    def pause(self, *, actor: str, reason: str = "") -> SwitchState:
        return self._flip(paused=True, actor=actor, reason=reason)

    def resume(self, *, actor: str, reason: str = "") -> SwitchState:
        return self._flip(paused=False, actor=actor, reason=reason)

    def _flip(self, *, paused: bool, actor: str, reason: str) -> SwitchState:
        with self.store.immediate():
            before = self.state()
            if before.paused == paused and not before.tampered:
                return before
            # A tampered switch reads paused; pausing or resuming through Stratus seals anew.
            previous = self.store.query(
                "SELECT json_extract(payload, '$.seal') AS seal FROM events WHERE stream = ? "
                "ORDER BY seq DESC LIMIT 1",
                [STREAM],
            )
            seal = flip_seal(
                paused=paused,
                actor=actor,
                reason=reason,
                previous=str(previous[0]["seal"] or "") if previous else "",
            )
            payload = {
                "paused": paused,
                "actor": actor,
                "reason": reason,
                "previous": str(previous[0]["seal"] or "") if previous else "",
                "seal": seal,
            }
            self.events.append(
                stream=STREAM,
                subject=SUBJECT,
                type="killswitch.paused" if paused else "killswitch.resumed",
                version=1,
                payload=payload,
            )
            self.audit.append(
                actor=actor,
                event="pause" if paused else "resume",
                subject=SUBJECT,
                payload={"reason": reason, "paused": paused, "seal": seal},
            )
        return self.state()


def _tampered(problem: str) -> SwitchState:
    return SwitchState(
        paused=True,
        actor="",
        reason=f"the kill switch was changed outside Stratus: {problem}",
        tampered=problem,
    )


def _problem(payload: dict[str, Any], audited: ProvenRecord | None) -> str | None:
    """What was done to the newest flip outside Stratus (None: intact)."""
    if audited is None:
        return "no audit row records its newest flip (inserted outside Stratus)"
    if not audited.proven:
        return f"audit row {audited.record.seq}, its newest flip, was not written by Stratus"
    recorded = audited.record.payload.get("seal")
    seal = str(payload.get("seal") or "")
    if not recorded and not seal:
        # A flip stored before seals: it counts while the audit log agrees with it.
        if (audited.record.event == "pause") != bool(payload.get("paused")):
            return f"its newest event does not say what audit row {audited.record.seq} says"
        return None
    key = integrity.audit_key()
    if key is None and seal.startswith("hmac-"):
        return f"it was sealed with {integrity.KEY_ENV}, which is not set: it cannot be checked"
    if key is not None and not seal.startswith("hmac-"):
        return (
            f"its newest flip was stored without {integrity.KEY_ENV} (before the key was set, "
            "or forged)"
        )
    expected = flip_seal(
        paused=bool(payload.get("paused")),
        actor=str(payload.get("actor", "")),
        reason=str(payload.get("reason", "")),
        previous=str(payload.get("previous", "")),
    )
    if not integrity.matches_digest(expected, seal):
        return "its newest event was edited or inserted (its seal does not match)"
    if recorded != seal:
        return (
            f"its newest event is not the flip audit row {audited.record.seq} recorded "
            "(an older one put back, or a newer one removed)"
        )
    return None


def while_paused(
    decision: PolicyDecision, policy: CompiledPolicy, switch: SwitchState
) -> PolicyDecision:
    """The decision while paused: an allow asks a human (the policy's default approvers)."""
    if switch.paused and decision.approve_plan:
        # A plan approval given before the pause is not a human answering this write now.
        return replace(decision, approve_plan=False)
    if not switch.paused or decision.outcome != "allow":
        return decision
    defaults = policy.policy.defaults
    by = f" by {switch.actor}" if switch.actor else ""
    if switch.tampered:
        by = f" ({switch.reason}; pause or resume it again)"
    return replace(
        decision,
        outcome="ask",
        reason=f"asks: Stratus is paused{by}; {decision.reason.removeprefix('allowed: ')} "
        "would have allowed it, but every write needs a human until it resumes",
        source="killswitch",
        grant=None,
        remember=False,
        max_grant_seconds=0,
        approvers=conjunction([defaults.approvers]),
        min_approvals=defaults.min_approvals,
        self_approval=defaults.self_approval,
    )
