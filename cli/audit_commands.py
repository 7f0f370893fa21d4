"""``stratus audit``: verify and read the tamper-evident audit log."""

from __future__ import annotations

import click

from cli.context import open_store
from policies.grants import GrantBook
from proposals.killswitch import KillSwitch
from proposals.repository import ProposalRepository
from store import integrity
from store.audit import AuditLog
from store.events import EventStore
from store.records import lost, misrecorded, unaudited_writes


@click.group()
def audit() -> None:
    """The tamper-evident audit log."""


@audit.command()
def verify() -> None:
    """Check the hash chain and its anchor, every stored proposal, grant, event, execution
    record and undo entry against its seal and the audit log; exit 1 and name every
    problem."""
    store = open_store()
    report = AuditLog(store).verify_report()
    records, unsealed = ProposalRepository(store).tampered()
    records += GrantBook(store).tampered()
    records += misrecorded(store)
    records += lost(store)
    forged_events, unsealed_events = EventStore(store).forged()
    records += [f"{line}; it is not shown" for line in forged_events]
    if unsealed_events:
        unsealed.append(
            f"{unsealed_events} events carry no seal (stored before events were sealed); "
            "they are not shown"
        )
    switch = KillSwitch(store).state()
    if switch.tampered:
        records.append(f"kill switch: {switch.tampered} (it counts as paused)")
    if report.wrong_key:
        # Under another key every genuine row, seal and digest fails: listing each as
        # tampered would accuse records that are fine. Nothing is checked until the key fits.
        findings = len(report.problems) + len(records)
        click.echo(
            f"audit log unverifiable: {integrity.KEY_MISMATCH}; nothing could be checked "
            f"({findings} findings not listed): set it to the installation's key and run "
            "`stratus audit verify` again",
            err=True,
        )
        raise SystemExit(1)
    for warning in [*report.warnings, *unsealed]:
        click.echo(f"warning: {warning}", err=True)
    problems = list(report.problems) + [
        f"write {write} has no audit row" for write in unaudited_writes(store)
    ]
    for problem in problems:
        click.echo(f"audit log tampered: {problem}", err=True)
    for record in records:
        click.echo(f"record tampered: {record}", err=True)
    if problems or records:
        if any("just before a crash" in p for p in problems) and not report.keyed:
            # Without a key a crash between commit and anchor cannot be told from a forgery.
            click.echo(
                "hint: if Stratus was killed at that moment, check those rows with `stratus "
                "audit show` and vouch for them with `stratus audit adopt`; set "
                "STRATUS_AUDIT_KEY so a crash can be told from a forgery next time",
                err=True,
            )
        raise SystemExit(1)
    anchored = (
        f", anchored at row {report.anchored_seq} in {report.anchor_path}"
        if report.anchored_seq
        else ""
    )
    protection = "keyed (HMAC)" if report.keyed else "not keyed: set STRATUS_AUDIT_KEY"
    click.echo(f"audit log intact: {report.rows} rows{anchored}; {protection}")


@audit.command()
def adopt() -> None:
    """Anchor the log as it is now (after an upgrade, or a lost anchor file). Run
    `stratus audit verify` first: this vouches for every row not yet anchored."""
    checkpoint = AuditLog(open_store()).adopt()
    if checkpoint is None:
        click.echo("the audit log is empty; nothing to anchor")
        return
    click.echo(f"anchored the audit log at row {checkpoint.seq}")


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
