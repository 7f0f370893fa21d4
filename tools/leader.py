"""Holding the ``stratus-leader`` Lease: the thin loop around ``tools.leadership``.

Each round reads the Lease, asks ``leadership.decide`` what to do and writes the answer with
the resourceVersion it read: two candidates writing at once cannot both win, the loser gets a
409 and reads again at its next round. ``acquire`` waits (retrying every retry period) until
this process leads; ``hold`` renews every retry period and returns as soon as leadership is
lost — another holds the Lease, or no renewal succeeded within the renew deadline — so the
caller stops acting before anyone else may start; ``release`` hands the Lease over on a
clean shutdown.

Configuration: ``STRATUS_LEADER_ELECTION`` (``on``/``off``; default on in a pod, off
otherwise), the Lease in the pod's namespace (``STRATUS_LEADER_NAMESPACE`` overrides it; out
of a pod, the kubeconfig context's namespace), ``STRATUS_LEASE_DURATION_SECONDS`` /
``STRATUS_LEASE_RENEW_SECONDS`` / ``STRATUS_LEASE_RETRY_SECONDS`` (15 / 10 / 2).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import threading
import time
import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tools import env, errors, leadership
from tools.k8s import KubeClient
from tools.leadership import LeaseRecord, Move, Timing

API_VERSION = "coordination.k8s.io/v1"
LEASE_NAME = "stratus-leader"
log = logging.getLogger("stratus.leader")


def _record(obj: dict[str, Any] | None) -> LeaseRecord | None:
    if obj is None:
        return None
    spec = obj.get("spec") or {}
    return LeaseRecord(
        holder=str(spec.get("holderIdentity") or ""),
        duration_seconds=int(spec.get("leaseDurationSeconds") or 0),
        acquire_time=leadership.from_wire(spec.get("acquireTime")),
        renew_time=leadership.from_wire(spec.get("renewTime")),
        transitions=int(spec.get("leaseTransitions") or 0),
    )


def _spec(record: LeaseRecord) -> dict[str, Any]:
    return {
        "holderIdentity": record.holder or None,
        "leaseDurationSeconds": record.duration_seconds,
        "acquireTime": leadership.to_wire(record.acquire_time),
        "renewTime": leadership.to_wire(record.renew_time),
        "leaseTransitions": record.transitions,
    }


def default_identity() -> str:
    """The pod's name (the hostname in a pod) and a unique suffix, as client-go's examples:
    two processes on one host are two candidates."""
    host = os.environ.get("POD_NAME") or socket.gethostname() or "stratus"
    return f"{host}_{uuid.uuid4().hex[:8]}"


class Elector:
    def __init__(
        self,
        kube: KubeClient,
        *,
        namespace: str,
        identity: str,
        name: str = LEASE_NAME,
        timing: Timing | None = None,
        monotonic: Callable[[], float] = time.monotonic,
        wall: Callable[[], datetime] = lambda: datetime.now(UTC),
    ) -> None:
        self.kube = kube
        self.namespace = namespace
        self.name = name
        self.identity = identity
        self.timing = timing or Timing()
        self.monotonic = monotonic
        self.wall = wall
        self.leading = False
        self.holder = ""  # who holds the Lease, as last read (or as this process wrote it)
        # Why the last round could not read or write the Lease ("" when it could): a leader
        # that stops for that reason says so rather than naming a holder it never read.
        self.failure = ""
        self.last_renewed = 0.0
        self._seen: tuple[LeaseRecord | None, float] | None = None
        self._lock = threading.Lock()  # one round at a time (a release during a renewal)
        self._wrote: dict[str, Any] | None = None
        self.conflicts = 0  # rounds lost to another candidate's write (409)

    def _observed_at(self, current: LeaseRecord | None, now: float) -> float:
        """When this process first saw ``current`` as it is now (a change restarts the wait)."""
        if self._seen is None or self._seen[0] != current:
            self._seen = (current, now)
        return self._seen[1]

    def _body(self, record: LeaseRecord, resource_version: str | None) -> dict[str, Any]:
        metadata: dict[str, Any] = {"name": self.name, "namespace": self.namespace}
        if resource_version:
            metadata["resourceVersion"] = resource_version
        return {
            "apiVersion": API_VERSION,
            "kind": "Lease",
            "metadata": metadata,
            "spec": _spec(record),
        }

    def acting(self) -> bool:
        """Whether this process may act now: it leads and its last renewal is younger than
        the renew deadline (measured now, so a process thawed after a freeze is not acting
        even before its next round has read the Lease)."""
        return self.leading and leadership.still_leading(
            last_renewed=self.last_renewed, monotonic_now=self.monotonic(), timing=self.timing
        )

    def why_not_leading(self) -> str:
        """Why this process does not lead, as far as it knows: the holder it last read when
        that is another, else why its renewals failed, else how long ago it renewed."""
        return leadership.why_not_leading(
            identity=self.identity,
            holder=self.holder,
            failure=self.failure,
            renewed_ago=self.monotonic() - self.last_renewed if self.last_renewed else None,
            timing=self.timing,
        )

    def ensure_leading(self) -> None:
        """The executor's fence: a write starts only while this process leads and its last
        renewal is younger than the renew deadline. ``Unavailable`` (retryable) leaves an
        approved proposal approved, for the leader to carry out."""
        if self.acting():
            return
        why = self.why_not_leading()
        raise errors.Unavailable(
            f"this Stratus ({self.identity}) does not hold the leader lease "
            f"{self.namespace}/{self.name} ({why}): only the leader writes",
            subject=f"{self.namespace}/{self.name}",
            details={"identity": self.identity, "holder": self.holder, "why": why},
        )

    def _timeout(self) -> tuple[float, float]:
        """Each call is bounded by the renew deadline (client-go bounds a renewal the same
        way): a hung API server must not hold a thread past the moment leadership ends."""
        deadline = self.timeout_seconds()
        return (min(deadline, 5.0), deadline)

    def timeout_seconds(self) -> float:
        return max(self.timing.renew_deadline / 2, 0.2)

    def try_once(self) -> bool:
        """One round: read, decide, write. True when this process leads after it. A 409 (a
        candidate wrote first) or an unreachable API server is a round lost, not an error;
        a refusal (401/403) before this process ever led raises ``Forbidden``: the account
        lacks the Lease's permissions, and standing by would never end."""
        with self._lock:
            return self._round()

    def _round(self) -> bool:
        try:
            obj = self.kube.find_named(
                API_VERSION, "Lease", self.name, self.namespace, timeout=self._timeout()
            )
        except errors.Forbidden as error:
            if not self.leading:
                raise  # the account may not use the Lease: waiting would never end
            return self._failed(error)
        except errors.ToolError as error:
            log.warning("reading the lease %s/%s failed: %s", self.namespace, self.name, error)
            return self._failed(error)
        self.failure = ""
        current = _record(obj)
        now = self.monotonic()
        decision = leadership.decide(
            current,
            identity=self.identity,
            now=self.wall(),
            observed_at=self._observed_at(current, now),
            monotonic_now=now,
            timing=self.timing,
        )
        self.holder = current.holder if current else ""
        if decision.move is Move.WAIT or decision.record is None:
            self.leading = False
            return False
        version = None if obj is None else (obj.get("metadata") or {}).get("resourceVersion")
        body = self._body(decision.record, version)
        try:
            self._wrote = self.kube.write_named(
                body, create=decision.move is Move.CREATE, timeout=self._timeout()
            )
        except errors.Conflict:
            # Another candidate wrote between our read and our write (or the Lease was
            # created meanwhile): read again next round.
            self.conflicts += 1
            self.leading = False
            return False
        except errors.Forbidden as error:
            if not self.leading:
                raise
            return self._failed(error)
        except errors.ToolError as error:
            log.warning("writing the lease %s/%s failed: %s", self.namespace, self.name, error)
            return self._failed(error)
        if not self.leading:
            log.info(
                "leading: the lease %s/%s is held by %s", self.namespace, self.name, self.identity
            )
        self.leading = True
        self.holder = self.identity
        self.last_renewed = self.monotonic()
        return True

    def _failed(self, error: errors.ToolError) -> bool:
        """A round that could not talk to the API server: a leader keeps leading only until
        the renew deadline."""
        self.failure = f"{type(error).__name__}: {error.message}"
        if self.leading and not leadership.still_leading(
            last_renewed=self.last_renewed, monotonic_now=self.monotonic(), timing=self.timing
        ):
            self.leading = False
        return self.leading

    async def acquire(self, stopping: asyncio.Event) -> bool:
        """Wait until this process leads (True), or until ``stopping`` is set (False)."""
        while not stopping.is_set():
            if await asyncio.to_thread(self.try_once):
                return True
            await _sleep_or_stop(stopping, self.timing.retry_period)
        return False

    async def hold(self, stopping: asyncio.Event) -> bool:
        """Renew every retry period while leading. Returns False the moment leadership is
        lost (another holder, or the renew deadline passed without a renewal — a hung call
        counts: the deadline is measured here, not after the call returns), True when
        ``stopping`` was set while still leading."""
        while not stopping.is_set():
            await _sleep_or_stop(stopping, self.timing.retry_period)
            if stopping.is_set():
                break
            left = self.last_renewed + self.timing.renew_deadline - self.monotonic()
            try:
                renewed = await asyncio.wait_for(asyncio.to_thread(self.try_once), max(left, 0.01))
            except TimeoutError:
                renewed = False
                self.failure = (
                    f"no answer from the API server within {self.timing.renew_deadline:g} s"
                )
            if not renewed and (
                not self.leading
                or not leadership.still_leading(
                    last_renewed=self.last_renewed,
                    monotonic_now=self.monotonic(),
                    timing=self.timing,
                )
            ):
                self.leading = False
                log.error(
                    "lost the lease %s/%s (%s); stopping",
                    self.namespace,
                    self.name,
                    self.why_not_leading(),
                )
                return False
        return self.leading

    def release(self) -> None:
        """Hand the Lease over (no holder) if this process still holds it; a failure only
        means the standby waits out the lease."""
        with self._lock:
            if not self.leading or self._wrote is None:
                return
            self.leading = False
            current = _record(self._wrote)
            version = (self._wrote.get("metadata") or {}).get("resourceVersion")
            if current is None or current.holder != self.identity:
                return
            body = self._body(leadership.released(current, now=self.wall()), version)
            try:
                self.kube.write_named(body, timeout=self._timeout())
            except errors.ToolError as error:
                log.warning("releasing the lease failed (%s); the standby waits it out", error)


async def _sleep_or_stop(stopping: asyncio.Event, seconds: float) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stopping.wait(), seconds)


def timing_from_env(values: Mapping[str, str] | None = None) -> Timing:
    timing = Timing(
        lease_duration=env.number(
            "STRATUS_LEASE_DURATION_SECONDS", default=15.0, low=1.0, high=3600.0, env=values
        ),
        renew_deadline=env.number(
            "STRATUS_LEASE_RENEW_SECONDS", default=10.0, low=0.5, high=3600.0, env=values
        ),
        retry_period=env.number(
            "STRATUS_LEASE_RETRY_SECONDS", default=2.0, low=0.1, high=3600.0, env=values
        ),
    )
    problem = timing.problem()
    if problem is not None:
        raise env.SettingError(
            f"STRATUS_LEASE_DURATION_SECONDS={timing.lease_duration:g}, "
            f"STRATUS_LEASE_RENEW_SECONDS={timing.renew_deadline:g} and "
            f"STRATUS_LEASE_RETRY_SECONDS={timing.retry_period:g} do not work together: "
            f"{problem}",
            subject="STRATUS_LEASE_RENEW_SECONDS",
        )
    return timing


@dataclass(frozen=True)
class Settings:
    """Leader election as the environment sets it, read before anything is opened."""

    choice: bool | None  # None: on exactly when running in a pod
    timing: Timing
    namespace: str  # "" : the pod's namespace (else the kubeconfig context's)

    @classmethod
    def from_env(cls, values: Mapping[str, str] | None = None) -> Settings:
        source = os.environ if values is None else values
        raw = source.get("STRATUS_LEADER_ELECTION")
        choice: bool | None = None
        if raw is not None and raw.strip():
            word = raw.strip().lower()
            if word not in ("on", "off"):
                raise env.refuse("STRATUS_LEADER_ELECTION", raw, "give on or off")
            choice = word == "on"
        return cls(
            choice=choice,
            timing=timing_from_env(values),
            namespace=source.get("STRATUS_LEADER_NAMESPACE", "").strip(),
        )

    def elector(self, kube: KubeClient, *, fallback_namespace: str) -> Elector | None:
        """The elector for ``kube``, or None when leader election is off."""
        on = kube.in_cluster if self.choice is None else self.choice
        if not on:
            return None
        namespace = self.namespace or kube.pod_namespace or fallback_namespace
        return Elector(kube, namespace=namespace, identity=default_identity(), timing=self.timing)
