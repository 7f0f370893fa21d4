"""A container's environment as a real kubelet and containerd build it, read from inside with
``kubectl exec … env`` and from the container's own ``env`` output: the image's ``ENV``,
``HOSTNAME``, ``PATH``, ``HOME``, the ``KUBERNETES_*`` family and the service links of the
Services that existed when the container started, with the pod's own variables winning."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.conftest import Kubectl, Lab, kubectl_for

SETUP = """
apiVersion: v1
kind: Namespace
metadata: {name: envs}
---
apiVersion: v1
kind: Service
metadata: {name: my-db, namespace: envs}
spec:
  selector: {app: db}
  ports:
  - {name: sql, port: 5432, targetPort: 5432}
  - {name: metrics-http, port: 9187, protocol: TCP}
---
apiVersion: v1
kind: Pod
metadata: {name: web, namespace: envs}
spec:
  containers:
  - name: web
    image: nginx:1.27
    env:
    - {name: NJS_VERSION, value: mine}
    - {name: GREETING, value: hi}
    - {name: DB_URL, value: "postgres://$(MY_DB_SERVICE_HOST):$(MY_DB_SERVICE_PORT)/app"}
    - {name: ECHO, value: "$(GREETING)-$$(GREETING)-$(NOPE)"}
---
apiVersion: v1
kind: Pod
metadata: {name: quiet, namespace: envs}
spec:
  enableServiceLinks: false
  hostname: box
  containers:
  - {name: pg, image: "postgres:16-alpine", env: [{name: POSTGRES_PASSWORD, value: x}]}
---
apiVersion: v1
kind: Pod
metadata: {name: printer, namespace: envs}
spec:
  restartPolicy: Never
  containers:
  - {name: main, image: busybox:1.36, command: [sh, -c, "env; echo done"]}
"""


@pytest.fixture
def kubectl(lab: Lab, tmp_path: Path) -> Kubectl:
    found = kubectl_for("system", lab, tmp_path)
    found.run("apply", "-f", "-", stdin=SETUP, namespace=None)
    lab.settle()
    return found


def _env(kubectl: Kubectl, pod: str) -> dict[str, str]:
    out = kubectl.out("exec", pod, "--", "env", namespace="envs")
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def test_the_image_env_the_kubelet_variables_and_the_pods_own(kubectl: Kubectl) -> None:
    env = _env(kubectl, "web")
    assert env["PATH"] == "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    assert env["HOSTNAME"] == "web"
    assert env["HOME"] == "/root"
    assert env["NGINX_VERSION"] == "1.27.3"
    assert env["PKG_RELEASE"] == "1~bookworm"
    assert env["NJS_VERSION"] == "mine"  # the pod's env replaces the image's
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.0.1"
    assert env["KUBERNETES_SERVICE_PORT"] == "443"
    assert env["KUBERNETES_SERVICE_PORT_HTTPS"] == "443"
    assert env["KUBERNETES_PORT"] == "tcp://10.96.0.1:443"
    assert env["KUBERNETES_PORT_443_TCP"] == "tcp://10.96.0.1:443"
    assert env["KUBERNETES_PORT_443_TCP_PROTO"] == "tcp"
    assert env["KUBERNETES_PORT_443_TCP_PORT"] == "443"
    assert env["KUBERNETES_PORT_443_TCP_ADDR"] == "10.96.0.1"
    ip = kubectl.out("get", "svc", "my-db", "-o", "jsonpath={.spec.clusterIP}", namespace="envs")
    assert env["MY_DB_SERVICE_HOST"] == ip
    assert env["MY_DB_SERVICE_PORT"] == "5432"
    assert env["MY_DB_SERVICE_PORT_SQL"] == "5432"
    assert env["MY_DB_SERVICE_PORT_METRICS_HTTP"] == "9187"
    assert env["MY_DB_PORT"] == f"tcp://{ip}:5432"
    assert env["MY_DB_PORT_9187_TCP"] == f"tcp://{ip}:9187"
    assert env["MY_DB_PORT_5432_TCP_ADDR"] == ip
    assert env["MY_DB_PORT_5432_TCP_PORT"] == "5432"
    assert env["MY_DB_PORT_5432_TCP_PROTO"] == "tcp"
    assert env["DB_URL"] == f"postgres://{ip}:5432/app"
    assert env["ECHO"] == "hi-$(GREETING)-$(NOPE)"
    printed = kubectl.out(
        "exec", "web", "--", "printenv", "GREETING", "PKG_RELEASE", namespace="envs"
    )
    assert printed == "hi\n1~bookworm\n"


def test_a_service_created_later_is_not_in_a_running_containers_env(
    kubectl: Kubectl, lab: Lab
) -> None:
    kubectl.run("create", "service", "clusterip", "late", "--tcp=80:80", namespace="envs")
    lab.settle()
    env = _env(kubectl, "web")
    assert "LATE_SERVICE_HOST" not in env
    assert "MY_DB_SERVICE_HOST" in env


def test_without_service_links_only_the_master_service_and_the_alpine_image_env(
    kubectl: Kubectl,
) -> None:
    env = _env(kubectl, "quiet")
    assert not any(name.startswith("MY_DB_") for name in env)
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.0.1"
    assert env["HOSTNAME"] == "box"  # spec.hostname names the container's host
    assert env["PGDATA"] == "/var/lib/postgresql/data"
    assert env["PG_MAJOR"] == "16"
    assert env["PG_VERSION"] == "16.4"  # the Alpine build's; Debian's is 16.4-1.pgdg120+1
    assert env["LANG"] == "en_US.utf8"
    assert "GOSU_VERSION" not in env
    assert env["POSTGRES_PASSWORD"] == "x"


def test_the_containers_own_env_prints_the_same(kubectl: Kubectl) -> None:
    logs = kubectl.out("logs", "printer", namespace="envs").splitlines()
    assert logs[-1] == "done"
    assert "KUBERNETES_SERVICE_HOST=10.96.0.1" in logs
    assert "HOSTNAME=printer" in logs
    assert any(line.startswith("MY_DB_SERVICE_HOST=10.96.") for line in logs)
