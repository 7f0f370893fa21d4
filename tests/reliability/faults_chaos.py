"""Faults at random, reproducibly: rules for the fault proxy (``tests.faultproxy``) that fire on
a share of the requests they match, drawn from a seeded generator, and the counts of what
fired.

The proxy asks its rules in order and the first that matches decides a request; a
``Chance`` rule matches only when its draw falls under its share, so several of them in a row
give each kind of fault its own rate. The draws come from one ``random.Random`` per
namespace a request names (one for cluster-scoped paths), so a run whose incidents go one
after another sees the same faults on the same requests again under the same seed.
"""

from __future__ import annotations

import json
import os
import random
import re
import threading
from collections import Counter
from dataclasses import dataclass, field

from tests.faultproxy import FaultProxy, Rule

WRITES = ("PUT", "PATCH", "POST", "DELETE")
_NAMESPACE = re.compile(r"/namespaces/([^/]+)/")


def seed_from_env(name: str = "STRATUS_FAULTS_SEED") -> int:
    """The seed a run uses: ``$STRATUS_FAULTS_SEED`` to replay a failure, else a fresh one."""
    given = os.environ.get(name, "").strip()
    return int(given) if given else random.SystemRandom().randrange(1, 2**31)


@dataclass
class Draws:
    """One generator per namespace, all derived from one seed."""

    seed: int
    _streams: dict[str, random.Random] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def draw(self, path: str) -> float:
        found = _NAMESPACE.search(path)
        key = found.group(1) if found else ""
        with self._lock:
            stream = self._streams.get(key)
            if stream is None:
                stream = self._streams[key] = random.Random(f"{self.seed}:{key}")
            return stream.random()


@dataclass
class Chance(Rule):
    """A proxy rule that fires on ``share`` of the requests it matches (``label`` names its
    kind of fault in the figures)."""

    share: float = 0.0
    label: str = ""
    draws: Draws | None = None

    def matches(self, method: str, path: str, dry_run: bool) -> bool:
        if not super().matches(method, path, dry_run):
            return False
        assert self.draws is not None
        return self.draws.draw(path) < self.share


def conflict_body() -> bytes:
    """What an API server answers a write whose resourceVersion moved."""
    return json.dumps(
        {
            "kind": "Status",
            "apiVersion": "v1",
            "status": "Failure",
            "message": "Operation cannot be fulfilled: the object has been modified "
            "(the fault proxy answered 409 in place of the API server)",
            "reason": "Conflict",
            "code": 409,
        }
    ).encode()


@dataclass(frozen=True)
class Rates:
    """The share of requests each kind of fault hits, for reads and for writes."""

    read_500: float = 0.02
    read_timeout: float = 0.004
    read_409: float = 0.005
    write_500: float = 0.06
    write_500_landed: float = 0.05  # the write reached the lab; its answer is a 500
    write_timeout: float = 0.06  # held past the client's read timeout, then forwarded
    write_409: float = 0.06


class Chaos:
    """Random faults installed on a proxy; ``counts`` says how many of each kind fired."""

    def __init__(self, proxy: FaultProxy, *, seed: int, timeout: float, rates: Rates) -> None:
        self.proxy = proxy
        self.draws = Draws(seed)
        self.rules: list[Chance] = []
        held = timeout + 0.3  # past the client's read timeout: the request lands after
        reads = (
            ("500 on a read", "fail", 500, rates.read_500, False),
            ("timeout on a read", "delay", 0, rates.read_timeout, False),
            ("409 on a read", "fail", 409, rates.read_409, False),
        )
        for label, kind, status, share, _ in reads:
            self._add("GET", label, kind, status=status, share=share, seconds=held)
        writes = (
            ("500 on a write, not forwarded", "fail", 500, rates.write_500, False),
            ("500 on a write that landed", "fail", 500, rates.write_500_landed, True),
            ("timeout on a write (landed late)", "delay", 0, rates.write_timeout, False),
            ("409 on a write", "fail", 409, rates.write_409, False),
        )
        for method in WRITES:
            for label, kind, status, share, forward in writes:
                self._add(
                    method,
                    label,
                    kind,
                    status=status,
                    share=share,
                    seconds=held,
                    forward=forward,
                    dry_run=False if forward else None,
                )

    def _add(
        self,
        method: str,
        label: str,
        kind: str,
        *,
        status: int,
        share: float,
        seconds: float,
        forward: bool = False,
        dry_run: bool | None = None,
    ) -> None:
        rule = Chance(
            method,
            r"^/api",
            "delay" if kind == "delay" else "fail",
            seconds=seconds,
            status=status,
            forward=forward,
            body=conflict_body() if status == 409 else None,
            dry_run=dry_run,
            share=share,
            label=label,
            draws=self.draws,
        )
        self.rules.append(rule)
        self.proxy.add(rule)

    def counts(self) -> Counter[str]:
        """Faults that fired, by kind."""
        fired: Counter[str] = Counter()
        for rule in self.rules:
            fired[rule.label] += rule.hits
        return fired

    def stop(self) -> None:
        """Back to a reliable API server (held requests are let through now)."""
        self.proxy.clear()
        self.proxy.wait_for_late()
