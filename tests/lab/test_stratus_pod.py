"""The lab runs Stratus as a pod: a pod of the Stratus image is the real ``stratus`` program,
a child process of the lab's kubelet (issue 19, §3).

Driven from outside as an SRE would: ``kubectl apply`` of a Namespace, a ServiceAccount, a
ConfigMap of policy files, Secrets, a PersistentVolumeClaim and a Deployment into a realtime lab
with RBAC on; then ``kubectl logs``, ``kubectl wait``, ``kubectl delete``; the playground talks
to the pod at its own address; the processes are observed in ``/proc``.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from lab.client import LabClient
from lab.cluster.clock import INSTANT, REALTIME
from lab.images import ImageSpec
from lab.runner import LabServer
from lab.slack.client import PlaygroundClient
from lab.slack.server import PlaygroundServer
from lab.slack.workspace import PlaygroundConfig
from tests.conftest import REPO

pytestmark = pytest.mark.skipif(shutil.which("kubectl") is None, reason="no kubectl on PATH")

IMAGE = "ghcr.io/stratus-ops/stratus:0.19.0-test"
NS = "stratus"
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


def wait_until(check: Callable[[], Any], timeout: float, what: str) -> Any:
    """Poll ``check`` until it answers something truthy (the machine is shared: generous)."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")
        time.sleep(0.25)


def children() -> dict[int, list[str]]:
    """This test process's live child processes and their command lines, from /proc."""
    found: dict[int, list[str]] = {}
    me = os.getpid()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            fields = stat.rsplit(")", 1)[1].split()
            if int(fields[1]) != me or fields[0] == "Z":
                continue
            argv = (entry / "cmdline").read_bytes().split(b"\0")
        except (OSError, IndexError, ValueError):
            continue
        found[int(entry.name)] = [a.decode() for a in argv if a]
    return found


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (ProcessLookupError, FileNotFoundError):
        return False
    return state != "Z"


def environ(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    return dict(item.decode().split("=", 1) for item in raw if b"=" in item)


def _hostname(pid: int) -> str:
    try:
        return environ(pid).get("HOSTNAME", "")
    except OSError:
        return ""


def serving(pod_name: str) -> int | None:
    """The pid of the ``stratus serve`` process of the pod named (its HOSTNAME)."""
    for pid, argv in children().items():
        if "serve" in argv and "cli" in argv:
            try:
                if environ(pid).get("HOSTNAME") == pod_name:
                    return pid
            except OSError:
                continue
    return None


class Kubectl:
    def __init__(self, config: Path, home: Path) -> None:
        self.env = {
            "PATH": os.environ.get("PATH", ""),
            "HOME": str(home),
            "KUBECONFIG": str(config),
            "KUBECACHEDIR": str(home / "cache"),
        }

    def run(self, *args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            ["kubectl", *args],
            input=stdin,
            capture_output=True,
            text=True,
            env=self.env,
            timeout=90,
            check=False,
        )

    def __call__(self, *args: str, stdin: str | None = None) -> str:
        result = self.run(*args, stdin=stdin)
        assert result.returncode == 0, f"kubectl {' '.join(args)}: {result.stderr}"
        return result.stdout

    def apply(self, *documents: dict[str, Any]) -> None:
        self("apply", "-f", "-", stdin=yaml.safe_dump_all(documents))

    def pod(self, name: str) -> dict[str, Any]:
        result = self.run("-n", NS, "get", "pod", name, "-o", "json")
        return json.loads(result.stdout) if result.returncode == 0 else {}

    def pods(self, selector: str) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = json.loads(
            self("-n", NS, "get", "pods", "-l", selector, "-o", "json")
        )["items"]
        return items


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


def help_pod(name: str, restart: str) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name, "namespace": NS},
        "spec": {
            "restartPolicy": restart,
            "containers": [{"name": "stratus", "image": IMAGE, "args": ["--help"]}],
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


def test_stopping_the_lab_leaves_no_process_behind(tmp_path: Path) -> None:
    # The instant clock this time: real processes run the same under either clock.
    server = LabServer(mode=INSTANT, rbac=True, state_dir=tmp_path / "state").start()
    stopped = False
    try:
        home = tmp_path / "kubectl"
        home.mkdir()
        kubectl = Kubectl(server.write_kubeconfig(home / "config"), home)
        # A long-running real process that needs nothing else: a lab of its own.
        pod = help_pod("lingering", "Always")
        pod["spec"]["containers"][0]["args"] = ["lab", "up", "--port", "0", "--app", "none",
                                                "--kubeconfig", "/tmp/lab/config"]  # fmt: skip
        pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "tmp", "mountPath": "/tmp"}]
        pod["spec"]["volumes"] = [{"name": "tmp", "emptyDir": {}}]
        # A reset of the lab (what the test suite's shared lab does between tests) ends it.
        kubectl("create", "namespace", NS)
        kubectl.apply(pod)
        first = wait_until(
            lambda: next((p for p in children() if _hostname(p) == "lingering"), None),
            60,
            "the pod's process",
        )
        LabClient(server.url).post("/lab/v1/reset")
        wait_until(lambda: not alive(first), 40, "the reset to end the process")
        kubectl("create", "namespace", NS)
        kubectl.apply(pod)
        pid = wait_until(
            lambda: next((p for p in children() if _hostname(p) == "lingering"), None),
            60,
            "the pod's process",
        )
        wait_until(
            lambda: "lab ready" in kubectl.run("-n", NS, "logs", "lingering").stdout, 60, "its log"
        )
        server.stop()
        stopped = True
        assert not alive(pid)
        assert not [p for p in children() if _hostname(p) == "lingering"]
    finally:
        if not stopped:
            server.stop()


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
        lambda: next((p for p in children() if _hostname(p) == "stubborn"), None), 10, "pid"
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
        lambda: next((p for p in children() if _hostname(p) == "stubborn-forced"), None), 60, "pid"
    )
    deployed("-n", NS, "delete", "pod", "stubborn-forced", "--grace-period=0", "--force")
    wait_until(lambda: not alive(pid), 10, "the forced kill")


def children_of(parent: int) -> list[int]:
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except (OSError, IndexError):
                continue
            if int(fields[1]) == parent and fields[0] != "Z":
                found.append(int(entry.name))
    return found


def test_sigterm_to_stratus_lab_up_stops_its_pods_processes(tmp_path: Path) -> None:
    config = tmp_path / "kubeconfig"
    env = {**os.environ, "STRATUS_HOME": str(tmp_path), "HOME": str(tmp_path)}
    lab = subprocess.Popen(
        [sys.executable, "-m", "cli", "lab", "up", "--clock", "instant", "--app", "none",
         "--kubeconfig", str(config)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env, cwd=REPO,
    )  # fmt: skip
    try:
        assert lab.stdout is not None
        assert "lab ready: " in lab.stdout.readline()
        kubectl = Kubectl(config, tmp_path)
        kubectl("create", "namespace", NS)
        pod = help_pod("lingering", "Always")
        pod["spec"]["containers"][0]["args"] = ["lab", "up", "--app", "none",
                                                "--kubeconfig", "/tmp/lab/config"]  # fmt: skip
        pod["spec"]["containers"][0]["volumeMounts"] = [{"name": "tmp", "mountPath": "/tmp"}]
        pod["spec"]["volumes"] = [{"name": "tmp", "emptyDir": {}}]
        kubectl.apply(pod)
        (grandchild,) = wait_until(lambda: children_of(lab.pid), 60, "the pod's process")
        lab.send_signal(signal.SIGTERM)
        lab.communicate(timeout=60)
        assert not alive(grandchild)
    finally:
        if lab.poll() is None:
            lab.kill()
            lab.communicate(timeout=30)
