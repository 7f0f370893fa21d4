"""What a Stratus that no longer leads says about the Lease: the holder it last read, or why
its renewals failed — never its own name as the holder (issue 19, attacker finding 3)."""

from __future__ import annotations

from typing import Any

import pytest

from tools import errors
from tools.leader import Elector
from tools.leadership import Timing

TIMING = Timing(lease_duration=15.0, renew_deadline=10.0, retry_period=2.0)


class FakeLeaseApi:
    """The two calls an elector makes, answering from one stored Lease (or an error)."""

    def __init__(self) -> None:
        self.lease: dict[str, Any] | None = None
        self.version = 0
        self.error: errors.ToolError | None = None

    def find_named(self, *_: Any, **__: Any) -> dict[str, Any] | None:
        if self.error is not None:
            raise self.error
        return self.lease

    def write_named(self, body: dict[str, Any], **_: Any) -> dict[str, Any]:
        if self.error is not None:
            raise self.error
        self.version += 1
        body["metadata"]["resourceVersion"] = str(self.version)
        self.lease = body
        return body

    def taken_by(self, holder: str) -> None:
        assert self.lease is not None
        self.lease = {
            **self.lease,
            "spec": {**self.lease["spec"], "holderIdentity": holder, "leaseTransitions": 1},
        }


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def api() -> FakeLeaseApi:
    return FakeLeaseApi()


def _elector(api: FakeLeaseApi, clock: Clock) -> Elector:
    return Elector(
        api,  # type: ignore[arg-type]  # only find_named and write_named are called
        namespace="stratus",
        identity="pod-a_1111",
        timing=TIMING,
        monotonic=clock,
    )


def test_the_fence_names_the_holder_it_read_not_itself(api: FakeLeaseApi) -> None:
    clock = Clock()
    elector = _elector(api, clock)
    assert elector.try_once()
    api.taken_by("pod-b_2222")
    clock.now += 16  # frozen past the lease
    assert not elector.try_once()
    with pytest.raises(errors.Unavailable) as refused:
        elector.ensure_leading()
    assert "held by pod-b_2222" in refused.value.message
    assert refused.value.message.count("pod-a_1111") == 1  # only as "this Stratus (…)"
    assert refused.value.details["holder"] == "pod-b_2222"


def test_a_thawed_leader_that_has_not_read_yet_says_how_stale_its_renewal_is(
    api: FakeLeaseApi,
) -> None:
    clock = Clock()
    elector = _elector(api, clock)
    assert elector.try_once()
    clock.now += 16  # thawed: no round has read the Lease since
    assert not elector.acting()
    with pytest.raises(errors.Unavailable) as refused:
        elector.ensure_leading()
    assert "(held by pod-a_1111)" not in refused.value.message
    assert "not renewed for 16 s, past the renew deadline of 10 s" in refused.value.message


def test_a_renewal_refused_as_unauthorized_says_so(api: FakeLeaseApi) -> None:
    clock = Clock()
    elector = _elector(api, clock)
    assert elector.try_once()
    api.error = errors.Unauthorized("lease/stratus-leader in stratus: not authenticated (401)")
    clock.now += 3
    assert elector.try_once()  # within the renew deadline it still leads
    clock.now += 8
    assert not elector.try_once()
    why = elector.why_not_leading()
    assert why == (
        "could not renew (Unauthorized: lease/stratus-leader in stratus: not authenticated (401))"
    )
    assert "pod-a_1111" not in why


def test_a_round_that_reads_again_forgets_the_old_failure(api: FakeLeaseApi) -> None:
    clock = Clock()
    elector = _elector(api, clock)
    assert elector.try_once()
    api.error = errors.Unavailable("the API server answered 503")
    clock.now += 11
    assert not elector.try_once()
    api.error = None
    api.taken_by("pod-b_2222")
    assert not elector.try_once()
    assert elector.why_not_leading() == "held by pod-b_2222"
