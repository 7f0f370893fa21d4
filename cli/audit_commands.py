"""``stratus audit``: verify and read the tamper-evident audit log."""

from __future__ import annotations

import click

from cli.context import open_store
from store.audit import AuditLog


@click.group()
def audit() -> None:
    """The tamper-evident audit log."""


@audit.command()
def verify() -> None:
    """Check the hash chain and its anchor; exit 1 and name every problem."""
    log = AuditLog(open_store())
    problems = log.verify()
    if problems:
        for problem in problems:
            click.echo(f"audit log tampered: {problem}", err=True)
        raise SystemExit(1)
    click.echo(f"audit log intact: {log.count()} rows")


@audit.command()
@click.option("--limit", type=click.IntRange(1, 10_000), default=20, show_default=True)
def show(limit: int) -> None:
    """Print the most recent audit rows."""
    log = AuditLog(open_store())
    for record in log.records(limit=limit):
        payload = record.payload
        what = (
            payload.get("intent")
            or payload.get("message")
            or payload.get("verdict")
            or payload.get("to")
            or ""
        )
        click.echo(
            f"{record.seq:>6}  {record.at[:19]}  {record.actor:<16} {record.event:<9} "
            f"{record.subject}  {what}"
        )
