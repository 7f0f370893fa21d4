"""``stratus impersonation …``: check a mapping file and print the RBAC it needs.

The words and the YAML only; loading, the rules and the derived ClusterRole live in
``policies.impersonation``.
"""

from __future__ import annotations

from pathlib import Path

import click
import yaml

from cli import render
from policies import impersonation


def _mapping(path: str | None) -> tuple[impersonation.Impersonation, str]:
    """The file named, else ``$STRATUS_IMPERSONATION``; a clear error when neither is set."""
    if path:
        return impersonation.parse(Path(path)), path
    loaded = impersonation.from_env()
    if loaded is None:
        raise click.UsageError(
            f"name the mapping file (or set ${impersonation.ENV}); impersonation is off without one"
        )
    return loaded, loaded.source


_PATH = click.argument("path", required=False, type=click.Path(dir_okay=False))


@click.group(name="impersonation")
def impersonation_group() -> None:
    """Writes made as the approver: the mapping from people to Kubernetes users and groups."""


@impersonation_group.command()
@_PATH
def check(path: str | None) -> None:
    """Validate a mapping file (default: $STRATUS_IMPERSONATION) and say whom it maps."""
    mapping, where = _mapping(path)
    render.echo(f"{render.visible(where)}: ok")
    for person, identity in sorted(mapping.people.items()):
        render.echo(f"  {render.visible(person)} → {render.visible(identity)}")
    for group, groups in sorted(mapping.groups.items()):
        also = render.visible(", ".join(groups))
        render.echo(f"  members of {render.visible(group)} also get groups {also}")
    if mapping.automatic is not None:
        render.echo(f"  Stratus on its own → {render.visible(mapping.automatic)}")
    else:
        render.echo("  Stratus on its own → nobody: writes no person approved are refused")


@impersonation_group.command()
@_PATH
@click.option(
    "--serviceaccount",
    default="stratus:stratus",
    show_default=True,
    help="NAMESPACE:NAME of Stratus's ServiceAccount, bound to the role.",
)
@click.option("--name", default="stratus-impersonate", show_default=True, help="The role's name.")
def rbac(path: str | None, serviceaccount: str, name: str) -> None:
    """Print the ClusterRole (impersonate on exactly the mapped users and groups) and its
    binding to Stratus's ServiceAccount, as YAML for `kubectl apply -f -`."""
    namespace, _, account = serviceaccount.partition(":")
    if not namespace or not account:
        raise click.BadParameter("expected NAMESPACE:NAME", param_hint="--serviceaccount")
    mapping, _where = _mapping(path)
    role = impersonation.cluster_role(mapping, name=name)
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name, "labels": {"app.kubernetes.io/name": "stratus"}},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": name},
        "subjects": [{"kind": "ServiceAccount", "name": account, "namespace": namespace}],
    }
    render.echo(yaml.safe_dump_all([role, binding], sort_keys=False).rstrip())
