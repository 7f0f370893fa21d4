"""No value of a Secret is stored by Stratus: after a restore-secret-key and its undo, neither
value (the drifted one and the restored one), in plain text or base64, is anywhere in the
database, its write-ahead log or the audit anchor — and the undo still puts the drifted value
back exactly. The CLI runs in-process against the lab."""

from __future__ import annotations

import base64
from pathlib import Path

from click.testing import CliRunner, Result

from cli.main import stratus as stratus_cli
from tools.k8s import KubeClient
from tools.objects import ObjectRef, normalized

SECRET = ObjectRef("Secret", "mongodb-rate-auth", "hotel")
APPLIED = "rate-s3cret"  # the lab's last-applied value
DRIFTED = "hunter2-rotated"


def run(env: dict[str, str], *args: str) -> Result:
    return CliRunner().invoke(stratus_cli, list(args), env=env, catch_exceptions=False)


def password(kube: KubeClient) -> str:
    return base64.b64decode(kube.get(SECRET)["data"]["password"]).decode()


def stored_bytes(env: dict[str, str]) -> dict[str, bytes]:
    """Every file Stratus wrote beside the database: the database, its WAL, the anchor."""
    folder = Path(env["STRATUS_DB"]).parent
    return {path.name: path.read_bytes() for path in folder.iterdir() if path.is_file()}


def assert_no_value_stored(env: dict[str, str]) -> None:
    files = stored_bytes(env)
    assert any(name.endswith(".db") for name in files)
    for value in (APPLIED, DRIFTED):
        for form in (value, base64.b64encode(value.encode()).decode()):
            for name, content in files.items():
                assert form.encode() not in content, f"{form!r} is stored in {name}"


def test_a_secret_write_and_its_undo_store_digests_only(
    env: dict[str, str], kube: KubeClient
) -> None:
    drifted = kube.get(SECRET)
    drifted["data"]["password"] = base64.b64encode(DRIFTED.encode()).decode()
    kube.replace(drifted)
    keyed = {**env, "STRATUS_AUDIT_KEY": "k" * 32}
    restored = run(
        keyed, "act", "restore-secret-key", "mongodb-rate-auth", "key=password", "-n", "hotel"
    )
    assert restored.exit_code == 1  # no --yes and no terminal: nothing written
    restored = run(
        keyed,
        "act",
        "restore-secret-key",
        "mongodb-rate-auth",
        "key=password",
        "-n",
        "hotel",
        "--yes",
    )
    assert restored.exit_code == 0, restored.output
    assert password(kube) == APPLIED
    assert_no_value_stored(keyed)
    undone = run(keyed, "undo", "--last", "--yes")
    assert undone.exit_code == 0, undone.output
    assert password(kube) == DRIFTED  # exactly the value it replaced
    assert normalized(kube.get(SECRET)) == normalized(drifted)  # data and annotation alike
    keepers = kube.list("v1", "Secret", namespace="hotel", label_selector="stratus.io/undo-of")
    assert keepers == []  # the values undo needed were kept in the cluster, and are gone now
    assert_no_value_stored(keyed)
    shown = run(keyed, "proposals", "list", "--all").output + run(keyed, "audit", "show").output
    assert DRIFTED not in shown and APPLIED not in shown
    assert run(keyed, "audit", "verify").exit_code == 0


def test_undo_refuses_a_keeper_that_is_gone_or_edited(
    env: dict[str, str], kube: KubeClient
) -> None:
    drifted = kube.get(SECRET)
    drifted["data"]["password"] = base64.b64encode(DRIFTED.encode()).decode()
    kube.replace(drifted)
    args = ("act", "restore-secret-key", "mongodb-rate-auth", "key=password", "-n", "hotel")
    assert run(env, *args, "--yes").exit_code == 0
    [keeper] = kube.list("v1", "Secret", namespace="hotel", label_selector="stratus.io/undo-of")
    keeper["data"]["data.password"] = base64.b64encode(b"attacker-chosen").decode()
    kube.replace(keeper)
    edited = run(env, "undo", "--last", "--yes")
    assert edited.exit_code == 1 and "does not hold the values" in edited.stderr, edited.output
    assert password(kube) == APPLIED
    kube.delete(ObjectRef("Secret", keeper["metadata"]["name"], "hotel"))
    gone = run(env, "undo", "--last", "--yes")
    assert gone.exit_code == 1 and "is gone" in gone.stderr, gone.output
    assert "Traceback" not in gone.output + gone.stderr and password(kube) == APPLIED
