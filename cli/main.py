"""The ``stratus`` command line: the composition root of the product.

Errors reach the user as one line on stderr (and a hint) with a non-zero exit code, never a
traceback: Stratus's own errors are rendered from their fields, a database or file-system
failure is named, and anything unexpected is written to a crash log whose path is printed.
"""

from __future__ import annotations

import datetime as dt
import importlib
import os
import sqlite3
import sys
import tempfile
import traceback
from pathlib import Path
from typing import Any

import click

from cli import render
from cli.paths import data_dir
from store.errors import StratusError

CRASH_EXIT = 70  # EX_SOFTWARE


class UserError(click.ClickException):
    """One line for the user, exit 1."""


class InternalError(UserError):
    """Something Stratus did not expect: one line, the crash log's path, exit 70."""

    exit_code = CRASH_EXIT


def crash_log(error: BaseException) -> str:
    """Write the traceback where a maintainer can find it; return where."""
    text = "".join(traceback.format_exception(error))
    try:
        home: Path | None = data_dir()
    except StratusError:
        home = None  # a misconfigured STRATUS_HOME must not hide the crash it was asked to log
    for directory in (home, None):
        try:
            if directory is None:
                path = f"{tempfile.gettempdir()}/stratus-crash.log"
            else:
                directory.mkdir(parents=True, exist_ok=True)
                path = str(directory / "crash.log")
            # Owner-only: a traceback can quote configuration or file contents.
            descriptor = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            with open(descriptor, "a", encoding="utf-8") as log:
                log.write(f"--- {dt.datetime.now(dt.UTC).isoformat()}\n{text}\n")
            return path
        except OSError:
            continue
    return "(no writable place for a crash log)"


# Each command's module is imported only when that command runs: `stratus undo` does not pay
# for the LLM client, the Slack SDK or the lab.
COMMANDS: dict[str, tuple[str, str]] = {
    "act": ("cli.write_commands", "act"),
    "audit": ("cli.audit_commands", "audit"),
    "demo": ("cli.demo_commands", "demo"),
    "deploy": ("cli.deploy_commands", "deploy"),
    "eval": ("cli.eval_commands", "eval_command"),
    "impersonation": ("cli.impersonation_commands", "impersonation_group"),
    "incidents": ("cli.incident_commands", "incidents"),
    "investigate": ("cli.incident_commands", "investigate"),
    "lab": ("cli.lab_commands", "lab"),
    "mcp": ("cli.mcp_commands", "mcp"),
    "policy": ("cli.policy_commands", "policy"),
    "proposals": ("cli.proposal_commands", "proposals"),
    "serve": ("cli.serve_commands", "serve"),
    "undo": ("cli.write_commands", "undo"),
}


class StratusGroup(click.Group):
    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        spec = COMMANDS.get(cmd_name)
        if spec is None:
            return None
        command = getattr(importlib.import_module(spec[0]), spec[1])
        assert isinstance(command, click.Command)
        return command

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        # Bytes that are not UTF-8 arrive as lone surrogates, which no database, API call or
        # terminal can take: refused here, before anything is opened.
        for arg in args:
            if any(0xD800 <= ord(ch) <= 0xDFFF for ch in arg):
                raise UserError(f"{render.visible(arg)} is not UTF-8 text; nothing was done")
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except click.UsageError as error:
            # click repeats what was typed (an option's name, a value): one line, inert.
            said = error.format_message()
            if isinstance(error, click.MissingParameter):
                # Nothing typed, only our choices, which click lays out one a line
                # ("Choose from:\n\tcordon,\n\t…"): said on one line, not as escapes.
                said = " ".join(said.split())
            raise click.UsageError(render.visible(said), error.ctx) from error
        except click.ClickException as error:
            kind = InternalError if error.exit_code == CRASH_EXIT else UserError
            raise kind(render.visible_lines(error.format_message())) from error
        except (click.exceptions.Exit, click.Abort):
            raise
        except StratusError as error:
            raise UserError(render.error_line(error)) from error
        except sqlite3.Error as error:
            raise UserError(f"the database cannot be used: {render.visible(error)}") from error
        except BrokenPipeError:
            # `stratus … | head`: the reader left; nothing to report.
            sys.stderr.close()
            raise click.exceptions.Exit(0) from None
        except OSError as error:
            where = f" ({error.filename})" if error.filename else ""
            raise UserError(render.visible(f"{error.strerror or error}{where}")) from error
        except Exception as error:
            path = crash_log(error)
            raise InternalError(
                f"internal error ({type(error).__name__}: {render.visible(error)}); nothing more "
                "was done. "
                f"The details are in {path}"
            ) from error


@click.group(cls=StratusGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="stratus", prog_name="stratus")
def stratus() -> None:
    """Stratus: a human-in-the-loop ChatOps bot for Kubernetes incidents."""


def main() -> None:
    stratus(prog_name="stratus")
