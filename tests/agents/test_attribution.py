"""Issue 22, item 1: whose the new failures after an attempt are, as a pure function of the
two scores (``agents.attribution``). The lines are the lab's, read from a real run of
s3-hotel-zero-caller-hides-geo-selector."""

from __future__ import annotations

from agents.attribution import attribute, request_source
from agents.health import HealthScore

SEARCH_DOWN = (
    "frontend-k7ng: #-#-#T#:#:#.#Z ERROR request to search:# failed: no healthy upstream: "
    "service search has no ready endpoints"
)
GEO_BEHIND = (
    "frontend-k7ng: #-#-#T#:#:#.#Z ERROR request to search:# failed: upstream geo failed: no "
    "healthy upstream: service geo has no ready endpoints"
)
SEARCH_TO_GEO = (
    "search-5mcz: #-#-#T#:#:#.#Z ERROR request to geo:# failed: no healthy upstream: service "
    "geo has no ready endpoints"
)
SEARCH = {"deployment/search", "service/search"}


def score(**details: list[str]) -> HealthScore:
    return HealthScore(parts={k: len(v) for k, v in details.items()}, details=details)


BEFORE = score(services_without_endpoints=["search"], failing_requests=[SEARCH_DOWN])


def test_a_failed_request_is_blamed_on_the_innermost_service_it_names() -> None:
    assert request_source(SEARCH_DOWN) == "service/search"
    assert request_source(GEO_BEHIND) == "service/geo"
    assert request_source(SEARCH_TO_GEO) == "service/geo"
    assert request_source("cart-1: ERROR request to redis:# failed: connection refused") == (
        "service/redis"
    )
    assert request_source("cart-1: ERROR something broke") == ""


def test_a_fixed_caller_that_reveals_its_callees_fault_is_told_apart() -> None:
    after = score(services_without_endpoints=["geo"], failing_requests=[GEO_BEHIND, SEARCH_TO_GEO])
    found = attribute(BEFORE, after, written=SEARCH)
    assert found.target_fixed and found.revealed == ("service/geo",) and found.caused == ()
    assert found.revealed_only


def test_new_failures_of_what_the_attempt_wrote_are_its_own() -> None:
    """Scaling geo to zero while search is down: geo's failures come from the object written."""
    after = score(
        services_without_endpoints=["search", "geo"],
        failing_requests=[SEARCH_DOWN, SEARCH_TO_GEO],
    )
    found = attribute(BEFORE, after, written={"deployment/geo", "service/geo"})
    assert not found.target_fixed and found.caused == ("service/geo",)
    assert not found.revealed_only


def test_a_new_crash_loop_anywhere_is_never_excused() -> None:
    """A callee's pods crash-looping after the attempt may be its doing (a quota filled, a node
    taken): even with the target fixed it is not a fault revealed."""
    after = score(failing_requests=[GEO_BEHIND], crash_looping_containers=["geo-7f9c-abcde"])
    found = attribute(BEFORE, after, written=SEARCH)
    assert found.target_fixed and found.caused == ("pod/geo-7f9c-abcde",)
    assert not found.revealed_only


def test_a_target_still_failing_reveals_nothing() -> None:
    after = score(
        services_without_endpoints=["search", "geo"],
        failing_requests=[SEARCH_DOWN, SEARCH_TO_GEO],
    )
    found = attribute(BEFORE, after, written=SEARCH)
    assert not found.target_fixed and not found.revealed_only


def test_a_failure_that_names_nothing_is_not_excused() -> None:
    after = score(failing_requests=["search-5mcz: ERROR panic: out of cheese"])
    found = attribute(BEFORE, after, written=SEARCH)
    assert found.target_fixed and found.caused == ("failing requests",)
    assert not found.revealed_only
