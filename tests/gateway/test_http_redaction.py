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
    # Without STRATUS_AUDIT_KEY a digest is a bare SHA-256 prefix an agent could test guesses
    # against (an outside tester matched a weak password): agents get none.
    assert secret_digest("hunter2") not in read and secret_digest("hunter3") not in read
    assert read.count("sha256:(hidden") >= 2, read


async def test_one_word_credential_names_and_urls_with_passwords_are_hidden(
    lab: Lab, kube: KubeClient, mcp_url: str
) -> None:
    """The outside tester's second list: names the word rule missed, and a password inside a
    URL, whatever the variable's name."""
    leaks = {
        "PGPASSWORD": "leak-pg-1",
        "SIGNINGKEY": "leak-sign-2",
        "PRIVATE_KEY_PEM": "leak-pem-3",
        "GITHUB_PAT": "leak-pat-4",
        "BEARER": "leak-bearer-5",
        "REDIS_URL": "redis://app:leak-url-6@redis:6379/0",
        "NOTES": "ghp_abcdefghijklmnopqrstuvwxyz012345",
    }
    _set_env(lab, kube, [{"name": "LOG_LEVEL", "value": "info"}])
    async with connect(mcp_url, TOKENS["claude"]) as mcp:
        # One variable per rollout: a read's answer is bounded, and each must be seen.
        for name, value in leaks.items():
            _set_env(lab, kube, [{"name": name, "value": value}])
            read = body(
                await mcp.call_tool("recent_changes", {"namespace": "hotel", "deployment": "geo"})
            )
            assert f"name: {name}" in read, read
            secret = value.split(":")[-2].split("@")[0] if "://" in value else value[:12]
            assert secret not in read, (name, read)
