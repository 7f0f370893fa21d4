"""The kill switch: while Stratus is paused, nothing executes without a human.

The switch is a stream of events in the store (``pause``/``resume``, each with who and why),
so every process sees the same state and the history is kept; each flip is also an audit row.
It is enforced where decisions are made (``ServiceCore._decide``): while paused, a decision that
would allow a write without a human (a rule or an "Always allow" grant) asks instead, with the
policy's default approvers. The execution guard re-decides under the object's lock, so work
that was auto-allowed before the pause and has not run yet is superseded by a proposal that
asks a human — nothing is written, nothing is lost. Who may flip the switch is the surface's
question (the bot lets the policy's default approvers do it); this module only stores it.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, replace
from datetime import datetime

from policies.approvers import conjunction
from policies.evaluate import CompiledPolicy, PolicyDecision
from store.audit import AuditLog
from store.clock import parse_stamp
from store.db import Store
from store.events import EventStore

STREAM = "killswitch"
SUBJECT = "stratus"


@dataclass(frozen=True)
class SwitchState:
    paused: bool
    actor: str = ""
    reason: str = ""
    at: datetime | None = None


class KillSwitch:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.events = EventStore(store)

    def state(self) -> SwitchState:
        rows = self.store.query(
            "SELECT at, payload FROM events WHERE stream = ? ORDER BY seq DESC LIMIT 1", [STREAM]
        )
        if not rows:
            return SwitchState(paused=False)
        payload = json.loads(rows[0]["payload"])
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
            if before.paused == paused:
                return before
            payload = {"paused": paused, "actor": actor, "reason": reason}
            self.events.append(
                stream=STREAM,
                subject=SUBJECT,
                type="killswitch.paused" if paused else "killswitch.resumed",
                version=1,
                payload=payload,
            )
            AuditLog(self.store).append(
                actor=actor,
                event="pause" if paused else "resume",
                subject=SUBJECT,
                payload={"reason": reason},
            )
        return self.state()


def while_paused(
    decision: PolicyDecision, policy: CompiledPolicy, switch: SwitchState
) -> PolicyDecision:
    """The decision while paused: an allow asks a human (the policy's default approvers)."""
    if not switch.paused or decision.outcome != "allow":
        return decision
    defaults = policy.policy.defaults
    by = f" by {switch.actor}" if switch.actor else ""
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
