"""A credential-named environment variable's value never reaches an outside agent: an outside
tester read ``DB_PASSWORD``'s value back from ``recent_changes`` (the name and the value were
on two lines of the diff, which no pattern over text pairs), and a container that prints its
environment leaked ``DB_PASSWORD=…`` through ``logs`` (``_`` before ``PASSWORD`` hid it from
the ``password=…`` pattern)."""

from __future__ import annotations

from typing import Any

import pytest

from tests.conftest import Lab
from tests.gateway.conftest import TOKENS, body, connect
from tools.k8s import KubeClient
from tools.objects import ObjectRef, secret_digest

pytestmark = pytest.mark.asyncio


def _set_env(lab: Lab, kube: KubeClient, env: list[dict[str, Any]]) -> None:
    deployment = kube.get(ObjectRef("Deployment", "geo", "hotel"))
    deployment["spec"]["template"]["spec"]["containers"][0]["env"] = env
    kube.replace(deployment)
    lab.settle()


async def test_recent_changes_shows_credential_values_as_digests(
    lab: Lab, kube: KubeClient, mcp_url: str
) -> None:
    _set_env(lab, kube, [{"name": "DB_PASSWORD", "value": "hunter2"}])
    _set_env(
        lab,
        kube,
        [
            {"name": "DB_PASSWORD", "value": "hunter3"},
            {"name": "AWS_SECRET_ACCESS_KEY", "value": "wJalrXUtnFEMIK7MDENG"},
            {"name": "LOG_LEVEL", "value": "debug"},
            {"name": "API_TOKEN", "valueFrom": {"secretKeyRef": {"name": "api", "key": "t"}}},
        ],
    )
    async with connect(mcp_url, TOKENS["claude"]) as mcp:
        read = body(
            await mcp.call_tool("recent_changes", {"namespace": "hotel", "deployment": "geo"})
        )
    for secret in ("hunter2", "hunter3", "wJalrXUtnFEMIK7MDENG"):
        assert secret not in read, read
    assert "DB_PASSWORD" in read and "AWS_SECRET_ACCESS_KEY" in read
    assert secret_digest("hunter2") in read and secret_digest("hunter3") in read


async def test_events_say_which_credential_and_never_its_value(
    lab: Lab, kube: KubeClient, mcp_url: str
) -> None:
    """Cluster text (events, logs, a pod's status message) is redacted as text: a credential's
    name inside a longer one (``DB_PASSWORD=…``) was missed by the ``password=…`` pattern."""
    kube.create(
        {
            "apiVersion": "v1",
            "kind": "Event",
            "metadata": {"name": "geo.leak", "namespace": "hotel"},
            "involvedObject": {"kind": "Pod", "name": "geo-0", "namespace": "hotel"},
            "type": "Warning",
            "reason": "BadConfig",
            "message": "started with DB_PASSWORD=hunter2 AWS_SECRET_ACCESS_KEY: wJalrXUtnFEMIK7",
            "count": 1,
        }
    )
    async with connect(mcp_url, TOKENS["claude"]) as mcp:
        read = body(await mcp.call_tool("events", {"namespace": "hotel", "object_name": "geo-0"}))
    assert "BadConfig" in read and "DB_PASSWORD=" in read
    assert "hunter2" not in read and "wJalrXUtnFEMIK7" not in read, read
