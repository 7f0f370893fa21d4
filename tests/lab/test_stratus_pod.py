"""The lab runs Stratus as a pod: a pod of the Stratus image is the real ``stratus`` program,
a child process of the lab's kubelet (issue 19, §3).

Driven from outside as an SRE would: ``kubectl apply`` of a Namespace, a ServiceAccount, a
ConfigMap of policy files, Secrets, a PersistentVolumeClaim and a Deployment into a realtime lab
with RBAC on; then ``kubectl logs``, ``kubectl wait``, ``kubectl delete``; the playground talks
to the pod at its own address; the processes are observed in ``/proc``. That a lab's end
ends its pods' processes is ``test_stratus_pod_shutdown.py``; what both use is ``stratus_pods``.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lab.cluster.clock import REALTIME
from lab.images import ImageSpec
from lab.runner import LabServer
from lab.slack.client import PlaygroundClient
from lab.slack.server import PlaygroundServer
from lab.slack.workspace import PlaygroundConfig
from tests.lab.stratus_pods import (
    IMAGE,
    NS,
    Kubectl,
    alive,
    children,
    environ,
    help_pod,
    hostname,
    serving,
    wait_until,
)

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl on PATH")

POLICY = """\
apiVersion: stratus/v1
kind: ApprovalPolicy
metadata:
  name: in-the-pod
defaults:
  approvers: ["S0SRE"]
rules:
  - name: never-touch-system
    match:
      namespaces: ["kube-*"]
    decision: deny
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabServer]:
    server = LabServer(
        mode=REALTIME, rbac=True, state_dir=tmp_path_factory.mktemp("lab-state")
    ).start()
    yield server
    server.stop()


@pytest.fixture(scope="module")
def kubectl(lab: LabServer, tmp_path_factory: pytest.TempPathFactory) -> Kubectl:
    home = tmp_path_factory.mktemp("kubectl")
    return Kubectl(lab.write_kubeconfig(home / "config"), home)


@pytest.fixture(scope="module")
def playground() -> Iterator[PlaygroundServer]:
    server = PlaygroundServer(PlaygroundConfig(event_retry_delays=(0.0,))).start()
    yield server
    server.stop()


def namespace_objects(playground: PlaygroundServer) -> list[dict[str, Any]]:
    """What the deployment needs besides the Deployment itself."""
    return [
        {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": NS}},
        {
            "apiVersion": "v1",
            "kind": "ServiceAccount",
            "metadata": {"name": "stratus", "namespace": NS},
        },
        # A pod runs leader election by default: the ServiceAccount holds the Lease (as the
        # shipped manifests' stratus-leader Role grants). It needs nothing else to serve.
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "Role",
            "metadata": {"name": "stratus-leader", "namespace": NS},
            "rules": [
                {
                    "apiGroups": ["coordination.k8s.io"],
                    "resources": ["leases"],
                    "resourceNames": ["stratus-leader"],
                    "verbs": ["get", "update"],
                },
                {
                    "apiGroups": ["coordination.k8s.io"],
                    "resources": ["leases"],
                    "verbs": ["create"],
                },
            ],
        },
        {
            "apiVersion": "rbac.authorization.k8s.io/v1",
            "kind": "RoleBinding",
            "metadata": {"name": "stratus-leader", "namespace": NS},
            "roleRef": {
                "apiGroup": "rbac.authorization.k8s.io",
                "kind": "Role",
                "name": "stratus-leader",
            },
            "subjects": [{"kind": "ServiceAccount", "name": "stratus", "namespace": NS}],
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "stratus-policy", "namespace": NS},
            "data": {"policy.yaml": POLICY},
        },
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "stratus-settings", "namespace": NS},
            "data": {"NOTE": "from envFrom"},
        },
        {
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {"name": "stratus-slack", "namespace": NS},
            "stringData": {
                "bot-token": playground.bot_token,
                "signing-secret": playground.signing_secret,
            },
        },
        {
            "apiVersion": "v1",
            "kind": "PersistentVolumeClaim",
            "metadata": {"name": "stratus-data", "namespace": NS},
            "spec": {
                "accessModes": ["ReadWriteOnce"],
                "resources": {"requests": {"storage": "1Gi"}},
            },
        },
        {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "stratus", "namespace": NS},
            "spec": {
                "selector": {"app": "stratus"},
                "ports": [{"name": "http", "port": 3000}, {"name": "health", "port": 8080}],
            },
        },
    ]


def serve_deployment(playground: PlaygroundServer) -> dict[str, Any]:
    secret = {"secretKeyRef": {"name": "stratus-slack"}}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": "stratus", "namespace": NS},
        "spec": {
            "replicas": 1,
            "strategy": {"type": "Recreate"},
            "selector": {"matchLabels": {"app": "stratus"}},
            "template": {
                "metadata": {"labels": {"app": "stratus"}},
                "spec": {
                    "serviceAccountName": "stratus",
                    "terminationGracePeriodSeconds": 5,
                    "containers": [
                        {
                            "name": "stratus",
                            "image": IMAGE,
                            "args": [
                                "serve",
                                "--mode",
                                "http",
                                "--host",
                                "$(POD_IP)",
                                "--port",
                                "3000",
                                "--planner",
                                "offline",
                            ],
                            "ports": [
                                {"name": "http", "containerPort": 3000},
                                {"name": "health", "containerPort": 8080},
                            ],
                            "envFrom": [
                                {"prefix": "LAB_", "configMapRef": {"name": "stratus-settings"}}
                            ],
                            "env": [
                                {
                                    "name": "POD_IP",
                                    "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}},
                                },
                                {
                                    "name": "SA",
                                    "valueFrom": {
                                        "fieldRef": {"fieldPath": "spec.serviceAccountName"}
                                    },
                                },
                                {
                                    "name": "SLACK_BOT_TOKEN",
                                    "valueFrom": {
                                        "secretKeyRef": {
                                            **secret["secretKeyRef"],
                                            "key": "bot-token",
                                        }
                                    },
                                },
                                {
                                    "name": "SLACK_SIGNING_SECRET",
                                    "valueFrom": {
                                        "secretKeyRef": {
                                            **secret["secretKeyRef"],
                                            "key": "signing-secret",
                                        }
                                    },
                                },
                                {"name": "STRATUS_SLACK_API_URL", "value": playground.api_url},
                                # No kubeconfig: the in-cluster ServiceAccount (tools/incluster).
                                {"name": "HOME", "value": "/tmp"},
                                {"name": "STRATUS_DB", "value": "/var/lib/stratus/stratus.db"},
                                {"name": "STRATUS_POLICY_DIR", "value": "/etc/stratus/policy"},
                                # The lab's pods share this machine's network: the health
                                # listener binds the pod's own address, as the manifests do
                                # (its default in a pod, 0.0.0.0, would take port 8080 of
                                # every address of the machine).
                                {"name": "STRATUS_HEALTH_HOST", "value": "$(POD_IP)"},
                                {"name": "STRATUS_HEALTH_PORT", "value": "8080"},
                                {"name": "LISTEN", "value": "$(POD_IP):3000"},
                            ],
                            "volumeMounts": [
                                {
                                    "name": "policy",
                                    "mountPath": "/etc/stratus/policy",
                                    "readOnly": True,
                                },
                                {"name": "data", "mountPath": "/var/lib/stratus"},
                                {"name": "tmp", "mountPath": "/tmp"},
                            ],
                            "readinessProbe": {
                                "httpGet": {"path": "/readyz", "port": "health"},
                                "periodSeconds": 1,
                            },
                            "livenessProbe": {
                                "httpGet": {"path": "/healthz", "port": "health"},
                                "initialDelaySeconds": 20,
                                "periodSeconds": 5,
                            },
                        }
                    ],
                    "volumes": [
                        {"name": "policy", "configMap": {"name": "stratus-policy"}},
                        {"name": "data", "persistentVolumeClaim": {"claimName": "stratus-data"}},
                        {"name": "tmp", "emptyDir": {}},
                    ],
                },
            },
        },
    }


@pytest.fixture(scope="module")
def deployed(lab: LabServer, kubectl: Kubectl, playground: PlaygroundServer) -> Kubectl:
    kubectl.apply(*namespace_objects(playground))
    return kubectl


def test_a_small_command_runs_to_completion_with_its_output_in_the_logs(deployed: Kubectl) -> None:
    once_pod = help_pod("help-once", "Never")
    once_pod["spec"]["hostNetwork"] = True  # still an address of this machine, not the node's
    deployed.apply(once_pod, help_pod("help-again", "Always"))
    once = wait_until(
        lambda: (
            (deployed.pod("help-once").get("status") or {}).get("phase") == "Succeeded"
            and deployed.pod("help-once")
        ),
        60,
        "stratus --help to complete",
    )
    state = once["status"]["containerStatuses"][0]["state"]["terminated"]
    assert state["reason"] == "Completed" and state["exitCode"] == 0, state
    assert once["status"]["podIP"].startswith("127."), once["status"]
    logs = deployed("-n", NS, "logs", "help-once")
    assert "Usage: stratus" in logs and "serve" in logs, logs
    # Restart policy Always: it is started again after each exit, with the back-off.
    again = wait_until(
        lambda: (
            deployed.pod("help-again")["status"]["containerStatuses"][0]["restartCount"] >= 1
            and deployed.pod("help-again")
        ),
        60,
        "the restarted container",
    )
    last = again["status"]["containerStatuses"][0]["lastState"]["terminated"]
    assert last["reason"] == "Completed", last
    assert "Usage: stratus" in deployed("-n", NS, "logs", "help-again", "--previous")


def test_a_program_the_image_lacks_fails_to_start(deployed: Kubectl) -> None:
    pod = help_pod("no-such-program", "Never")
    pod["spec"]["containers"][0]["command"] = ["/bin/bash", "-c", "echo hi"]
    deployed.apply(pod)
    failed = wait_until(
        lambda: (
            (deployed.pod("no-such-program").get("status") or {}).get("phase") == "Failed"
            and deployed.pod("no-such-program")
        ),
        60,
        "the pod to fail",
    )
    state = failed["status"]["containerStatuses"][0]["state"]["terminated"]
    assert (state["reason"], state["exitCode"]) == ("StartError", 128), state
    events = deployed("-n", NS, "get", "events", "--field-selector",
                      "involvedObject.name=no-such-program")  # fmt: skip
    assert 'exec: "/bin/bash": executable file not found in $PATH' in events, events


def test_stratus_serve_runs_in_a_pod_with_its_files_and_environment(
    lab: LabServer, deployed: Kubectl, playground: PlaygroundServer
) -> None:
    deployed.apply(serve_deployment(playground))
    deployed("-n", NS, "wait", "--for=condition=Ready", "pod", "-l", "app=stratus",
             "--timeout=120s")  # fmt: skip
    (pod,) = deployed.pods("app=stratus")
    name, ip = pod["metadata"]["name"], pod["status"]["podIP"]
    assert ip.startswith("127.") and ip != "127.0.0.1", ip
    logs = wait_until(
        lambda: "stratus bot running" in (text := deployed("-n", NS, "logs", name)) and text,
        30,
        "the bot's start line in kubectl logs",
    )
    assert f"http://{ip}:3000" in logs and f"health: http://{ip}:8080" in logs, logs
    # The Service's endpoints hold the ready pod.
    endpoints = json.loads(deployed("-n", NS, "get", "endpoints", "stratus", "-o", "json"))
    assert [a["ip"] for s in endpoints["subsets"] for a in s["addresses"]] == [ip]

    pid = wait_until(lambda: serving(name), 10, "the serve process")
    env = environ(pid)
    assert env["POD_IP"] == ip and env["SA"] == "stratus"
    assert env["LISTEN"] == f"{ip}:3000"  # $(VAR) expanded
    assert env["LAB_NOTE"] == "from envFrom"
    assert env["SLACK_SIGNING_SECRET"] == playground.signing_secret
    host, port = lab.url.removeprefix("https://").split(":")
    assert (env["KUBERNETES_SERVICE_HOST"], env["KUBERNETES_SERVICE_PORT"]) == (host, port)
    assert env["STRATUS_SERVICE_PORT_HTTP"] == "3000"  # the namespace's Service variables
    # Paths under a mount point name the volume's directory on this machine.
    policy_dir = Path(env["STRATUS_POLICY_DIR"])
    assert (policy_dir / "policy.yaml").read_text() == POLICY
    assert (policy_dir / "..data").is_symlink()
    database = Path(env["STRATUS_DB"])
    assert database.name == "stratus.db" and database.exists()
    tokens = Path(env["STRATUS_SERVICEACCOUNT_DIR"])
    assert (tokens / "namespace").read_text() == NS
    assert (tokens / "ca.crt").read_text() == lab.ca_pem
    whoami = deployed("--token", (tokens / "token").read_text(), "auth", "whoami")
    assert "system:serviceaccount:stratus:stratus" in whoami, whoami

    # The ConfigMap changes: the file follows (atomically, through ..data).
    changed = POLICY.replace("in-the-pod", "changed")
    patch = json.dumps({"data": {"policy.yaml": changed}})
    deployed("-n", NS, "patch", "configmap", "stratus-policy", "-p", patch)
    wait_until(lambda: (policy_dir / "policy.yaml").read_text() == changed, 10, "the new file")

    # The playground talks to the bot at the pod's address.
    slack = PlaygroundClient(playground.url)
    slack.configure(request_url=f"http://{ip}:3000/slack/events")
    delivery = slack.command("U0DAVE", "/stratus", "help")
    assert delivery["ok"], delivery
    assert "Stratus" in json.dumps(delivery), delivery

    # Deleting the pod ends the process (SIGTERM, then SIGKILL after the grace period);
    # the Deployment's next pod finds the database on the same volume.
    deployed("-n", NS, "delete", "pod", name, "--wait=false")
    wait_until(lambda: not alive(pid), 20, "the deleted pod's process to end")
    deployed("-n", NS, "wait", "--for=condition=Ready", "pod", "-l", "app=stratus",
             "--timeout=120s")  # fmt: skip
    (second,) = [p for p in deployed.pods("app=stratus") if p["metadata"]["name"] != name]
    new_pid = wait_until(lambda: serving(second["metadata"]["name"]), 10, "the new process")
    assert new_pid != pid
    assert Path(environ(new_pid)["STRATUS_DB"]) == database


def test_a_failing_http_liveness_probe_restarts_the_real_process(
    deployed: Kubectl, playground: PlaygroundServer
) -> None:
    deployment = serve_deployment(playground)
    deployment["metadata"]["name"] = "probed"
    spec = deployment["spec"]
    spec["selector"]["matchLabels"] = spec["template"]["metadata"]["labels"] = {"app": "probed"}
    container = spec["template"]["spec"]["containers"][0]
    # Its own database, on a volume of the pod.
    volumes = spec["template"]["spec"]["volumes"]
    volumes[[v["name"] for v in volumes].index("data")] = {"name": "data", "emptyDir": {}}
    # Not a second candidate for the Lease the other deployment's pod holds: a standby
    # would never start the bot this test probes.
    container["env"].append({"name": "STRATUS_LEADER_ELECTION", "value": "off"})
    # The HTTP bot answers GET on its events path with 405: a real answer, a failed probe.
    # The startup probe holds the liveness probe back until the bot listens.
    container["startupProbe"] = {
        "tcpSocket": {"port": "http"},
        "periodSeconds": 1,
        "failureThreshold": 90,
    }
    container["livenessProbe"] = {
        "httpGet": {"path": "/slack/events", "port": "http"},
        "periodSeconds": 1,
        "failureThreshold": 2,
    }
    deployed.apply(deployment)
    (pod,) = wait_until(lambda: deployed.pods("app=probed"), 30, "the probed pod")
    name = pod["metadata"]["name"]
    first = wait_until(lambda: serving(name), 60, "the first process")
    restarted = wait_until(
        lambda: (
            (deployed.pod(name).get("status") or {})
            .get("containerStatuses", [{}])[0]
            .get("restartCount", 0)
            >= 1
        ),
        90,
        "the liveness restart",
    )
    assert restarted
    wait_until(lambda: not alive(first), 20, "the killed process to be gone")
    events = deployed("-n", NS, "get", "events", "--field-selector", f"involvedObject.name={name}")
    assert "Liveness probe failed: HTTP probe failed with statuscode: 405" in events, events
    assert "failed liveness probe, will be restarted" in events, events
    deployed("-n", NS, "delete", "deployment", "probed")


def test_a_process_that_ignores_sigterm_is_killed_after_the_grace_period(
    lab: LabServer, deployed: Kubectl
) -> None:
    # An image of the catalog whose program ignores SIGTERM (the catalog is data: the lab's
    # own Stratus entry is one such entry).
    ignoring = (
        "import signal, sys, time; signal.signal(signal.SIGTERM, signal.SIG_IGN); "
        "print('ignoring SIGTERM', flush=True); time.sleep(600)"
    )

    def add_image(cluster: Any) -> None:
        cluster.images.images["lab-test/stubborn"] = ImageSpec(
            entrypoint=["stubborn"], process={"stubborn": ["python", "-c", ignoring]}
        )

    lab.call(add_image)
    pod = help_pod("stubborn", "Never")
    pod["spec"]["terminationGracePeriodSeconds"] = 3
    pod["spec"]["containers"][0].update(image="lab-test/stubborn:latest", args=[])
    deployed.apply(pod)
    wait_until(
        lambda: "ignoring SIGTERM" in deployed.run("-n", NS, "logs", "stubborn").stdout,
        60,
        "its log",
    )
    pid = wait_until(
        lambda: next((p for p in children() if hostname(p) == "stubborn"), None), 10, "pid"
    )
    deleted = time.monotonic()
    deployed("-n", NS, "delete", "pod", "stubborn", "--wait=false")
    time.sleep(1.0)
    assert alive(pid)  # SIGTERM did not end it: the grace period runs
    wait_until(lambda: not alive(pid), 30, "the SIGKILL after the grace period")
    assert time.monotonic() - deleted >= 2.5
    # `--grace-period=0 --force` (DeleteOptions.gracePeriodSeconds 0) kills at once, whatever
    # the pod's own grace period (30 s here).
    forced = help_pod("stubborn-forced", "Never")
    forced["spec"]["containers"][0].update(image="lab-test/stubborn:latest", args=[])
    deployed.apply(forced)
    pid = wait_until(
        lambda: next((p for p in children() if hostname(p) == "stubborn-forced"), None), 60, "pid"
    )
    deployed("-n", NS, "delete", "pod", "stubborn-forced", "--grace-period=0", "--force")
    wait_until(lambda: not alive(pid), 10, "the forced kill")
