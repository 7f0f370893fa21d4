"""Every command and subcommand of ``stratus`` is documented: the real command tree is walked
(the top-level group loads its commands lazily, so iterating ``stratus.commands`` would see
nothing) and each path must appear in README.md or docs/*.md. A catalog action (``stratus act
NAME``) is documented by its row in the catalog table of docs/tools.md."""

from __future__ import annotations

import re
from collections.abc import Iterator

import click

from cli.main import stratus
from tests.conftest import REPO

DOCUMENTS = [REPO / "README.md", *sorted((REPO / "docs").glob("*.md"))]


def command_paths(
    command: click.Command, ctx: click.Context, path: tuple[str, ...] = ()
) -> Iterator[tuple[str, ...]]:
    """Every command under ``command`` as the words a user types after ``stratus``."""
    if path:
        yield path
    if isinstance(command, click.Group):
        for name in command.list_commands(ctx):
            sub = command.get_command(ctx, name)
            assert sub is not None, f"stratus {' '.join(path)} lists {name} but cannot load it"
            yield from command_paths(
                sub, click.Context(sub, parent=ctx, info_name=name), (*path, name)
            )


def undocumented(root: click.Command) -> list[str]:
    lines = "\n".join(p.read_text() for p in DOCUMENTS).splitlines()
    catalog = [
        line.split("|")[1]
        for line in (REPO / "docs" / "tools.md").read_text().splitlines()
        if line.startswith("| ")
    ]

    def documented(path: tuple[str, ...]) -> bool:
        word = re.compile(rf"(?<![\w-]){re.escape(path[-1])}(?![\w-])")
        if path[:-1] == ("act",):  # one subcommand per catalog action: its table row
            return any(word.search(first_cell) for first_cell in catalog)
        if len(path) == 1:  # "stratus NAME", not the Slack command "/stratus NAME"
            named = re.compile(rf"(?<![/\w-])stratus {re.escape(path[0])}(?![\w-])")
            return any(named.search(line) for line in lines)
        # One line may document several: "stratus proposals list | show ID | approve ID"
        prefix = "stratus " + "".join(f"{p} " for p in path[:-1])
        return any(word.search(line.partition(prefix)[2]) for line in lines if prefix in line)

    context = click.Context(root, info_name="stratus")
    return [f"stratus {' '.join(p)}" for p in command_paths(root, context) if not documented(p)]


def test_the_walk_sees_every_command_and_subcommand() -> None:
    paths = set(command_paths(stratus, click.Context(stratus, info_name="stratus")))
    # The lazy group's commands, their subcommands, and one per catalog action.
    assert {("undo",), ("lab", "up"), ("policy", "revoke"), ("proposals", "approve")} <= paths
    assert {("act", "scale"), ("act", "set-env"), ("incidents", "resume")} <= paths
    assert len(paths) > 50


def test_every_command_and_subcommand_is_documented() -> None:
    assert undocumented(stratus) == []


def test_a_made_up_command_is_reported() -> None:
    @click.group()
    def root() -> None:
        """A copy of stratus's tree with two commands nobody documented."""

    for name in stratus.list_commands(click.Context(stratus)):
        command = stratus.get_command(click.Context(stratus), name)
        assert command is not None
        root.add_command(command, name)
    root.add_command(click.Command("frobnicate"), "frobnicate")
    policy = root.commands["policy"]
    assert isinstance(policy, click.Group)
    policy = click.Group("policy", commands={**policy.commands, "frobnicate": click.Command("x")})
    root.add_command(policy, "policy")
    assert undocumented(root) == ["stratus frobnicate", "stratus policy frobnicate"]
