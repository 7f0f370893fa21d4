"""rollout-undo on StatefulSets and DaemonSets: their template history is their
ControllerRevisions, as ``kubectl rollout undo statefulset/x`` reads it. The roll back writes
the earlier template and is itself undone to the template it replaced."""

from __future__ import annotations

import pytest

from tests.conftest import Lab
from tests.writes import Writes
from tools import actions
from tools.errors import Invalid
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.objects import normalized


@pytest.mark.parametrize(
    ("kind", "name", "good", "bad"),
    [
        ("StatefulSet", "postgres", "postgres:16", "postgres:17"),
        ("DaemonSet", "log-agent", "stratus/log-agent:1.4", "stratus/log-agent:9.9"),
    ],
)
def test_rollout_undo_restores_the_previous_controller_revision(
    lab: Lab, kube: KubeClient, executor: Executor, kind: str, name: str, good: str, bad: str
) -> None:
    writes = Writes(executor)
    writes.write(
        actions.build(
            "set-image", {"kind": kind, "target": name, "namespace": "shop", "image": bad}
        ),
        actor="test",
    )
    lab.settle()
    undo = actions.build("rollout-undo", {"kind": kind, "target": name, "namespace": "shop"})
    before = kube.get(undo.ref())
    assert before["spec"]["template"]["spec"]["containers"][0]["image"] == bad

    assert undo.intent(before).startswith(f"Roll back {kind.lower()}/{name} in shop")
    outcome = writes.write(undo, actor="test")
    rolled = kube.get(undo.ref())
    assert rolled["spec"]["template"]["spec"]["containers"][0]["image"] == good
    assert "$patch" not in rolled["spec"]["template"]

    assert outcome.undo_id is not None
    writes.undo(outcome.undo_id, actor="test")
    assert normalized(kube.get(undo.ref())) == normalized(before)


def test_rollout_undo_of_a_statefulset_without_history_says_so(
    kube: KubeClient, executor: Executor
) -> None:
    undo = actions.build(
        "rollout-undo", {"kind": "StatefulSet", "target": "postgres", "namespace": "shop"}
    )
    with pytest.raises(Invalid, match="statefulset/postgres has no previous revision"):
        Writes(executor).write(undo, actor="test")
