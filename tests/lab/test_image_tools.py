"""The programs public images ship, inside ``kubectl exec``: ``nginx -v`` and ``httpd -v`` at
the version the image's tag runs, ``redis-cli`` against the pod's own server and a redis
Service (what one ``set`` stores another ``get`` reads), ``pg_isready`` and ``psql`` with the
real clients' output and failures; images that do not ship a program do not have it."""

from __future__ import annotations

import socket
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from lab.cluster_sim import default_catalog
from tests.conftest import Kubectl, Lab, kubectl_for

PODS = """
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: hotel}
spec:
  containers: [{name: nginx, image: "nginx:1.25-alpine"}]
---
apiVersion: v1
kind: Pod
metadata: {name: apache, namespace: hotel}
spec:
  containers: [{name: httpd, image: "httpd:2.4"}]
---
apiVersion: v1
kind: Pod
metadata: {name: cache, namespace: hotel, labels: {app: cache}}
spec:
  containers: [{name: redis, image: "redis:7.2"}]
---
apiVersion: v1
kind: Pod
metadata: {name: redis-client, namespace: hotel}
spec:
  containers: [{name: redis, image: "redis:7.2", command: [sleep, "3600"]}]
---
apiVersion: v1
kind: Pod
metadata: {name: db, namespace: hotel, labels: {app: db}}
spec:
  containers:
  - {name: postgres, image: "postgres:16", env: [{name: POSTGRES_PASSWORD, value: pw}]}
---
apiVersion: v1
kind: Pod
metadata: {name: pg-client, namespace: hotel}
spec:
  containers:
  - name: psql
    image: "postgres:16"
    command: [sleep, "3600"]
    env: [{name: PGPASSWORD, value: pw}]
---
apiVersion: v1
kind: Pod
metadata: {name: box, namespace: hotel}
spec:
  containers: [{name: sh, image: "busybox:1.36", command: [sleep, "3600"]}]
"""


@pytest.fixture
def kubectl(lab: Lab, tmp_path: Path) -> Kubectl:
    found = kubectl_for("system", lab, tmp_path)
    found.run("apply", "-f", "-", stdin=PODS)
    found.run("expose", "pod", "cache", "--name=redis", "--port=6379")
    found.run("expose", "pod", "db", "--name=pg", "--port=5432")
    lab.settle()
    return found


def _exec(kubectl: Kubectl, pod: str, *argv: str) -> Any:
    return kubectl.run("exec", pod, "--", *argv, check=False)


def test_servers_print_the_version_their_tag_runs(kubectl: Kubectl) -> None:
    version = _exec(kubectl, "web", "nginx", "-v")
    assert (version.returncode, version.stdout) == (0, "")
    assert version.stderr == "nginx version: nginx/1.25.5\n"  # to stderr, as nginx prints it
    test = _exec(kubectl, "web", "nginx", "-t")
    assert "nginx: configuration file /etc/nginx/nginx.conf test is successful" in test.stderr
    apache = _exec(kubectl, "apache", "httpd", "-v")
    assert apache.stdout.startswith("Server version: Apache/2.4.62 (Unix)\n")
    assert _exec(kubectl, "cache", "redis-server", "--version").stdout.startswith(
        "Redis server v=7.2.4 "
    )


def test_redis_cli_talks_to_its_own_server_and_to_a_service(kubectl: Kubectl) -> None:
    assert _exec(kubectl, "cache", "redis-cli", "ping").stdout == "PONG\n"
    stored = _exec(kubectl, "redis-client", "redis-cli", "-h", "redis", "set", "greeting", "hi")
    assert stored.stdout == "OK\n"
    assert _exec(kubectl, "cache", "redis-cli", "get", "greeting").stdout == "hi\n"
    assert _exec(kubectl, "cache", "redis-cli", "get", "nothing").stdout == "\n"  # raw: no tty
    assert _exec(kubectl, "redis-client", "redis-cli", "-h", "redis", "incr", "n").stdout == "1\n"
    # The client pod runs sleep: nothing of its own listens on 6379.
    local = _exec(kubectl, "redis-client", "redis-cli", "ping")
    assert local.stderr.startswith(
        "Could not connect to Redis at 127.0.0.1:6379: Connection refused\n"
    )
    unknown = _exec(kubectl, "redis-client", "redis-cli", "-h", "nosuch", "ping")
    assert unknown.returncode == 1
    assert "Could not connect to Redis at nosuch:6379: Name or service not known\n" in (
        unknown.stderr
    )


def test_redis_answers_resp_through_port_forward_with_the_same_keys(
    kubectl: Kubectl, tmp_path: Path
) -> None:
    _exec(kubectl, "cache", "redis-cli", "set", "greeting", "hi")
    port = _free_port()
    log = (tmp_path / "forward.log").open("w")
    forward = subprocess.Popen(
        [kubectl.binary, "-n", "hotel", "port-forward", "svc/redis", f"{port}:6379"],
        env=kubectl.env,
        stdout=log,
        stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL,
    )
    try:
        conn = _connect(port)
        conn.sendall(b"*1\r\n$4\r\nPING\r\n*2\r\n$3\r\nGET\r\n$8\r\ngreeting\r\n")
        assert _read(conn, b"hi\r\n") == b"+PONG\r\n$2\r\nhi\r\n"
        conn.sendall(b"SET from-host yes\r\nGET nothing\r\n")  # inline, as nc sends it
        assert _read(conn, b"$-1\r\n") == b"+OK\r\n$-1\r\n"
        conn.close()
    finally:
        forward.terminate()
        forward.wait(timeout=10)
        log.close()
    assert _exec(kubectl, "cache", "redis-cli", "get", "from-host").stdout == "yes\n"


def _free_port() -> int:
    with socket.socket(socket.AF_INET6) as probe:  # kubectl listens on both families
        probe.bind(("::1", 0))
        port = int(probe.getsockname()[1])
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", port))
    return port


def _connect(port: int) -> socket.socket:
    for _ in range(50):  # kubectl listens a moment after it starts
        try:
            conn = socket.create_connection(("127.0.0.1", port), timeout=5)
        except ConnectionRefusedError:
            time.sleep(0.1)
            continue
        return conn
    raise OSError(f"nothing listens on {port}")


def _read(conn: socket.socket, end: bytes) -> bytes:
    answer = b""
    while not answer.endswith(end) and (chunk := conn.recv(65536)):
        answer += chunk
    return answer


def test_postgres_clients_report_the_server_as_the_real_ones_do(kubectl: Kubectl) -> None:
    ready = _exec(kubectl, "db", "pg_isready")
    assert (ready.returncode, ready.stdout) == (
        0,
        "/var/run/postgresql:5432 - accepting connections\n",
    )
    remote = _exec(kubectl, "pg-client", "pg_isready", "-h", "pg")
    assert remote.stdout == "pg:5432 - accepting connections\n"
    nobody = _exec(kubectl, "pg-client", "pg_isready")
    # stderr in the message: a full run once saw exit 2 with no output, which never reproduced
    assert (nobody.returncode, nobody.stdout) == (
        2,
        "/var/run/postgresql:5432 - no response\n",
    ), nobody.stderr
    one = _exec(kubectl, "db", "psql", "-U", "postgres", "-c", "select 1")
    assert one.stdout == " ?column? \n----------\n        1\n(1 row)\n\n"
    assert _exec(kubectl, "pg-client", "psql", "-h", "pg", "-tAc", "select 1").stdout == "1\n"
    named = _exec(kubectl, "db", "psql", "-c", "SELECT 42 AS answer").stdout
    assert named == " answer \n--------\n     42\n(1 row)\n\n"
    script = kubectl.run(
        "exec",
        "-i",
        "db",
        "--",
        "psql",
        "-tA",
        stdin="select 1;\nselect 'two'\n;\n\\q\n",
        check=False,
    )
    assert (script.returncode, script.stdout) == (0, "1\ntwo\n")
    unauthenticated = _exec(
        kubectl, "pg-client", "sh", "-c", "PGPASSWORD=wrong psql -h pg -c 'select 1'"
    )
    assert unauthenticated.returncode == 2
    assert 'FATAL:  password authentication failed for user "postgres"' in unauthenticated.stderr


def test_images_without_a_program_do_not_have_it(kubectl: Kubectl) -> None:
    in_script = _exec(kubectl, "box", "sh", "-c", "redis-cli ping")
    assert (in_script.returncode, in_script.stderr) == (
        127,
        "sh: redis-cli: not found\ncommand terminated with exit code 127\n",
    )
    assert _exec(kubectl, "web", "sh", "-c", "psql -c 'select 1'").returncode == 127
    direct = _exec(kubectl, "box", "nginx", "-v")
    assert 'exec: "nginx": executable file not found in $PATH' in direct.stderr


def test_a_tags_version_comes_from_its_release_line() -> None:
    catalog = default_catalog()
    for reference, version in [
        ("nginx:1.27-alpine", "1.27.3"),
        ("nginx:1.25", "1.25.5"),
        ("nginx:1.27.1", "1.27.1"),
        ("nginx:latest", "1.27.3"),
        ("redis:6", "6.2.16"),
        ("postgres:15-bookworm", "15.8"),
    ]:
        image, _ = catalog.lookup(reference)
        assert image is not None
        assert image.version_of(reference.split(":", 1)[1]) == version, reference
