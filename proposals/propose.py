"""Proposing a catalog action: build it, read and plan it, server-dry-run it, decide it by
policy and store it — the first step of every write, from every surface."""

from __future__ import annotations

import dataclasses
from typing import Any

from policies import impersonation
from policies.approvers import is_person
from policies.evaluate import facts_for
from proposals import risk
from proposals.core import Deps, labels_of, open_proposal, routes_to
from proposals.errors import NoChange
from proposals.model import Proposal
from store.clock import stamp
from tools import actions, errors, gitops
from tools.actions import CATALOG, UNDO
from tools.objects import ObjectRef


def propose(
    deps: Deps,
    *,
    action: str,
    target: ObjectRef | None = None,
    kind: str | None = None,
    name: str = "",
    namespace: str = "",
    params: dict[str, Any] | None = None,
    requester: str,
    incident_id: str | None = None,
    dry_run: bool = False,
    supersedes: Proposal | None = None,
    fixes: str = "",
    cluster: str = "",
    agent_intent: str = "",
) -> Proposal:
    """Plan a catalog action, server-dry-run it, assess its risk, decide it by policy and
    store it. ``fixes``: the diagnosed cause whose very object this write changes (an
    incident's step), so that an undo of it says it puts that cause back. ``agent_intent``:
    what an MCP client said the change is for (untrusted; surfaces quote it)."""
    if action == UNDO:
        raise errors.Invalid("undo is proposed with propose_undo")
    deps = deps.on(cluster)  # planned, dry-run and later executed on that cluster only
    cls = CATALOG.get(action)
    if cls is None:
        raise errors.Invalid(
            f"unknown action {action!r}; known actions: {', '.join(sorted(CATALOG))}"
        )
    if target is not None:
        kind, name, namespace = target.kind, target.name, target.namespace
    values: dict[str, Any] = {
        **(params or {}),
        "kind": kind or cls.kinds[0],
        "target": name,
        "namespace": namespace,
    }
    stamped = cls is actions.RolloutRestart and "restarted_at" not in values
    if stamped:
        # Stamped once, here, so the approved plan and the executed plan are the same.
        values["restarted_at"] = stamp(deps.clock.now())[:19] + "Z"
    built = actions.build(action, values)
    previewer = impersonation.previewer(
        deps.impersonation, requester=requester, is_person=is_person(requester)
    )
    refused_ok = deps.impersonation is not None
    current, plan = deps.executor.preview(built, writer=previewer, refused_ok=refused_ok)
    if stamped and not plan.changes_anything:
        # kubectl stamps whole seconds: a restart asked for within the second of the last one
        # (a fault's own restart, a rollout just begun) would restart nothing, and the pods it
        # meant to replace may have read what was there before. A finer stamp still restarts.
        values["restarted_at"] = stamp(deps.clock.now())
        built = actions.build(action, values)
        current, plan = deps.executor.preview(built, writer=previewer, refused_ok=refused_ok)
    if not plan.changes_anything:
        raise NoChange(
            f"{built.ref()} already looks like that; nothing to do", subject=str(built.ref())
        )
    stored_params = built.model_dump(mode="json", exclude={"kind", "target", "namespace"})
    owner = gitops.managed_by(current)
    assessed = risk.assess(
        risk.RiskFacts(
            action=action,
            floor=cls.risk,
            kind=built.ref().kind,
            name=built.ref().name,
            before=plan.before,
            after=plan.after,
            reversible=cls.reversible,
            routed_by=routes_to(deps, built.ref(), plan.before or plan.after),
        )
    )
    # The policy decides on the assessed level: it may only be above the catalog's.
    facts = dataclasses.replace(
        facts_for(
            built,
            requester=requester,
            labels=labels_of(current),
            managed_by=owner.tool if owner else "",
        ),
        risk=assessed.level,
    )
    return open_proposal(
        deps,
        action=action,
        params=stored_params,
        ref=built.ref(),
        facts=facts,
        plan=plan,
        intent=built.intent(current),
        risk=assessed.level,
        reversible=cls.reversible,
        requester=requester,
        incident_id=incident_id,
        dry_run=dry_run,
        supersedes=supersedes,
        warnings=[owner.warning()] if owner else [],
        agent_intent=agent_intent,
        risk_reason=assessed.reason,
        fixes=fixes,
    )
