"""No value of a Secret is stored by Stratus: after a restore-secret-key and its undo, neither
value (the drifted one and the restored one), in plain text or base64, is anywhere in the
database, its write-ahead log or the audit anchor — and the undo still puts the drifted value
back exactly. The CLI runs in-process against the lab."""

from __future__ import annotations

import base64
import copy
import hashlib
import sqlite3
from pathlib import Path

from click.testing import CliRunner, Result

from cli.main import stratus as stratus_cli
from proposals.model import Proposal, plan_digest
from tools.k8s import KubeClient
from tools.objects import LAST_APPLIED, ObjectRef, normalized

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


def _unkeyed(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()[:12]


def test_with_a_key_no_stored_or_shown_digest_lets_a_value_be_guessed(
    env: dict[str, str], kube: KubeClient
) -> None:
    """An attacker who reads the database (or a card) tries the candidate values offline:
    neither the shown digests nor the plan digest a vote is bound to may confirm a guess."""
    drifted = kube.get(SECRET)
    drifted["data"]["password"] = base64.b64encode(DRIFTED.encode()).decode()
    kube.replace(drifted)
    keyed = {**env, "STRATUS_AUDIT_KEY": "k" * 32}
    args = ("act", "restore-secret-key", "mongodb-rate-auth", "key=password", "-n", "hotel")
    assert run(keyed, *args, "--yes").exit_code == 0
    files = stored_bytes(keyed)
    shown = run(keyed, "proposals", "list", "--all").output + run(keyed, "audit", "show").output
    for value in (APPLIED, DRIFTED):
        for name, content in files.items():
            assert _unkeyed(value).encode() not in content, f"sha256 of {value} in {name}"
        assert _unkeyed(value) not in shown
    [stored] = [
        Proposal.model_validate_json(row["body"])
        for row in _rows(keyed, "SELECT body FROM proposals")
    ]
    assert "hmac:" in stored.intent and "hmac:" in stored.plan.diff
    # The plan digest, recomputed by the attacker with each guess put back into the image
    # (the other keys and the last-applied annotation as they were: guessed right too).
    assert stored.plan.before is not None
    applied = drifted["metadata"]["annotations"][LAST_APPLIED]
    for guess in (APPLIED, DRIFTED, "wrong"):
        image = copy.deepcopy(stored.plan.before)
        image["data"] = {**drifted["data"], "password": base64.b64encode(guess.encode()).decode()}
        image["metadata"]["annotations"][LAST_APPLIED] = applied
        tried = plan_digest(
            action=stored.action,
            target=str(stored.target),
            params=stored.params,
            diff=stored.plan.diff,
            seen=image,
        )
        assert tried != stored.plan.digest, f"the plan digest confirms {guess!r}"
    # Within one installation the same value keeps the same digest: the card's "now" digest
    # of the drifted value is the one a second proposal on the same drift shows.
    assert run(keyed, "undo", "--last", "--yes").exit_code == 0
    again = run(keyed, *args, "--dry-run")
    now = stored.intent.split("(now ")[1].rstrip(")")
    assert now in again.output, again.output
    assert password(kube) == DRIFTED


def _rows(env: dict[str, str], statement: str) -> list[sqlite3.Row]:
    db = sqlite3.connect(env["STRATUS_DB"])
    db.row_factory = sqlite3.Row
    try:
        return list(db.execute(statement))
    finally:
        db.close()
