"""The pure parts behind a container's environment, its downward API and its memory: Go's
quoting of the labels file, the kubelet's rounding of resources, each image's ENV by tag, the
environment's precedence, and what a shell command holds at its peak."""

from __future__ import annotations

from typing import Any

import pytest

from lab.cluster_sim import Cluster, default_catalog
from lab.controllers import container_env, downward_api, script_memory
from lab.image_env import image_environment

MIB = 1024 * 1024


def test_go_quote_escapes_as_strconv_quote() -> None:
    assert downward_api.go_quote("plain") == '"plain"'
    assert downward_api.go_quote('say "hi"\\') == '"say \\"hi\\"\\\\"'
    assert downward_api.go_quote("a\nb\tc\x00\x7f") == '"a\\nb\\tc\\x00\\x7f"'
    assert downward_api.go_quote("café ✓") == '"café ✓"'
    assert downward_api.go_quote("\u0085") == '"\\u0085"'
    assert downward_api.format_map({"b": "2", "a": "1"}) == 'a="1"\nb="2"'
    assert downward_api.format_map({}) == ""


def _pod(resources: dict[str, Any]) -> dict[str, Any]:
    return {
        "metadata": {"name": "p", "namespace": "n", "uid": "u"},
        "spec": {"containers": [{"name": "c", "resources": resources}]},
    }


@pytest.mark.parametrize(
    ("resources", "resource", "divisor", "value"),
    [
        ({"limits": {"memory": "64Mi"}}, "limits.memory", "1Mi", "64"),
        ({"limits": {"memory": "64Mi"}}, "limits.memory", None, str(64 * MIB)),
        ({"limits": {"memory": "100M"}}, "limits.memory", "1Mi", "96"),  # 95.4, rounded up
        ({"limits": {"cpu": "100m"}}, "limits.cpu", None, "1"),
        ({"limits": {"cpu": "1500m"}}, "limits.cpu", "1m", "1500"),
        ({"limits": {"cpu": "2"}}, "limits.cpu", "500m", "4"),
        ({"limits": {"memory": "1Gi"}}, "requests.memory", "1Mi", "1024"),  # defaults to limit
        ({"requests": {"cpu": "250m"}}, "requests.cpu", "1m", "250"),
        ({}, "requests.cpu", None, "0"),
        ({}, "limits.memory", "1Mi", "7600"),  # the node's allocatable
        ({}, "limits.cpu", None, "4"),  # 3800m of allocatable, in whole cores
    ],
)
def test_resource_field_refs_round_up_like_the_kubelet(
    resources: dict[str, Any], resource: str, divisor: str | None, value: str
) -> None:
    ref = {"resource": resource, **({"divisor": divisor} if divisor else {})}
    allocatable = {"cpu": "3800m", "memory": "7600Mi"}
    assert downward_api.resource_value(_pod(resources), "c", ref, allocatable) == value


def test_field_values_and_the_kubelets_own_annotations() -> None:
    pod = {
        "metadata": {
            "name": "p",
            "namespace": "n",
            "uid": "0a1b",
            "labels": {"app": "x"},
            "annotations": {"a": "1"},
            "creationTimestamp": "2026-01-01T00:00:00Z",
        },
        "spec": {"nodeName": "node-1"},
        "status": {"podIP": "10.244.0.5", "hostIP": "10.0.0.2"},
    }
    assert downward_api.field_value(pod, "metadata.labels['app']") == "x"
    assert downward_api.field_value(pod, "metadata.labels['nope']") == ""
    assert downward_api.field_value(pod, "status.hostIP") == "10.0.0.2"
    assert downward_api.field_value(pod, "status.podIP", pod_ip="10.244.0.9") == "10.244.0.9"
    assert downward_api.field_value(pod, "spec.serviceAccountName") == "default"
    lines = downward_api.field_value(pod, "metadata.annotations").splitlines()
    assert lines[0] == 'a="1"'
    assert lines[1].startswith('kubernetes.io/config.seen="2026-01-01T00:00:00.')
    assert lines[2] == 'kubernetes.io/config.source="api"'


@pytest.mark.parametrize(
    ("image", "expected"),
    [
        ("nginx", {"NGINX_VERSION": "1.27.3", "PKG_RELEASE": "1~bookworm"}),
        ("nginx:1.27-alpine", {"NGINX_VERSION": "1.27.3", "PKG_RELEASE": "1"}),
        ("docker.io/library/nginx:1.26.2", {"NGINX_VERSION": "1.26.2", "NJS_VERSION": "0.8.5"}),
        ("postgres:16", {"PGDATA": "/var/lib/postgresql/data", "PG_VERSION": "16.4-1.pgdg120+1"}),
        ("postgres:17-alpine", {"PG_MAJOR": "17", "PG_VERSION": "17.2"}),
        ("redis:7.2", {"REDIS_VERSION": "7.2.4", "GOSU_VERSION": "1.17"}),
        ("python:3.12-slim", {"PYTHON_VERSION": "3.12.8", "LANG": "C.UTF-8"}),
    ],
)
def test_each_image_has_its_dockerfiles_env(image: str, expected: dict[str, str]) -> None:
    env = image_environment(default_catalog(), image)
    assert env["PATH"].startswith("/")
    assert {key: env.get(key) for key in expected} == expected


@pytest.mark.parametrize(
    ("image", "variable"),
    [
        ("nginx", "NGINX_VERSION"),
        ("redis", "REDIS_VERSION"),
        ("httpd", "HTTPD_VERSION"),
        ("python", "PYTHON_VERSION"),
        ("node", "NODE_VERSION"),
        ("golang", "GOLANG_VERSION"),
        ("memcached", "MEMCACHED_VERSION"),
    ],
)
def test_the_env_names_the_release_the_catalog_runs(image: str, variable: str) -> None:
    # One source for a tag's release (ImageSpec.version_of, which `nginx -v` and the logs
    # use too): the Dockerfile's variable never names another.
    catalog = default_catalog()
    spec, _ = catalog.lookup(image)
    assert spec is not None and spec.version
    for release in [spec.version, *spec.versions]:
        line = ".".join(release.split(".")[:2])
        for tag in (release, line, f"{line}-alpine"):
            env = image_environment(catalog, f"{image}:{tag}")
            assert env[variable] == spec.version_of(tag), (image, tag)
    assert image_environment(catalog, image)[variable] == spec.version


def test_an_image_without_env_lines_has_the_default_path_and_an_unknown_one_nothing() -> None:
    catalog = default_catalog()
    assert image_environment(catalog, "busybox:1.36") == {
        "PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
    }
    assert image_environment(catalog, "registry.example.com/app:1") == {}
    assert "GOSU_VERSION" not in image_environment(catalog, "redis:7-alpine")


def test_the_environment_precedence_on_an_in_process_cluster() -> None:
    cluster = Cluster()
    cluster.store.create(
        "services",
        {
            "metadata": {"name": "cache-1", "namespace": "default"},
            "spec": {"clusterIP": "10.96.0.50", "ports": [{"port": 6379, "protocol": "TCP"}]},
        },
    )
    pod = {
        "metadata": {"name": "p", "namespace": "default"},
        "spec": {"containers": [{"name": "c", "image": "nginx:1.27"}]},
    }
    container = {
        "name": "c",
        "image": "nginx:1.27",
        "env": [{"name": "URL", "value": "redis://$(CACHE_1_SERVICE_HOST)"}],
    }
    configured = {"URL": "redis://$(CACHE_1_SERVICE_HOST)", "CACHE_1_PORT": "mine"}
    env = container_env.build(cluster.store, cluster.images, pod, container, configured)
    assert list(env)[:3] == ["PATH", "HOSTNAME", "NGINX_VERSION"]
    assert list(env)[-1] == "HOME"
    assert env["URL"] == "redis://10.96.0.50"
    assert env["CACHE_1_PORT"] == "mine"  # the pod's variable wins over the service link
    assert env["CACHE_1_PORT_6379_TCP"] == "tcp://10.96.0.50:6379"
    assert env["KUBERNETES_SERVICE_HOST"] == "10.96.0.1"
    pod["spec"]["enableServiceLinks"] = False
    quiet = container_env.build(cluster.store, cluster.images, pod, container, {})
    assert "CACHE_1_SERVICE_HOST" not in quiet and "KUBERNETES_PORT" in quiet


@pytest.mark.parametrize(
    ("script", "mib"),
    [
        ("head -c 50m /dev/zero | tail > /dev/null; echo alloc-ok; sleep 3600", 50),
        ("head -c50m /dev/zero | tail -n 1 2>&1", 50),
        ("head -c 50m /dev/zero | wc -c", 0),  # streamed
        ("head -c 50m /dev/urandom | tail", 0),  # random bytes have newlines
        ("cat /dev/zero | head -c 10M | sort >/dev/null", 10),
        ("yes | head -c 1G | tail", 0),
        ("dd if=/dev/zero of=/dev/null bs=64M count=1", 64),
        ("head -c 20m /dev/zero | tail -c 5m", 5),
        ("sleep 10 && head -c 30m /dev/zero | tail || true", 30),
        ("tail -f /dev/null", 0),
        ("echo 'unbalanced", 0),
    ],
)
def test_what_a_shell_command_holds_at_its_peak(script: str, mib: float) -> None:
    assert script_memory.peak_bytes(["sh", "-c", script]) == mib * MIB


def test_a_command_run_directly_is_read_as_its_words() -> None:
    assert script_memory.peak_bytes(["dd", "if=/dev/zero", "of=/dev/null", "bs=8M"]) == 8 * MIB
    assert script_memory.peak_bytes(["sleep", "3600"]) == 0
