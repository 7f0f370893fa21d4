"""``stratus deploy``: what a cluster needs to run Stratus, printed so operators can regenerate
the shipped manifests (``manifests/deploy/``) for their own namespaces."""

from __future__ import annotations

import click
import yaml

from cli import text
from tools import permissions, rbac


@click.group()
def deploy() -> None:
    """What a cluster needs to run Stratus (docs/deploy.md)."""


@deploy.command("rbac")
@click.option(
    "--namespace",
    "-n",
    "managed",
    multiple=True,
    help="A namespace Stratus manages (read and write roles bound there); repeat it.",
)
@click.option(
    "--secrets-in",
    multiple=True,
    help="A managed namespace where Secrets may be read and written (opt-in); repeat it.",
)
@click.option(
    "--part",
    type=click.Choice(rbac.PARTS),
    default="all",
    show_default=True,
    help="roles: base/rbac.yaml; bindings: managed/; secrets: components/secrets.",
)
@click.option(
    "--stratus-namespace", default="stratus", show_default=True, help="Where Stratus runs."
)
@click.option(
    "--service-account", default="stratus", show_default=True, help="Stratus's ServiceAccount."
)
def rbac_command(
    managed: tuple[str, ...],
    secrets_in: tuple[str, ...],
    part: str,
    stratus_namespace: str,
    service_account: str,
) -> None:
    """Print the RBAC objects Stratus needs, derived from its read layer and action catalog."""
    install = rbac.Install.checked(
        namespace=stratus_namespace,
        service_account=service_account,
        managed=managed,
        secrets=secrets_in,
    )
    objects = rbac.rbac_part(part, install, permissions.derive())
    header = text.rbac_header(
        "stratus deploy rbac",
        part=part,
        managed=install.managed,
        secrets=install.secrets,
        namespace=install.namespace,
        service_account=install.service_account,
    )
    click.echo(header, nl=False)
    click.echo(yaml.safe_dump_all(objects, sort_keys=False, explicit_start=True), nl=False)
