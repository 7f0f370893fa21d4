"""When Stratus takes the in-cluster configuration, and how its token file is followed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tools import incluster

POD = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


@pytest.mark.parametrize(
    ("kubeconfig", "env", "default_exists", "expected"),
    [
        (None, POD, False, True),
        ("/k", POD, False, False),
        (None, {**POD, "KUBECONFIG": "/k"}, False, False),
        (None, POD, True, False),
        (None, {"KUBERNETES_SERVICE_HOST": "10.96.0.1"}, False, False),
        (None, {**POD, "KUBERNETES_SERVICE_PORT": " "}, False, False),
        (None, {}, False, False),
    ],
)
def test_in_cluster_only_when_no_kubeconfig_and_the_service_variables(
    kubeconfig: str | None, env: dict[str, str], default_exists: bool, expected: bool
) -> None:
    chosen = incluster.chosen(
        kubeconfig=kubeconfig, env=env, default_kubeconfig_exists=default_exists
    )
    assert chosen is expected


def test_the_server_url_and_the_account_dir() -> None:
    assert incluster.server_url(POD) == "https://10.96.0.1:443"
    assert incluster.server_url({**POD, "KUBERNETES_SERVICE_HOST": "fd00::1"}) == (
        "https://[fd00::1]:443"
    )
    assert incluster.account_dir({}) == incluster.DEFAULT_DIR
    assert incluster.account_dir({"STRATUS_SERVICEACCOUNT_DIR": "/sa"}) == Path("/sa")
    with pytest.raises(incluster.InClusterError, match="KUBERNETES_SERVICE_PORT"):
        incluster.server_url({"KUBERNETES_SERVICE_HOST": "h"})


def test_the_namespace_file(tmp_path: Path) -> None:
    assert incluster.namespace(tmp_path) == "default"
    (tmp_path / "namespace").write_text("ops\n")
    assert incluster.namespace(tmp_path) == "ops"


def test_the_token_is_read_again_when_the_file_changes_and_only_then(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text("one\n")
    token = incluster.RotatingToken(path)
    assert token.current() == "one"
    assert token.current() == "one" and token.reads == 1
    swapped = tmp_path / "token.new"
    swapped.write_text("two")
    os.replace(swapped, path)
    assert token.current() == "two" and token.reads == 2
    # Mid-swap the file may be missing for an instant: the last token stays.
    path.unlink()
    assert token.current() == "two"
    path.write_text("")
    assert token.current() == "two"


def test_a_token_is_read_again_after_the_period_even_if_the_file_looks_the_same(
    tmp_path: Path,
) -> None:
    path = tmp_path / "token"
    path.write_text("one")
    token = incluster.RotatingToken(path, reread_seconds=0.0)
    token.current()
    assert token.reads == 2
