"""Did a write land? The verdicts recovery builds on, from the object as it is now."""

from __future__ import annotations

from typing import Any

from tools.landing import moved_past, was_applied


def deployment(
    replicas: int, *, rv: str = "7", uid: str = "u1", image: str = "geo:1"
) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "geo", "namespace": "hotel", "uid": uid, "resourceVersion": rv},
        "spec": {"replicas": replicas, "template": {"spec": {"containers": [{"image": image}]}}},
    }


BEFORE, AFTER = deployment(0), deployment(1)


def test_a_replace_landed_when_the_object_shows_it_and_did_not_when_it_shows_before() -> None:
    assert was_applied("replace", deployment(1, rv="8"), BEFORE, AFTER) == "yes"
    assert was_applied("replace", deployment(0, rv="7"), BEFORE, AFTER) == ""


def test_an_object_changed_elsewhere_too_is_unsure_unless_the_write_left_no_trace() -> None:
    # The write's field shows its value, and someone changed another one: it may have landed.
    assert was_applied("replace", deployment(1, rv="9", image="geo:2"), BEFORE, AFTER) == "unsure"
    # The write's field still shows the old value while another changed: it never landed.
    assert was_applied("replace", deployment(0, rv="9", image="geo:2"), BEFORE, AFTER) == ""
    assert was_applied("replace", None, BEFORE, AFTER) == "unsure"  # gone since


def test_creates_and_deletes_are_judged_by_existence_and_uid() -> None:
    assert was_applied("create", deployment(1), None, AFTER) == "yes"
    assert was_applied("create", None, None, AFTER) == ""
    assert was_applied("delete", None, BEFORE, None) == "yes"
    assert was_applied("delete", deployment(0, uid="u1"), BEFORE, None) == ""
    assert was_applied("delete", deployment(0, uid="u2"), BEFORE, None) == "yes"  # recreated


def test_a_precondition_write_can_no_longer_land_once_the_object_moved_past_it() -> None:
    assert moved_past("replace", deployment(0, rv="9"), "7") == "9"
    assert moved_past("replace", deployment(0, rv="7"), "7") == ""
    assert moved_past("create", deployment(0, rv="9"), "7") == ""  # no precondition
    assert moved_past("delete", None, "7") == ""
