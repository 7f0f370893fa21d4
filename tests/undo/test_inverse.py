"""The inverse plan as a pure function (``undo.inverse``): dicts in, a WritePlan or an
``UndoConflict`` with fields out — no cluster, no store, no socket."""

from __future__ import annotations

import copy
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from tools import actions
from tools.objects import normalized
from undo.conflicts import DELETED, MOVED, RECREATED, UndoConflict
from undo.inverse import IRREVERSIBLE, WrittenImages, is_reversible, plan_inverse


def deployment(replicas: int, rv: str, **labels: str) -> dict[str, Any]:
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {
            "name": "geo",
            "namespace": "hotel",
            "resourceVersion": rv,
            "uid": "u-1",
            "labels": {"app": "geo", **labels},
        },
        "spec": {"replicas": replicas},
        "status": {"replicas": replicas},
    }


def scaled(before: dict[str, Any], written: dict[str, Any], op: str = "replace") -> WrittenImages:
    return WrittenImages(
        record="ex-1",
        operation=op,
        label="deployment/geo",
        before=before,
        written=written,
        written_rv=written["metadata"]["resourceVersion"] if written else None,
    )


def test_a_replace_is_undone_by_a_full_replace_with_the_before_image() -> None:
    before, written = deployment(1, "10"), deployment(3, "11", added="yes")
    plan = plan_inverse(scaled(before, written), copy.deepcopy(written), force=False)
    assert plan.operation == "replace" and plan.after is not None
    assert plan.after["spec"] == before["spec"]
    assert "added" not in plan.after["metadata"]["labels"]  # a full replace, not a merge
    assert plan.after["metadata"]["resourceVersion"] == "11" and "status" not in plan.after


def test_a_moved_object_is_a_conflict_with_fields_and_no_surface_words() -> None:
    before, written = deployment(1, "10"), deployment(3, "11")
    now = deployment(5, "12")
    with pytest.raises(UndoConflict) as caught:
        plan_inverse(scaled(before, written), now, force=False)
    conflict = caught.value
    assert (conflict.situation, conflict.written_rv, conflict.current_rv) == (MOVED, "11", "12")
    assert "replicas: 5" in conflict.diff and conflict.changed_by is None
    assert "--force" not in conflict.message
    named = conflict.naming(("cli:bob (Scale deployment/geo)",))
    assert named.changed_by == ("cli:bob (Scale deployment/geo)",)
    assert named.details["changed_by"] == ["cli:bob (Scale deployment/geo)"]
    assert "changed since by cli:bob" in named.message
    assert "changed outside Stratus" in conflict.naming(()).message
    forced = plan_inverse(scaled(before, written), now, force=True)
    assert forced.after is not None and forced.after["spec"]["replicas"] == 1


def test_a_deleted_object_and_a_re_created_one_are_conflicts_until_forced() -> None:
    before, written = deployment(1, "10"), deployment(3, "11")
    with pytest.raises(UndoConflict) as gone:
        plan_inverse(scaled(before, written), None, force=False)
    assert gone.value.situation == DELETED
    assert plan_inverse(scaled(before, written), None, force=True).operation == "create"
    deleted = WrittenImages(
        record="ex-2", operation="delete", label="deployment/geo", before=before, written=None
    )
    restored = plan_inverse(deleted, None, force=False)
    assert restored.operation == "create" and restored.after is not None
    assert "resourceVersion" not in restored.after["metadata"]
    with pytest.raises(UndoConflict) as again:
        plan_inverse(deleted, deployment(2, "20"), force=False)
    assert again.value.situation == RECREATED and again.value.current_rv == "20"


def test_a_create_is_undone_by_deleting_what_is_there() -> None:
    made = deployment(1, "30")
    created = WrittenImages(
        record="ex-3", operation="create", label="deployment/geo", before=None, written=made
    )
    assert plan_inverse(created, made, force=False).operation == "delete"
    assert not plan_inverse(created, None, force=False).changes_anything


def test_irreversible_actions_are_named_once() -> None:
    assert IRREVERSIBLE and all(not is_reversible(a) for a in IRREVERSIBLE)
    assert is_reversible("scale") and is_reversible("undo")


def test_undo_of_a_replace_restores_what_a_human_sees() -> None:
    before, written = deployment(1, "10"), deployment(4, "11")
    plan = plan_inverse(scaled(before, written), written, force=False)
    assert plan.after is not None
    assert normalized(plan.after)["spec"] == normalized(before)["spec"]


def app(replicas: int, env: dict[str, str]) -> dict[str, Any]:
    obj = deployment(replicas, "40")
    obj["spec"]["template"] = {
        "metadata": {"labels": {"app": "geo"}},
        "spec": {
            "containers": [
                {
                    "name": "geo",
                    "image": "geo:1.0",
                    "env": [{"name": k, "value": v} for k, v in env.items()],
                }
            ]
        },
    }
    return obj


names = st.from_regex(r"[A-Z][A-Z0-9_]{0,6}", fullmatch=True)
values = st.text(alphabet="abc123", max_size=5)


@given(
    replicas=st.integers(0, 20),
    env=st.dictionaries(names, values, max_size=3),
    action=st.one_of(
        st.builds(lambda r: ("scale", {"replicas": r}), st.integers(0, 20)),
        st.builds(lambda k, v: ("set-env", {"variable": k, "value": v}), names, values),
    ),
)
def test_apply_then_undo_returns_the_before_image(
    replicas: int, env: dict[str, str], action: tuple[str, dict[str, Any]]
) -> None:
    """The round trip as dicts: plan an action (pure), let the server bump the
    resourceVersion, plan its inverse (pure): the object is what it was."""
    before = app(replicas, env)
    name, params = action
    plan = actions.build(name, {"target": "geo", "namespace": "hotel", **params}).plan(
        copy.deepcopy(before), []
    )
    assert plan.after is not None
    written = copy.deepcopy(plan.after)
    written["metadata"]["resourceVersion"] = "41"
    images = WrittenImages(
        record="ex-h",
        operation=plan.operation,
        label="deployment/geo",
        before=plan.before,
        written=plan.after,
        written_rv="41",
    )
    undo = plan_inverse(images, written, force=False)
    restored = undo.after if undo.changes_anything else written
    assert normalized(restored) == normalized(before)
