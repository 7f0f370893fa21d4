"""The real kubectl binaries against the lab, verb by verb.

Every test runs with each kubectl of the matrix: the system ``kubectl`` (the Google Cloud CLI's
dispatcher, which picks the version matching the server), its kubectl 1.27, 1.31, 1.32 and
1.33 directly, and Debian's 1.20. A version that is not installed is skipped, saying so.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.conftest import KUBECTL_MATRIX, Kubectl, Lab, kubectl_for
from tests.lab.generators import CREATED, with_files


@pytest.fixture(params=KUBECTL_MATRIX)
def kubectl(request: pytest.FixtureRequest, lab: Lab, tmp_path: Path) -> Kubectl:
    return kubectl_for(request.param, lab, tmp_path)


RESOURCES = [
    "ns",
    "no",
    "po",
    "svc",
    "ep",
    "ev",
    "cm",
    "secrets",
    "sa",
    "pvc",
    "quota",
    "deploy",
    "rs",
    "sts",
    "ds",
    "netpol",
    "hpa",
    "sc",
    "endpointslices",
    "pv",
    "jobs",
    "cronjobs",
    "pdb",
    "controllerrevisions",
]


EXTRA_OBJECTS = """
apiVersion: v1
kind: ResourceQuota
metadata: {name: generous, namespace: hotel}
spec: {hard: {pods: "100"}}
---
apiVersion: networking.k8s.io/v1
kind: NetworkPolicy
metadata: {name: allow-all, namespace: hotel}
spec:
  podSelector: {}
  ingress: [{}]
---
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: geo, namespace: hotel}
spec: {maxUnavailable: 1, selector: {matchLabels: {app: geo}}}
---
apiVersion: batch/v1
kind: CronJob
metadata: {name: nightly, namespace: hotel}
spec:
  schedule: "0 3 * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: main, image: busybox, command: [echo, done]}]
---
apiVersion: batch/v1
kind: Job
metadata: {name: once, namespace: hotel}
spec:
  template:
    spec:
      restartPolicy: Never
      containers: [{name: main, image: busybox, command: [echo, done]}]
"""


def test_get_every_resource_in_every_format(kubectl: Kubectl) -> None:
    kubectl.run("apply", "-f", "-", stdin=EXTRA_OBJECTS)
    every = ",".join(RESOURCES)
    tables = [t for t in kubectl.out("get", every, "-A").split("\n\n") if t.strip()]
    assert len(tables) == len(RESOURCES)  # one table per resource, none of them empty
    for table in tables:
        assert table.splitlines()[0].startswith(("NAMESPACE", "NAME", "LAST SEEN")), table
    wide = [t for t in kubectl.out("get", every, "-A", "-o", "wide").split("\n\n") if t.strip()]
    assert len(wide) == len(RESOURCES)
    listing = json.loads(kubectl.out("get", every, "-A", "-o", "json"))
    assert listing["kind"] == "List"
    assert all(item["kind"] and item["apiVersion"] for item in listing["items"])
    assert len({item["kind"] for item in listing["items"]}) == len(RESOURCES)
    assert kubectl.out("get", every, "-A", "-o", "yaml").count("\n  kind: ") == len(
        listing["items"]
    )
    names = kubectl.out("get", every, "-A", "-o", "name").split()
    assert len(names) == len(listing["items"])


def test_get_pods_prints_the_columns_a_user_expects(kubectl: Kubectl) -> None:
    header, *rows = kubectl.out("get", "pods").splitlines()
    assert header.split() == ["NAME", "READY", "STATUS", "RESTARTS", "AGE"]
    geo = next(r for r in rows if r.startswith("geo-"))
    assert geo.split()[1:3] == ["1/1", "Running"]
    wide = kubectl.out("get", "pods", "-o", "wide").splitlines()[0].split()
    assert {"IP", "NODE"} <= set(wide)
    deployments = kubectl.out("get", "deploy").splitlines()[0].split()
    assert deployments == ["NAME", "READY", "UP-TO-DATE", "AVAILABLE", "AGE"]


def test_label_and_field_selectors(kubectl: Kubectl) -> None:
    assert kubectl.out("get", "pods", "-l", "app=geo", "-o", "name").count("pod/") == 1
    assert kubectl.out("get", "pods", "-l", "tier in (database)", "-o", "name").count("pod/") == 6
    others = kubectl.out("get", "pods", "-l", "app!=geo", "-o", "name").split()
    assert len(others) == 16 and not any(name.startswith("pod/geo-") for name in others)
    assert kubectl.out("get", "pods", "-l", "!tier", "-o", "name").strip() == ""
    running = kubectl.out(
        "get",
        "pods",
        "-A",
        "--field-selector",
        "status.phase=Running",
        "-o",
        "name",
        namespace=None,
    )
    assert running.count("pod/") >= 17 + 11
    on_node = kubectl.out(
        "get",
        "pods",
        "-A",
        "--field-selector",
        "spec.nodeName=node-1",
        "-o",
        "json",
        namespace=None,
    )
    assert all(p["spec"]["nodeName"] == "node-1" for p in json.loads(on_node)["items"])
    bad = kubectl.run("get", "pods", "--field-selector", "spec.bogus=1", check=False)
    assert bad.returncode != 0 and "field label not supported" in bad.stderr


def test_describe_pod_deployment_service_node(kubectl: Kubectl) -> None:
    pod = kubectl.out("describe", "pod", "-l", "app=geo")
    assert "Controlled By:  ReplicaSet/geo-" in pod and "Started container geo" in pod
    deployment = kubectl.out("describe", "deployment", "geo")
    assert "1 desired | 1 updated | 1 total | 1 available" in deployment
    assert "NewReplicaSet:" in deployment
    service = kubectl.out("describe", "service", "geo")
    assert "TargetPort:" in service and ":8083" in service.split("Endpoints:")[1].splitlines()[0]
    node = kubectl.out("describe", "node", "node-1", namespace=None)
    assert "Non-terminated Pods:" in node and "Allocated resources:" in node


def test_logs_tail_container_and_previous(kubectl: Kubectl) -> None:
    assert kubectl.out("logs", "deploy/geo", "--tail=1").count("\n") == 1
    assert "listening on :8083" in kubectl.out("logs", "deploy/geo", "-c", "geo")
    missing = kubectl.run("logs", "deploy/geo", "--previous", check=False)
    assert missing.returncode != 0 and "previous terminated container" in missing.stderr
    kubectl.run("set", "image", "deploy/rate", "rate=stratus/hotel-rate:1.2")
    previous = kubectl.out("logs", "deploy/rate", "--previous")
    assert "panic: runtime error" in previous


def test_scale_and_rollout_restart_status_history_undo(kubectl: Kubectl) -> None:
    kubectl.run("scale", "deploy/geo", "--replicas=3")
    assert kubectl.out("get", "deploy", "geo", "-o", "jsonpath={.status.readyReplicas}") == "3"
    kubectl.run("rollout", "restart", "deploy/geo")
    assert "successfully rolled out" in kubectl.out(
        "rollout", "status", "deploy/geo", "--timeout=20s"
    )
    kubectl.run("set", "image", "deploy/geo", "geo=stratus/hotel-geo:1.1")
    history = kubectl.out("rollout", "history", "deploy/geo")
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2", "3"]
    kubectl.run("rollout", "undo", "deploy/geo")
    image = kubectl.out(
        "get", "deploy", "geo", "-o", "jsonpath={.spec.template.spec.containers[0].image}"
    )
    assert image == "stratus/hotel-geo:1.0"
    history = kubectl.out("rollout", "history", "deploy/geo")
    assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "3", "4"]
    kubectl.run("rollout", "undo", "deploy/geo", "--to-revision=1")
    assert kubectl.out("get", "rs", "-l", "app=geo", "-o", "name").count("replicaset") == 3


def test_set_image_and_env(kubectl: Kubectl) -> None:
    kubectl.run("set", "image", "deploy/search", "search=stratus/hotel-search:1.1")
    assert "stratus/hotel-search:1.1" in kubectl.out(
        "get", "pods", "-l", "app=search", "-o", "jsonpath={.items[*].spec.containers[0].image}"
    )
    kubectl.run("set", "env", "deploy/search", "FEATURE_X=on")
    assert "FEATURE_X=on" in kubectl.out("set", "env", "deploy/search", "--list")
    kubectl.run("set", "env", "deploy/search", "FEATURE_X-")
    listed = kubectl.out("set", "env", "deploy/search", "--list")
    assert "FEATURE_X" not in listed and "LOG_LEVEL" in listed


def test_patch_with_all_three_types(kubectl: Kubectl) -> None:
    kubectl.run(
        "patch", "deploy", "geo", "--type=merge", "-p", '{"metadata":{"labels":{"merged":"yes"}}}'
    )
    kubectl.run(
        "patch",
        "deploy",
        "geo",
        "--type=json",
        "-p",
        '[{"op":"add","path":"/metadata/labels/json","value":"yes"}]',
    )
    kubectl.run(
        "patch",
        "deploy",
        "geo",
        "-p",
        '{"spec":{"template":{"spec":{"containers":[{"name":"geo",'
        '"resources":{"limits":{"memory":"300Mi"}}}]}}}}',
    )
    deployment = json.loads(kubectl.out("get", "deploy", "geo", "-o", "json"))
    assert deployment["metadata"]["labels"]["merged"] == "yes"
    assert deployment["metadata"]["labels"]["json"] == "yes"
    container = deployment["spec"]["template"]["spec"]["containers"][0]
    assert container["resources"]["limits"]["memory"] == "300Mi"
    assert container["image"] == "stratus/hotel-geo:1.0"  # strategic merge kept the rest
    bad = kubectl.run(
        "patch",
        "deploy",
        "geo",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/nope/x","value":1}]',
        check=False,
    )
    assert bad.returncode != 0


def test_label_annotate_cordon_uncordon(kubectl: Kubectl) -> None:
    kubectl.run("label", "pod", "-l", "app=geo", "team=search")
    assert kubectl.out("get", "pods", "-l", "team=search", "-o", "name").count("pod/") == 1
    kubectl.run("annotate", "deploy", "geo", "owner=sre")
    assert (
        kubectl.out("get", "deploy", "geo", "-o", "jsonpath={.metadata.annotations.owner}") == "sre"
    )
    kubectl.run("cordon", "node-1", namespace=None)
    assert "SchedulingDisabled" in kubectl.out("get", "node", "node-1", namespace=None)
    kubectl.run("uncordon", "node-1", namespace=None)
    assert "SchedulingDisabled" not in kubectl.out("get", "node", "node-1", namespace=None)


def test_delete_pod_is_replaced_by_its_replica_set(kubectl: Kubectl) -> None:
    before = kubectl.out("get", "pods", "-l", "app=geo", "-o", "name").strip()
    kubectl.run("delete", "pod", "-l", "app=geo")
    after = kubectl.out("get", "pods", "-l", "app=geo", "-o", "name").strip()
    assert after and after != before


def test_apply_creates_then_updates_and_wait(kubectl: Kubectl) -> None:
    manifest = """
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: hotel}
spec:
  replicas: REPLICAS
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: memcached:1.6.7}]
"""
    created = kubectl.run("apply", "-f", "-", stdin=manifest.replace("REPLICAS", "1"))
    assert "created" in created.stdout and "warning" not in created.stderr.lower()
    updated = kubectl.run("apply", "-f", "-", stdin=manifest.replace("REPLICAS", "3"))
    assert "configured" in updated.stdout
    kubectl.run("wait", "--for=condition=Available", "deploy/web", "--timeout=20s")
    assert kubectl.out("get", "deploy", "web", "-o", "jsonpath={.status.availableReplicas}") == "3"


def test_unknown_resource_and_object_errors(kubectl: Kubectl, lab: Lab) -> None:
    missing = kubectl.run("get", "deploy", "nope", check=False)
    assert missing.returncode != 0 and 'deployments.apps "nope" not found' in missing.stderr
    unknown = kubectl.run("get", "widgets", check=False)
    assert unknown.returncode != 0


def test_get_watch_streams_table_rows(kubectl: Kubectl) -> None:
    import subprocess
    import time

    watcher = subprocess.Popen(
        [kubectl.binary, "-n", "hotel", "get", "deploy", "geo", "-w", "--request-timeout=20s"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=kubectl.env,
    )
    try:
        time.sleep(1.0)
        kubectl.run("scale", "deploy/geo", "--replicas=2")
        time.sleep(1.0)
    finally:
        watcher.terminate()
        output, _ = watcher.communicate(timeout=10)
    rows = [line.split() for line in output.splitlines()[1:] if line.strip()]
    assert rows[0][:2] == ["geo", "1/1"]
    assert ["geo", "2/2"] in [row[:2] for row in rows]


def test_create_every_generator(kubectl: Kubectl, tmp_path: Path) -> None:
    kubectl.run("create", "namespace", "made", namespace=None)
    for command in with_files(tmp_path):
        assert "created" in kubectl.out(*command, namespace="made")
    made = kubectl.out("get", "deploy,cm,secret,svc,sa,quota", "-o", "name", namespace="made")
    assert set(CREATED) <= set(made.split())
    # 1.20 first looks for the dryRun parameter of the kind's PATCH in OpenAPI v2.
    preview = kubectl.out(
        "create", "configmap", "preview", "--from-literal=a=b", "--dry-run=server", "-o", "yaml"
    )
    assert "name: preview" in preview and "uid:" in preview
    assert kubectl.run("get", "cm", "preview", check=False).returncode != 0
    again = kubectl.run("create", "serviceaccount", "robot", namespace="made", check=False)
    assert again.returncode != 0 and "already exists" in again.stderr
    labels = kubectl.out("get", "ns", "made", "-o", "jsonpath={.metadata.labels}", namespace=None)
    assert json.loads(labels) == {"kubernetes.io/metadata.name": "made"}
    quota = json.loads(kubectl.out("get", "quota", "small", "-o", "json", namespace="made"))
    assert quota["status"]["hard"] == {"pods": "10", "requests.cpu": "2", "requests.memory": "1Gi"}


def test_run_expose_and_wait(kubectl: Kubectl) -> None:
    kubectl.run("run", "cache", "--image=memcached:1.6.7", "--port=11211", "--labels=app=cache")
    kubectl.run("wait", "--for=condition=Ready", "pod/cache", "--timeout=20s")
    if kubectl.name != "1.20":  # --for=jsonpath arrived in kubectl 1.23
        kubectl.run("wait", "--for=jsonpath={.status.phase}=Running", "pod/cache", "--timeout=20s")
    kubectl.run("expose", "pod", "cache", "--port=11211", "--name=cache")
    pod_ip = kubectl.out("get", "pod", "cache", "-o", "jsonpath={.status.podIP}")
    endpoints = kubectl.out(
        "get", "endpoints", "cache", "-o", "jsonpath={.subsets[0].addresses[*].ip}"
    )
    assert endpoints == pod_ip
    kubectl.run("create", "deployment", "web", "--image=memcached:1.6.7", "--replicas=2")
    kubectl.run("expose", "deployment", "web", "--port=80", "--target-port=11211")
    assert "successfully rolled out" in kubectl.out(
        "rollout", "status", "deploy/web", "--timeout=20s"
    )
    service = json.loads(kubectl.out("get", "svc", "web", "-o", "json"))
    assert service["spec"]["selector"] == {"app": "web"}
    assert service["spec"]["ports"][0]["targetPort"] == 11211
    addresses = kubectl.out("get", "ep", "web", "-o", "jsonpath={.subsets[0].addresses[*].ip}")
    assert len(addresses.split()) == 2
    # An unnamed port (as `expose` makes): kubectl 1.32+ dereferences the slice port's name,
    # which the real controller always writes, "" for an unnamed port (it panicked here).
    described = kubectl.out("describe", "service", "web")
    assert "TargetPort:" in described and ":11211" in described
    slices = json.loads(
        kubectl.out("get", "endpointslices", "-l", "kubernetes.io/service-name=web", "-o", "json")
    )
    assert [port.get("name") for port in slices["items"][0]["ports"]] == [""]


def test_rollout_status_of_every_workload_kind(kubectl: Kubectl) -> None:
    for workload in ("deployment/catalog", "statefulset/postgres", "daemonset/log-agent"):
        kubectl.run("rollout", "restart", workload, namespace="shop")
        status = kubectl.out("rollout", "status", workload, "--timeout=20s", namespace="shop")
        assert "successfully rolled out" in status or "roll out complete" in status, status
    statefulset = json.loads(kubectl.out("get", "sts", "postgres", "-o", "json", namespace="shop"))
    assert statefulset["status"]["updatedReplicas"] == statefulset["spec"]["replicas"]


TICK = """
apiVersion: batch/v1
kind: CronJob
metadata: {name: tick, namespace: hotel}
spec:
  schedule: "*/5 * * * *"
  jobTemplate:
    spec:
      template:
        spec:
          restartPolicy: OnFailure
          containers: [{name: tick, image: busybox, command: [date]}]
"""

PDB = """
apiVersion: policy/v1
kind: PodDisruptionBudget
metadata: {name: fe, namespace: shop}
spec: {minAvailable: 2, selector: {matchLabels: {app: frontend}}}
"""


def _columns(kubectl: Kubectl, *args: str, namespace: str | None = "shop") -> list[str]:
    header = kubectl.out("get", *args, namespace=namespace).splitlines()[0]
    return [c.strip() for c in header.split("  ") if c.strip()]


def test_autoscale_jobs_cronjobs_drain_revisions_and_volumes(kubectl: Kubectl, lab: Lab) -> None:
    """The verbs of autoscaling/v1, batch/v1, policy/v1, ControllerRevisions and volumes."""
    kubectl.run("autoscale", "deployment", "geo", "--min=2", "--max=5", "--cpu-percent=80")
    hpa = kubectl.out("get", "hpa", "geo").splitlines()
    assert hpa[0].split() == [
        "NAME",
        "REFERENCE",
        "TARGETS",
        "MINPODS",
        "MAXPODS",
        "REPLICAS",
        "AGE",
    ]
    assert hpa[1].split()[1:3] == ["Deployment/geo", "cpu:"] and "40%/80%" in hpa[1]
    assert kubectl.out("get", "deploy", "geo", "-o", "jsonpath={.spec.replicas}") == "2"
    as_v1 = kubectl.out(
        "get", "--raw", "/apis/autoscaling/v1/namespaces/hotel/horizontalpodautoscalers/geo"
    )
    assert '"targetCPUUtilizationPercentage":80' in as_v1
    # Jobs: create, wait, logs, the columns; a failing one; one from a CronJob.
    kubectl.run("create", "job", "hello", "--image=busybox", "--", "echo", "hi")
    kubectl.run("wait", "--for=condition=complete", "job/hello", "--timeout=20s")
    assert kubectl.out("logs", "job/hello") == "hi\n"
    row = kubectl.out("get", "job", "hello").splitlines()
    if kubectl.name == "1.20":  # its client-side header for jobs has no STATUS
        assert row[0].split()[:3] == ["NAME", "COMPLETIONS", "DURATION"] or "STATUS" in row[0]
    assert "1/1" in row[1].split()
    if kubectl.name == "1.20":
        # kubectl 1.20 creates batch/v1beta1 CronJobs, which a 1.32 server no longer serves.
        refused = kubectl.run(
            "create", "cronjob", "x", "--image=busybox", "--schedule=* * * * *", check=False
        )
        assert "could not find the requested resource (cronjobs in batch/v1beta1)" in (
            refused.stderr
        )
        kubectl.run("apply", "-f", "-", stdin=TICK)
    else:
        kubectl.run(
            "create", "cronjob", "tick", "--image=busybox", "--schedule=*/5 * * * *", "--", "date"
        )
    lab.control.post("/lab/v1/settle", {"horizon": 600})
    cronjobs = kubectl.out("get", "cronjobs", "tick").splitlines()
    assert {"SCHEDULE", "SUSPEND", "ACTIVE", "LAST"} <= set(cronjobs[0].split())
    assert "*/5 * * * *" in cronjobs[1] and "<none>" not in cronjobs[1].split()[-2:-1]
    assert kubectl.out("get", "jobs", "-o", "name").count("job.batch/tick-") >= 1
    if kubectl.name != "1.20":  # 1.20 knows CronJobs only as batch/v1beta1, as on a cluster
        kubectl.run("create", "job", "by-hand", "--from=cronjob/tick")
        kubectl.run("wait", "--for=condition=complete", "job/by-hand", "--timeout=20s")
    # Budgets, eviction and drain.
    if kubectl.name == "1.20":  # it creates policy/v1beta1 budgets, gone from 1.25 servers
        kubectl.run("apply", "-f", "-", stdin=PDB, namespace="shop")
    else:
        kubectl.run(
            "create", "pdb", "fe", "--selector=app=frontend", "--min-available=2", namespace="shop"
        )
    assert "ALLOWED DISRUPTIONS" in kubectl.out("get", "pdb", namespace="shop")
    node = kubectl.out(
        "get",
        "pods",
        "-l",
        "app=frontend",
        "-o",
        "jsonpath={.items[0].spec.nodeName}",
        namespace="shop",
    )
    blocked = kubectl.run(
        "drain",
        node,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--timeout=2s",  # the first refused eviction is reported at once
        check=False,
        namespace=None,
    )
    assert blocked.returncode != 0 and "disruption budget" in blocked.stderr + blocked.stdout
    kubectl.run("delete", "pdb", "fe", namespace="shop")
    drained = kubectl.run(
        "drain",
        node,
        "--ignore-daemonsets",
        "--delete-emptydir-data",
        "--timeout=30s",
        namespace=None,
    )
    assert "evicted" in drained.stdout  # 1.20 ends with "node/x evicted", later "drained"
    on_node = kubectl.out(
        "get",
        "pods",
        "-A",
        "--field-selector",
        f"spec.nodeName={node}",
        "-o",
        "name",
        namespace=None,
    )
    # Only DaemonSet pods stay: shop's log-agent and kube-system's kube-proxy.
    assert all("log-agent" in p or "kube-proxy" in p for p in on_node.split()) or not on_node
    kubectl.run("uncordon", node, namespace=None)
    # StatefulSet and DaemonSet history and undo.
    for workload, container, image in (
        ("statefulset/postgres", "postgres", "postgres:15"),
        ("daemonset/log-agent", "agent", "busybox:1.36"),
    ):
        before = kubectl.out(
            "get",
            workload,
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}",
            namespace="shop",
        )
        name = kubectl.out(
            "get",
            workload,
            "-o",
            "jsonpath={.spec.template.spec.containers[0].name}",
            namespace="shop",
        )
        kubectl.run("set", "image", workload, f"{name}={image}", namespace="shop")
        history = kubectl.out("rollout", "history", workload, namespace="shop")
        assert [line.split()[0] for line in history.splitlines()[2:] if line.strip()] == ["1", "2"]
        kubectl.run("rollout", "undo", workload, namespace="shop")
        after = kubectl.out(
            "get",
            workload,
            "-o",
            "jsonpath={.spec.template.spec.containers[0].image}",
            namespace="shop",
        )
        assert after == before, (workload, container)
    # Volumes and the columns of the kinds users read.
    pv = kubectl.out("get", "pv", namespace=None).splitlines()
    assert pv[0].split()[:5] == ["NAME", "CAPACITY", "ACCESS", "MODES", "RECLAIM"]
    assert "shop/data-postgres-0" in pv[1] and "Bound" in pv[1]
    pvc = _columns(kubectl, "pvc")
    assert pvc[:6] == ["NAME", "STATUS", "VOLUME", "CAPACITY", "ACCESS MODES", "STORAGECLASS"]
    claim = kubectl.out("get", "pvc", "data-postgres-0", namespace="shop").splitlines()[1]
    assert claim.split()[1:3] == ["Bound", pv[1].split()[0]] and "RWO" in claim
    assert _columns(kubectl, "ns", namespace=None) == ["NAME", "STATUS", "AGE"]
    assert _columns(kubectl, "cm") == ["NAME", "DATA", "AGE"]
    assert _columns(kubectl, "secrets") == ["NAME", "TYPE", "DATA", "AGE"]
    assert _columns(kubectl, "sc", namespace=None)[:3] == ["NAME", "PROVISIONER", "RECLAIMPOLICY"]
    assert "standard (default)" in kubectl.out("get", "sc", namespace=None)
