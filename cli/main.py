"""The ``stratus`` command line: the composition root of the product.

Errors reach the user as one line on stderr and a non-zero exit code, never a traceback.
"""

from __future__ import annotations

import click

from cli import lab_commands, policy_commands, write_commands


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="stratus", prog_name="stratus")
def stratus() -> None:
    """Stratus: a human-in-the-loop ChatOps bot for Kubernetes incidents."""


stratus.add_command(lab_commands.lab)
stratus.add_command(write_commands.act)
stratus.add_command(write_commands.undo)
stratus.add_command(write_commands.audit)
stratus.add_command(policy_commands.policy)


def main() -> None:
    stratus(prog_name="stratus")
