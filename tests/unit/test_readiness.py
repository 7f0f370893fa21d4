"""Readiness is a pure judgement over named probe outcomes: ready only when every required
check answered and passed; the body names each check, so a 503 says which one failed."""

from __future__ import annotations

from operations import readiness
from operations.readiness import Check


def test_every_check_passing_is_ready() -> None:
    judged = readiness.judge([Check(name, ok=True) for name in readiness.REQUIRED])
    assert judged.ready and judged.status == 200
    assert judged.body() == {
        "ready": True,
        "checks": {name: {"ok": True, "detail": ""} for name in readiness.REQUIRED},
    }


def test_one_failing_check_is_503_and_named() -> None:
    checks = [Check(name, ok=True) for name in readiness.REQUIRED if name != "policies"]
    checks.append(Check("policies", ok=False, detail="shop.yaml:3:1: unknown key"))
    judged = readiness.judge(checks)
    assert not judged.ready and judged.status == 503
    assert judged.failed() == ["policies"]
    assert judged.body()["checks"]["policies"] == {
        "ok": False,
        "detail": "shop.yaml:3:1: unknown key",
    }


def test_a_check_never_probed_fails() -> None:
    """A probe that was not run (a bug, a timeout that dropped it) is not ready, never ready
    by omission."""
    judged = readiness.judge([Check("database", ok=True)])
    assert not judged.ready
    assert judged.failed() == ["policies", "cluster", "slack"]
    assert judged.body()["checks"]["slack"]["detail"] == readiness.NOT_PROBED


def test_outcomes_become_checks() -> None:
    """A probe answers None (fine), a reason (not fine) or raises; a timeout says so."""
    assert readiness.check_from("database", None) == Check("database", ok=True)
    assert readiness.check_from("cluster", "connection refused") == Check(
        "cluster", ok=False, detail="connection refused"
    )
    failed = readiness.check_from("slack", RuntimeError("boom"))
    assert failed == Check("slack", ok=False, detail="RuntimeError: boom")
    late = readiness.check_from("database", TimeoutError())
    assert not late.ok and "no answer" in late.detail


def test_details_are_bounded() -> None:
    long = readiness.check_from("cluster", "x" * 5000)
    assert len(long.detail) <= readiness.MAX_DETAIL
