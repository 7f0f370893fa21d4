"""Graceful pod deletion's decisions, as pure functions: what a DELETE does to a pod
(``lab.cluster.graceful_delete``) and how its containers stop (``lab.controllers.pod_termination``).
The whole flow against a running lab is tests/lab/outside_tasks/13-prestop-graceful."""

from __future__ import annotations

from typing import Any

from lab.cluster import graceful_delete
from lab.cluster.clock import Clock
from lab.cluster_sim import default_catalog
from lab.controllers.containers import ContainerRun, PodRun
from lab.controllers.pod_termination import grace_deadline, on_sigterm, pre_stop, stop_order


def _pod(**spec: Any) -> dict[str, Any]:
    return {
        "metadata": {"name": "web-1", "namespace": "t", "uid": "u1"},
        "spec": {"nodeName": "node-1", "terminationGracePeriodSeconds": 30, **spec},
        "status": {"phase": "Running"},
    }


def test_a_delete_stamps_the_pod_with_its_own_grace_period() -> None:
    decision = graceful_delete.decide(_pod(), {}, now=1000.0, deleting_since=None)
    assert (decision.now, decision.grace, decision.deletion_at) == (False, 30, 1030.0)
    stamped = graceful_delete.stamped(_pod(), decision, "2026-12-03T00:00:30Z")
    assert stamped["metadata"]["deletionGracePeriodSeconds"] == 30
    assert stamped["metadata"]["deletionTimestamp"] == "2026-12-03T00:00:30Z"


def test_the_request_grace_overrides_and_zero_deletes_at_once() -> None:
    asked = graceful_delete.decide(_pod(), {"gracePeriodSeconds": 5}, now=0.0, deleting_since=None)
    assert (asked.now, asked.grace) == (False, 5)
    forced = graceful_delete.decide(_pod(), {"gracePeriodSeconds": 0}, now=0.0, deleting_since=None)
    assert forced.now


def test_unscheduled_or_finished_pods_go_at_once() -> None:
    unscheduled = _pod()
    del unscheduled["spec"]["nodeName"]
    assert graceful_delete.decide(unscheduled, {}, now=0.0, deleting_since=None).now
    done = _pod()
    done["status"]["phase"] = "Succeeded"
    assert graceful_delete.decide(done, {}, now=0.0, deleting_since=None).now


def test_a_second_delete_only_shortens_from_the_first_request() -> None:
    pod = _pod()
    pod["metadata"]["deletionGracePeriodSeconds"] = 30
    same = graceful_delete.decide(pod, {}, now=10.0, deleting_since=0.0)
    assert same.unchanged
    longer = graceful_delete.decide(pod, {"gracePeriodSeconds": 60}, now=10.0, deleting_since=0.0)
    assert longer.unchanged
    shorter = graceful_delete.decide(pod, {"gracePeriodSeconds": 5}, now=10.0, deleting_since=0.0)
    assert (shorter.unchanged, shorter.grace, shorter.deletion_at) == (False, 5, 5.0)
    assert graceful_delete.decide(pod, {"gracePeriodSeconds": 0}, now=10.0, deleting_since=0.0).now


def _container(image: str, spec: dict[str, Any]) -> tuple[PodRun, ContainerRun]:
    container = ContainerRun("c", image, {"name": "c", "image": image, **spec})
    container.behaviour, _ = default_catalog().lookup(image)
    container.state = "running"
    run = PodRun("u1", "t", "web-1", "node-1", "10.244.0.5", "10.0.0.1", 0.0, [], [container])
    return run, container


def test_pre_stop_hooks_take_their_time_and_failures_are_named() -> None:
    run, sleeper = _container(
        "nginx:1.27", {"lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "sleep 10"]}}}}
    )
    assert pre_stop(run, sleeper).seconds == 10.0
    run, typo = _container(
        "nginx:1.27", {"lifecycle": {"preStop": {"exec": {"command": ["sh", "-c", "ech"]}}}}
    )
    hook = pre_stop(run, typo)
    assert "Exec lifecycle hook" in hook.failure and "exited with 127" in hook.failure
    run, http = _container(
        "nginx:1.27", {"lifecycle": {"preStop": {"httpGet": {"path": "/drain", "port": 9999}}}}
    )
    assert "connection refused" in pre_stop(run, http).failure
    run, nap = _container("nginx:1.27", {"lifecycle": {"preStop": {"sleep": {"seconds": 4}}}})
    assert pre_stop(run, nap).seconds == 4.0


def test_servers_exit_on_sigterm_and_a_shell_as_pid_1_does_not() -> None:
    catalog = default_catalog()
    nginx, _ = catalog.lookup("nginx:1.27")
    busybox, _ = catalog.lookup("busybox:1.36")
    assert on_sigterm(nginx, {"name": "c"}, {}) == 0
    assert on_sigterm(busybox, {"name": "c", "command": ["sleep", "3600"]}, {}) is None
    trapped = {"name": "c", "command": ["sh", "-c", "trap 'exit 0' TERM; sleep 3600"]}
    assert on_sigterm(busybox, trapped, {}) == 143


def _running(name: str, *, sidecar: bool = False) -> ContainerRun:
    spec: dict[str, Any] = {"name": name, "restartPolicy": "Always"} if sidecar else {"name": name}
    container = ContainerRun(name, "busybox:1.36", spec, init=sidecar)
    container.state = "running"
    return container


def test_sidecars_stop_after_the_others_last_first_one_at_a_time() -> None:
    mesh, logs = _running("mesh", sidecar=True), _running("logs", sidecar=True)
    app, worker = _running("app"), _running("worker")
    run = PodRun(
        "u1", "t", "web-1", "node-1", "10.244.0.5", "10.0.0.1", 0.0, [mesh, logs], [app, worker]
    )
    assert [c.name for c in stop_order(run)] == ["app", "worker"]
    run.stopping.update({"app", "worker"})
    assert stop_order(run) == []  # both still draining: the sidecars wait
    app.state = "terminated"
    assert stop_order(run) == []
    worker.state = "terminated"
    assert [c.name for c in stop_order(run)] == ["logs"]  # the reverse of the spec's order
    run.stopping.add("logs")
    assert stop_order(run) == []
    logs.state = "terminated"
    assert [c.name for c in stop_order(run)] == ["mesh"]
    run.stopping.add("mesh")
    mesh.state = "terminated"
    assert stop_order(run) == []


def test_the_grace_period_counts_from_when_the_kubelet_sees_the_deletion() -> None:
    # deletionTimestamp has whole seconds: a 3 s grace stamped at 12.9 s reads "15 s", which
    # would leave 2.1 s. The kubelet counts deletionGracePeriodSeconds from now instead.
    stamped = {"deletionTimestamp": "1970-01-01T00:00:15Z", "deletionGracePeriodSeconds": 3}
    assert grace_deadline(stamped, 12.9, Clock.parse) == 15.9
    assert grace_deadline({"deletionTimestamp": "1970-01-01T00:00:15Z"}, 12.9, Clock.parse) == 15.0
    forced = {"deletionTimestamp": "1970-01-01T00:00:15Z", "deletionGracePeriodSeconds": 0}
    assert grace_deadline(forced, 12.9, Clock.parse) == 12.9
