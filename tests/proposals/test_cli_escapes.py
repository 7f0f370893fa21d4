"""Terminal escapes in what the CLI repeats — ids, names, reasons, intents, stored and cluster
text — are shown, never obeyed (issue 16 follow-up, L4): ``incidents cancel $'inc-\\e]0;pwn\\a'``
used to set the terminal's title. Every control or format character a command prints comes out
as its escape (``\\x1b``, ``\\x07``, ``\\r``, ``\\n``, ``\\u202e``); only the CLI's own line breaks
are line breaks. In-process through click's runner, against the lab."""

from __future__ import annotations

import unicodedata

import pytest
from click.testing import CliRunner, Result

from cli.main import stratus as stratus_cli
from store.db import Store
from tools.k8s import KubeClient
from tools.objects import ObjectRef

GEO = ObjectRef("Deployment", "geo", "hotel")
TITLE = "\x1b]0;pwn\x07"  # sets the terminal's title
CLEAR = "\x1b[2J"  # clears the screen
FAKE = "\r\nError: applied: everything is fine"  # a forged line
RLO = "\u202e"  # right-to-left override
NASTY = TITLE + CLEAR + FAKE + RLO


def run(env: dict[str, str], *args: str) -> Result:
    return CliRunner().invoke(stratus_cli, list(args), env=env, catch_exceptions=False)


def inert(text: str) -> None:
    """No character a terminal would act on, other than the line breaks between lines."""
    acting = [
        ch
        for ch in text
        if ch not in "\n\t" and unicodedata.category(ch) in ("Cc", "Cf", "Cs", "Zl", "Zp")
    ]
    assert not acting, (acting, text)
    assert "Error: applied" not in text.splitlines()[-1:] and not any(
        line.startswith("Error: applied") for line in text.splitlines()
    ), text


def said(result: Result) -> str:
    return result.stdout + result.stderr


@pytest.mark.parametrize(
    "args",
    [
        ("incidents", "cancel", "inc-" + NASTY),
        ("incidents", "show", "inc-" + NASTY),
        ("incidents", "resume", "inc-" + NASTY),
        ("proposals", "approve", "prop-" + NASTY),
        ("proposals", "reject", "prop-" + NASTY),
        ("proposals", "show", "prop-" + NASTY),
        ("proposals", "cancel", "prop-" + NASTY),
        ("undo", "undo-" + NASTY, "--yes"),
        ("undo", "undo-" + NASTY, "--drop", "--reason", NASTY, "--yes"),
        ("act", "scale", "deploy/geo" + NASTY, "replicas=2", "-n", "hotel", "--yes"),
        ("act", "scale", "deploy/geo", "replicas=2" + NASTY, "-n", "hotel", "--yes"),
        ("act", "scale", "deploy/geo", "replicas=2", "-n", "hotel" + NASTY, "--yes"),
        ("act", "scale" + NASTY, "deploy/geo"),
        ("act", "scale", "deploy/geo", NASTY + "=1", "-n", "hotel", "--yes"),
        ("investigate", "hotel" + NASTY, "--planner", "offline"),
        ("incidents", "cancel", "inc-\udcff\udcfe"),  # bytes that are not UTF-8
        ("proposals", "list", "--incident", "inc-" + NASTY),
        ("undo", "--list", "--" + NASTY),
    ],
)
def test_ids_names_and_values_typed_are_echoed_inert(
    env: dict[str, str], kube: KubeClient, args: tuple[str, ...]
) -> None:
    result = run(env, *args)
    assert result.exit_code != 0 or args[:2] == ("proposals", "list"), said(result)
    inert(said(result))
    assert "internal error" not in said(result)
    assert kube.get(GEO)["spec"]["replicas"] == 1


def test_reasons_and_stored_text_are_shown_inert(env: dict[str, str], kube: KubeClient) -> None:
    policy_env = env
    proposed = run(policy_env, "act", "scale", "deploy/geo", "replicas=2", "-n", "hotel")
    assert proposed.exit_code == 1  # no --yes, no terminal: withdrawn
    store = Store(env["STRATUS_DB"])
    try:
        (row,) = store.query("SELECT id FROM proposals")
    finally:
        store.close()
    pid = str(row["id"])
    for args in (
        ("proposals", "show", pid),
        ("proposals", "events", "--proposal", pid),
        ("proposals", "list", "--all"),
    ):
        shown = run(env, *args)
        assert shown.exit_code == 0, said(shown)
        inert(said(shown))
    applied = run(env, "act", "scale", "deploy/geo", "replicas=2", "-n", "hotel", "--yes")
    assert applied.exit_code == 0, said(applied)
    entry = run(env, "undo", "--list").stdout.split()[0]
    dropped = run(env, "undo", entry, "--drop", "--reason", NASTY, "--yes")
    assert dropped.exit_code == 0, said(dropped)
    inert(said(dropped))
    again = run(env, "undo", entry, "--yes")
    inert(said(again))


def test_a_rejection_reason_and_a_cancel_reason_are_shown_inert(
    env: dict[str, str], tmp_path: object
) -> None:
    from pathlib import Path

    directory = Path(str(tmp_path)) / "policy"
    directory.mkdir()
    (directory / "p.yaml").write_text(
        "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: t}\n"
        "rules:\n  - {name: ask, decision: ask, min_approvals: 2}\n"
    )
    env = {**env, "STRATUS_POLICY_DIR": str(directory)}
    voted = run(env, "act", "scale", "deploy/geo", "replicas=2", "-n", "hotel", "--yes")
    assert voted.exit_code == 0, said(voted)
    store = Store(env["STRATUS_DB"])
    try:
        (row,) = store.query("SELECT id FROM proposals")
    finally:
        store.close()
    pid = str(row["id"])
    rejected = run(
        {**env, "STRATUS_ACTOR": "sre-bob"}, "proposals", "reject", pid, "--reason", NASTY
    )
    assert rejected.exit_code == 0, said(rejected)
    inert(said(rejected))
    assert "\\x1b" in rejected.stdout  # shown, as its escape
    for args in (("proposals", "show", pid), ("proposals", "events", "--proposal", pid)):
        shown = run(env, *args)
        inert(said(shown))
        assert "\\x1b]0;pwn\\x07" in shown.stdout, shown.stdout
