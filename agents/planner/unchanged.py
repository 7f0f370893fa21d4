"""Candidates that would change nothing: the planner skips them, saying so (issue 22).

A candidate whose every step would leave its object as it is — ``set-image`` to the image the
container already runs, ``scale`` to the replicas it has, a rollback to the template running
now — is no attempt: judged "same", it would be undone as nothing and cost an attempt of the
incident's bound. Each step is planned by the catalog's own pure ``plan`` against the object
as the snapshot read it (no cluster call); a step that cannot be planned from the snapshot (a
parameter only the service fills in, an object the snapshot lacks) counts as a change, and
the workflow's dry run (``incidents.plans.changes_nothing``) judges it against the cluster.
"""

from __future__ import annotations

from agents.model import Candidate
from agents.snapshot import Snapshot
from tools import actions
from tools.errors import ToolError


def unchanged(candidate: Candidate, snapshot: Snapshot) -> str | None:
    """Why no step of ``candidate`` would change anything (one phrase per step), or None."""
    reasons: list[str] = []
    for step in candidate.steps:
        current = snapshot.get(step.kind, step.name)
        if current is None or step.kind == "Secret":
            # A Secret's values are digests in a snapshot: only the cluster can tell.
            return None
        try:
            action = actions.build(
                step.action,
                {
                    **step.params,
                    "kind": step.kind,
                    "target": step.name,
                    "namespace": "" if step.kind == "Node" else snapshot.namespace,
                },
            )
            related = action.related()
            plan = action.plan(current, snapshot.of(related[1]) if related else [])
        except (ToolError, ValueError, KeyError, TypeError):
            return None
        if plan.changes_anything:
            return None
        reasons.append(f"{step.kind.lower()}/{step.name} already looks like that")
    return "; ".join(reasons) or None
