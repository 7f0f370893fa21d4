"""Who leads: the pure decisions of leader election over a ``coordination.k8s.io/v1`` Lease.

One Stratus acts at a time — a stuck old pod and its replacement must never both take Slack
events and write. They agree through a Lease, as every Kubernetes controller does (client-go's
``leaderelection`` package, whose defaults these are: a lease lasts 15 s, the leader must renew
within 10 s, everyone retries every 2 s):

- no Lease yet → create it, holding it;
- held by me → renew it (``renewTime`` = now);
- released (no holder) → take it at once;
- held by another, and not renewed for a whole lease duration as *I* observed it → take it
  (``leaseTransitions`` + 1); otherwise wait.

Expiry is measured from when this process first saw the record in its current form (its local
clock), never from the ``renewTime`` another machine wrote: clocks between pods disagree, and
client-go does the same. A leader that has not managed to renew for ``renew_deadline`` stops
acting: the deadline is shorter than the lease, so it has stopped before anyone may take over.

This module decides; ``tools.leader`` reads and writes the Lease (compare-and-swap on its
resourceVersion) and keeps time.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, replace
from datetime import UTC, datetime


@dataclass(frozen=True)
class Timing:
    """Seconds: how long a lease lasts, how long a leader may fail to renew, how often to try."""

    lease_duration: float = 15.0
    renew_deadline: float = 10.0
    retry_period: float = 2.0

    def problem(self) -> str | None:
        """Why these figures cannot work (client-go refuses the same), or None."""
        if not 0 < self.retry_period < self.renew_deadline < self.lease_duration:
            return "need 0 < retry < renew deadline < lease duration"
        return None


@dataclass(frozen=True)
class LeaseRecord:
    """The Lease's spec as leader election reads it. ``holder`` "" means released."""

    holder: str
    duration_seconds: int
    acquire_time: datetime | None
    renew_time: datetime | None
    transitions: int = 0


class Move(enum.Enum):
    CREATE = "create"  # no Lease: create it, holding it
    RENEW = "renew"  # mine: write a new renewTime
    TAKE = "take"  # released or expired: write myself as the holder
    WAIT = "wait"  # another holds it and it has not expired


@dataclass(frozen=True)
class Decision:
    move: Move
    record: LeaseRecord | None  # what to write (None for WAIT)
    # For WAIT: when the holder's lease expires unless renewed (on the observer's clock).
    expires_at: float | None = None


def decide(
    current: LeaseRecord | None,
    *,
    identity: str,
    now: datetime,
    observed_at: float,
    monotonic_now: float,
    timing: Timing,
) -> Decision:
    """What ``identity`` does now about the Lease ``current`` (None: it does not exist).

    ``now`` is the wall-clock time written into the record; ``observed_at`` is when this
    process first saw ``current`` as it is, and ``monotonic_now`` the same clock now."""
    duration = max(1, round(timing.lease_duration))
    if current is None:
        mine = LeaseRecord(identity, duration, now, now, 0)
        return Decision(Move.CREATE, mine)
    if current.holder == identity:
        return Decision(Move.RENEW, replace(current, renew_time=now, duration_seconds=duration))
    expires_at = observed_at + max(current.duration_seconds, 1)
    if current.holder and monotonic_now < expires_at:
        return Decision(Move.WAIT, None, expires_at=expires_at)
    taken = LeaseRecord(identity, duration, now, now, current.transitions + 1)
    return Decision(Move.TAKE, taken)


def still_leading(*, last_renewed: float, monotonic_now: float, timing: Timing) -> bool:
    """A leader acts only while its last successful renewal is younger than the renew
    deadline; past it, another may take over soon and this one must stop first."""
    return monotonic_now - last_renewed < timing.renew_deadline


def why_not_leading(
    *, identity: str, holder: str, failure: str, renewed_ago: float | None, timing: Timing
) -> str:
    """Why ``identity`` does not lead, in one phrase, from what it last knew: another holder
    it read, else why its last round failed (``failure``: "Unauthorized: …"), else how long
    since it renewed (``renewed_ago``; None: it never did). Never its own name as the
    holder: a round that failed read nothing, so the Lease's holder is unknown then."""
    if holder and holder != identity:
        return f"held by {holder}"
    if failure:
        return f"could not renew ({failure})"
    if renewed_ago is None:
        return "never held it" if not holder else "not renewed yet"
    if holder == identity:
        return (
            f"not renewed for {renewed_ago:.0f} s, past the renew deadline of "
            f"{timing.renew_deadline:g} s"
        )
    return "held by nobody"


def released(record: LeaseRecord, *, now: datetime) -> LeaseRecord:
    """The record a leader stopping on purpose writes: no holder, so a standby takes over at
    its next try instead of waiting out the lease (client-go's ``ReleaseOnCancel``)."""
    return replace(record, holder="", renew_time=now, duration_seconds=1)


def to_wire(value: datetime | None) -> str | None:
    """A ``MicroTime`` as the API writes it (RFC 3339, microseconds, UTC)."""
    if value is None:
        return None
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def from_wire(value: object) -> datetime | None:
    if isinstance(value, datetime):
        return value
    if not isinstance(value, str) or not value:
        return None
    try:
        return datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
