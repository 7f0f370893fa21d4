"""Whose failure is it: an attempt that broke something, or one that fixed its target and
revealed a fault that was already there behind it.

A total score cannot tell them apart. A caller scaled to zero hides a broken selector on the
Service it calls: scaling it back up is right, and its requests now fail against the broken
Service, so the namespace's score rises. On-call engineers peel such incidents layer by layer;
TNR has to as well (issue 22). So each failure a score lists is attributed to the object it
comes from — a Service nobody can reach, the innermost callee a failed request names, the
workload whose pods crash — and the attempt is judged on those objects:

- its target is fixed when failures came from the objects it wrote before, and none do after;
- a new failure from a callee it did not write was there before, unseen because nothing
  called it (the issue's rule: a failing callee that the attempt did not write was broken
  before);
- a new crash loop, unready pod or unavailable replica anywhere, or a new failure that names
  no object, is never excused: the attempt may have caused it (a quota it filled, a node it
  took), and it is judged as before.

Pure functions of two stored scores and the names the attempt wrote; ``agents.verify`` reads
which Services front the written workloads.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from agents.health import HealthScore

# Parts whose failures are seen through calls: a callee's own fault, revealed by a caller.
CALL_PARTS = ("failing_requests", "services_without_endpoints")
# Parts about pods themselves: whatever their source, a new one is never excused.
POD_PARTS = ("crash_looping_containers", "unready_pods", "unavailable_replicas")

_UPSTREAM = re.compile(r"upstream ([a-z0-9]([-a-z0-9]*[a-z0-9])?) failed")
_REQUEST = re.compile(
    r"(?:request to|dial tcp|connect to|calling|call to)\s+(?:https?://)?"
    r"([a-z0-9]([-a-z0-9]*[a-z0-9])?)(?:\.[-a-z0-9.]+)?(?::[\d#]+)?"
)
_UNREACHABLE = re.compile(r"service ([a-z0-9]([-a-z0-9]*[a-z0-9])?) has no ready endpoints")


@dataclass(frozen=True)
class Failure:
    """One failure a score lists: the part it counts in and the object it comes from ("" when
    the line names none)."""

    part: str
    source: str


@dataclass(frozen=True)
class Attribution:
    """How an attempt's look after compares with the one before, object by object."""

    # Failures came from the objects the attempt wrote before it, and none do after.
    target_fixed: bool
    # Objects the attempt did not write whose failures show only now (callees behind it).
    revealed: tuple[str, ...]
    # Objects whose new failures the attempt may have caused (written by it, or pods' own).
    caused: tuple[str, ...]

    @property
    def revealed_only(self) -> bool:
        """The attempt fixed its target, and every new failure is a callee's it did not
        write: keep it, and diagnose what it revealed."""
        return self.target_fixed and bool(self.revealed) and not self.caused


def request_source(line: str) -> str:
    """The Service a failed request's line blames: the innermost upstream it names, else the
    Service it called ("" when it names none)."""
    text = line.partition(": ")[2] or line
    upstream = _UPSTREAM.findall(text)
    if upstream:
        return f"service/{upstream[-1][0]}"
    unreachable = _UNREACHABLE.findall(text)
    if unreachable:
        return f"service/{unreachable[-1][0]}"
    called = _REQUEST.search(text)
    return f"service/{called[1]}" if called else ""


def failures(score: HealthScore) -> set[Failure]:
    """Every failure the score lists, by part and source object."""
    found: set[Failure] = set()
    details = score.details
    for name in details.get("services_without_endpoints", []):
        found.add(Failure("services_without_endpoints", f"service/{name}"))
    for line in details.get("failing_requests", []):
        found.add(Failure("failing_requests", request_source(line)))
    for part in ("crash_looping_containers", "unready_pods"):
        for pod in details.get(part, []):
            found.add(Failure(part, f"pod/{pod}"))
    for entry in details.get("unavailable_replicas", []):
        found.add(Failure("unavailable_replicas", entry.split(" ")[0]))
    return found


def _of_attempt(source: str, written: frozenset[str]) -> bool:
    """Whether ``source`` is an object the attempt wrote (or a pod of a workload it wrote:
    pods are named after their workload)."""
    if source in written:
        return True
    if source.startswith("pod/"):
        pod = source.removeprefix("pod/")
        return any(pod.startswith(w.split("/", 1)[1] + "-") for w in written if "/" in w)
    return False


def attribute(before: HealthScore, after: HealthScore, *, written: Iterable[str]) -> Attribution:
    """``written``: the objects the attempt wrote and the Services that front the workloads
    among them, as "kind/name" lower-cased ("deployment/search", "service/search")."""
    mine = frozenset(w.lower() for w in written)
    then, now = failures(before), failures(after)
    fixed = any(_of_attempt(f.source, mine) for f in then) and not any(
        _of_attempt(f.source, mine) for f in now
    )
    new = now - then
    revealed: set[str] = set()
    caused: set[str] = set()
    for failure in new:
        own = _of_attempt(failure.source, mine)
        if failure.part in CALL_PARTS and failure.source and not own:
            revealed.add(failure.source)
        else:
            caused.add(failure.source or failure.part.replace("_", " "))
    return Attribution(fixed, tuple(sorted(revealed)), tuple(sorted(caused)))
