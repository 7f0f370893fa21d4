"""``kubectl exec``, ``cp`` and ``port-forward`` into the lab's containers with every kubectl of
the matrix, and the Python client's ``stream`` and ``portforward``: the command runs in the
container as the image would run it, its output and exit code come back over the protocol the
client speaks (websockets from kubectl 1.30 on and the Python client, SPDY/3.1 before, SPDY
tunnelled through a websocket for kubectl's port-forward from 1.31)."""

from __future__ import annotations

import socket
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config
from kubernetes.stream import portforward, stream

from tests.conftest import KUBECTL_ALL, Kubectl, Lab, kubectl_for

POD = """
apiVersion: v1
kind: ConfigMap
metadata: {name: settings, namespace: hotel}
data: {mode: fast, "app.conf": "port=8080\\n"}
---
apiVersion: v1
kind: Secret
metadata: {name: creds, namespace: hotel}
stringData: {password: s3cret}
---
apiVersion: v1
kind: Pod
metadata: {name: toolbox, namespace: hotel, labels: {team: sre}}
spec:
  containers:
  - name: main
    image: busybox
    command: [sh, -c, "sleep 3600"]
    env: [{name: GREETING, value: hello}]
    envFrom: [{configMapRef: {name: settings}}]
    volumeMounts:
    - {name: config, mountPath: /etc/app}
    - {name: secret, mountPath: /etc/creds, readOnly: true}
    - {name: info, mountPath: /etc/podinfo}
    - {name: scratch, mountPath: /scratch}
  - name: sidecar
    image: busybox
    command: [sh, -c, "sleep 3600"]
    volumeMounts: [{name: scratch, mountPath: /shared}]
  - name: echo
    image: hashicorp/http-echo
    args: ["-text=hi"]
  volumes:
  - {name: config, configMap: {name: settings}}
  - {name: secret, secret: {secretName: creds}}
  - name: info
    downwardAPI:
      items: [{path: labels, fieldRef: {fieldPath: metadata.labels}}]
  - {name: scratch, emptyDir: {}}
"""


@pytest.fixture(params=KUBECTL_ALL)
def kubectl(request: pytest.FixtureRequest, lab: Lab, tmp_path: Path) -> Kubectl:
    found = kubectl_for(request.param, lab, tmp_path)
    found.run("apply", "-f", "-", stdin=POD)
    lab.settle()
    return found


def _exec(kubectl: Kubectl, *args: str, stdin: str | None = None) -> Any:
    return kubectl.run("exec", *args, check=False, stdin=stdin)


def test_a_shell_runs_pipes_lists_and_exit_codes(kubectl: Kubectl) -> None:
    done = _exec(
        kubectl, "toolbox", "-c", "main", "--", "sh", "-c", "echo one two | wc -w && hostname"
    )
    assert (done.returncode, done.stdout) == (0, "2\ntoolbox\n"), done.stderr
    failed = _exec(
        kubectl, "toolbox", "-c", "main", "--", "sh", "-c", "echo out; echo err >&2; exit 3"
    )
    assert failed.returncode == 3
    assert failed.stdout == "out\n"
    assert failed.stderr == "err\ncommand terminated with exit code 3\n"
    chained = _exec(
        kubectl,
        "toolbox",
        "-c",
        "main",
        "--",
        "sh",
        "-c",
        "false || echo rescued; false && echo no",
    )
    assert (chained.returncode, chained.stdout) == (1, "rescued\n")


def test_the_container_sees_its_environment_and_volumes(kubectl: Kubectl) -> None:
    env = _exec(kubectl, "toolbox", "-c", "main", "--", "printenv", "GREETING", "mode")
    assert env.stdout == "hello\nfast\n", env.stderr
    files = _exec(
        kubectl,
        "toolbox",
        "-c",
        "main",
        "--",
        "sh",
        "-c",
        "cat /etc/app/app.conf /etc/creds/password; echo; "
        "cat /etc/podinfo/labels; echo; ls /etc/app",
    )
    assert files.stdout == 'port=8080\ns3cret\nteam="sre"\napp.conf\nmode\n', files.stderr
    readonly = _exec(kubectl, "toolbox", "-c", "main", "--", "sh", "-c", "echo x > /etc/creds/y")
    assert readonly.returncode == 1
    assert "can't create /etc/creds/y: Read-only file system" in readonly.stderr


def test_an_empty_dir_is_shared_by_the_containers_of_the_pod(kubectl: Kubectl) -> None:
    wrote = _exec(kubectl, "toolbox", "-c", "main", "--", "sh", "-c", "echo ready > /scratch/flag")
    assert wrote.returncode == 0, wrote.stderr
    read = _exec(kubectl, "toolbox", "-c", "sidecar", "--", "cat", "/shared/flag")
    assert (read.returncode, read.stdout) == (0, "ready\n"), read.stderr


def test_stdin_feeds_an_interactive_shell_and_cat(kubectl: Kubectl) -> None:
    shell = _exec(kubectl, "-i", "toolbox", "-c", "main", "--", "sh", stdin="echo hi\nexit 4\n")
    assert (shell.returncode, shell.stdout) == (4, "hi\n"), shell.stderr
    echoed = _exec(kubectl, "-i", "toolbox", "-c", "main", "--", "cat", stdin="line one\n")
    assert (echoed.returncode, echoed.stdout) == (0, "line one\n")


def test_an_image_without_a_shell_fails_as_the_runtime_does(kubectl: Kubectl) -> None:
    refused = _exec(kubectl, "toolbox", "-c", "echo", "--", "sh", "-c", "ls")
    assert refused.returncode == 1
    assert refused.stderr.startswith(
        "error: Internal error occurred: error executing command in container: failed to exec "
        'in container: failed to start exec "'
    )
    assert refused.stderr.rstrip().endswith(
        'OCI runtime exec failed: exec failed: unable to start container process: exec: "sh": '
        "executable file not found in $PATH: unknown"
    )
    missing = _exec(kubectl, "toolbox", "-c", "main", "--", "nosuch")
    assert 'exec: "nosuch": executable file not found in $PATH' in missing.stderr


def test_a_container_that_is_not_running_is_not_found_by_the_kubelet(kubectl: Kubectl) -> None:
    kubectl.run("run", "crasher", "--image=busybox", "--", "sh", "-c", "exit 1")
    refused = _exec(kubectl, "crasher", "--", "ls")
    assert refused.returncode == 1
    assert 'error: unable to upgrade connection: container not found ("crasher")' in refused.stderr


def test_cp_copies_files_both_ways_through_tar(kubectl: Kubectl, tmp_path: Path) -> None:
    source = tmp_path / "note.txt"
    source.write_text("from the laptop\n")
    sent = kubectl.run("cp", str(source), "toolbox:/tmp/note.txt", "-c", "main", check=False)
    assert sent.returncode == 0, sent.stderr
    assert _exec(kubectl, "toolbox", "-c", "main", "--", "cat", "/tmp/note.txt").stdout == (
        "from the laptop\n"
    )
    back = tmp_path / "conf"
    fetched = kubectl.run("cp", "toolbox:/etc/app/app.conf", str(back), "-c", "main", check=False)
    assert fetched.returncode == 0, fetched.stderr
    assert back.read_text() == "port=8080\n"


def test_port_forward_reaches_the_modeled_server_and_reports_a_closed_port(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    kubectl.run("run", "pf-web", "--image=nginx", "--restart=Never")
    port, closed = _free_port(), _free_port()
    log = (tmp_path / "forward.log").open("w")
    forward = subprocess.Popen(
        [
            kubectl.binary,
            "-n",
            "hotel",
            "port-forward",
            "pod/pf-web",
            f"{port}:80",
            f"{closed}:81",
        ],
        env=kubectl.env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    try:
        page = _get(f"http://127.0.0.1:{port}/")
        assert "<h1>Welcome to nginx!</h1>" in page
        assert "<h1>Welcome to nginx!</h1>" in _get(f"http://127.0.0.1:{port}/")  # a second one
        with pytest.raises(OSError):
            _get(f"http://127.0.0.1:{closed}/")
        # kubectl prints the kubelet's error (and from 1.29 on ends: "lost connection to pod").
        refused = "dial tcp4 127.0.0.1:81: connect: connection refused"
        for _ in range(50):
            if refused in (tmp_path / "forward.log").read_text():
                break
            time.sleep(0.1)
    finally:
        forward.terminate()
        forward.wait(timeout=10)
        log.close()
    output = (tmp_path / "forward.log").read_text()
    assert f"Forwarding from 127.0.0.1:{port} -> 80" in output
    assert f"an error occurred forwarding {closed} -> 81: error forwarding port 81" in output
    assert refused in output, output


def test_attach_follows_the_container_until_it_stops(kubectl: Kubectl) -> None:
    kubectl.run("run", "attached", "--image=busybox", "--restart=Never", "--", "sleep", "3600")
    attach = subprocess.Popen(
        [kubectl.binary, "-n", "hotel", "attach", "attached"],
        env=kubectl.env,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
        text=True,
    )
    try:
        time.sleep(1.5)
        assert attach.poll() is None, attach.communicate()  # attached, waiting for output
        kubectl.run("delete", "pod", "attached", "--wait=false")
        output, _ = attach.communicate(timeout=10)
    finally:
        if attach.poll() is None:
            attach.kill()
            attach.wait()
    assert attach.returncode == 0, output
    assert "If you don't see a command prompt, try pressing enter." in output


def _free_port() -> int:
    """A port free on both families (kubectl listens on both); another process may hold the
    IPv4 side of a free IPv6 port, so a few are tried."""
    for _ in range(20):
        with socket.socket(socket.AF_INET6) as probe:
            probe.bind(("::1", 0))
            port = int(probe.getsockname()[1])
        with socket.socket() as probe:
            try:
                probe.bind(("127.0.0.1", port))
            except OSError:
                continue
        return port
    raise AssertionError("no port is free on both ::1 and 127.0.0.1")


def _get(url: str) -> str:
    for _ in range(50):  # kubectl listens a moment after it starts
        try:
            with urllib.request.urlopen(url, timeout=5) as answer:
                return str(answer.read().decode())
        except urllib.error.URLError as error:
            if not isinstance(error.reason, ConnectionRefusedError):
                raise
            time.sleep(0.1)
    raise OSError(f"nothing listens at {url}")


# ------------------------------------------------------------------ the Python client


@pytest.fixture
def core(lab: Lab) -> Any:
    configuration = client.Configuration()
    config.load_kube_config(config_file=str(lab.kubeconfig), client_configuration=configuration)
    with client.ApiClient(configuration) as api_client:
        api = client.CoreV1Api(api_client)
        api.create_namespaced_pod(
            "hotel",
            {
                "metadata": {"name": "py-box"},
                "spec": {
                    "containers": [{"name": "c", "image": "busybox", "args": ["sleep", "1d"]}]
                },
            },
        )
        lab.settle()
        yield api


def _stream(core: Any, command: list[str]) -> Any:
    # Not preloaded, so the test can close the socket (the preloaded form leaves it open).
    return stream(
        core.connect_get_namespaced_pod_exec,
        "py-box",
        "hotel",
        command=command,
        stderr=True,
        stdin=False,
        stdout=True,
        tty=False,
        _preload_content=False,
    )


def test_python_client_stream_gets_output_and_the_exit_status(core: Any) -> None:
    listing = _stream(core, ["sh", "-c", "for i in $(seq 1 3); do echo line $i; done"])
    failing = _stream(core, ["sh", "-c", "echo oops >&2; exit 7"])
    try:
        listing.run_forever(timeout=10)
        assert listing.read_stdout() == "line 1\nline 2\nline 3\n"
        assert listing.returncode == 0
        failing.run_forever(timeout=10)
        assert failing.read_stderr() == "oops\n"
        assert failing.returncode == 7
    finally:
        for session in (listing, failing):
            # After the server's close frame websocket-client's close() sends nothing and so
            # never shuts the socket (as against any cluster); shutdown() does.
            session.close()
            session.sock.shutdown()


def test_python_client_port_forward_gets_an_answer_or_the_kubelets_refusal(
    core: Any, lab: Lab
) -> None:
    core.create_namespaced_pod(
        "hotel",
        {"metadata": {"name": "py-web"}, "spec": {"containers": [{"name": "c", "image": "nginx"}]}},
    )
    lab.settle()
    forward = portforward(
        core.connect_get_namespaced_pod_portforward, "py-web", "hotel", ports="80"
    )
    refused = portforward(
        core.connect_get_namespaced_pod_portforward, "py-web", "hotel", ports="81"
    )
    try:
        conn = forward.socket(80)
        conn.settimeout(5)
        conn.sendall(b"GET / HTTP/1.1\r\nHost: py-web\r\nConnection: close\r\n\r\n")
        answer = b""
        while b"</html>" not in answer and (chunk := conn.recv(65536)):
            answer += chunk
        assert answer.startswith(b"HTTP/1.1 200 OK\r\n")
        assert b"<h1>Welcome to nginx!</h1>" in answer
        for _ in range(50):
            if refused.error(81) is not None:
                break
            time.sleep(0.1)
        assert "dial tcp4 127.0.0.1:81: connect: connection refused" in (refused.error(81) or "")
    finally:
        forward.close()
        refused.close()


def test_wget_curl_and_nslookup_see_services_through_their_ready_endpoints(
    lab: Lab, tmp_path: Path
) -> None:
    kubectl = kubectl_for("system", lab, tmp_path)
    kubectl.run("apply", "-f", "-", stdin=POD)
    kubectl.run("run", "curler", "--image=curlimages/curl", "--restart=Never", "--", "sleep", "1d")
    lab.settle()
    box = ("toolbox", "-c", "main", "--")
    page = _exec(kubectl, *box, "wget", "-qO-", "http://geo:8083/")
    assert (page.returncode, page.stdout) == (
        0,
        "<html><body><h1>It works!</h1><p>GET /</p></body></html>\n",
    )
    named = _exec(kubectl, *box, "nslookup", "geo")
    assert "Name:\tgeo.hotel.svc.cluster.local\nAddress: 10.96." in named.stdout
    missing = _exec(kubectl, *box, "nslookup", "nosuch")
    assert missing.returncode == 1
    assert "** server can't find nosuch.hotel.svc.cluster.local: NXDOMAIN" in missing.stdout
    unknown = _exec(kubectl, *box, "wget", "-qO-", "http://nosuch/")
    assert (unknown.returncode, unknown.stderr) == (
        1,
        "wget: bad address 'nosuch'\ncommand terminated with exit code 1\n",
    )
    code = _exec(
        kubectl,
        "curler",
        "--",
        "curl",
        "-s",
        "-o",
        "/dev/null",
        "-w",
        "%{http_code}",
        "http://geo.hotel.svc.cluster.local:8083/",
    )
    assert code.stdout == "200"
    assert "executable file not found" in _exec(kubectl, *box, "curl", "http://geo:8083/").stderr

    kubectl.run("scale", "deploy", "geo", "--replicas=0")
    lab.settle()
    refused = _exec(kubectl, *box, "wget", "-qO-", "http://geo:8083/")
    assert refused.returncode == 1
    assert refused.stderr.startswith("wget: can't connect to remote host (10.96.")
    assert "Connection refused" in refused.stderr
    curled = _exec(kubectl, "curler", "--", "curl", "-sS", "http://geo:8083/")
    assert curled.returncode == 7
    assert "curl: (7) Failed to connect to geo port 8083" in curled.stderr
