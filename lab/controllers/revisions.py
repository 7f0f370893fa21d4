"""ControllerRevisions: the template history of StatefulSets and DaemonSets.

Each pod template a StatefulSet or DaemonSet has had is kept as an ``apps/v1``
ControllerRevision named ``{owner}-{hash}`` (the hash the pods carry in
``controller-revision-hash``), numbered like the real controllers number them: a template
that comes back (``kubectl rollout undo``) takes the next number. Its ``data`` is the strategic
merge patch that restores the template (``{"spec": {"template": {…, "$patch": "replace"}}}``),
which is what ``kubectl rollout history`` prints and ``rollout undo`` sends back.
``revisionHistoryLimit`` old revisions are kept.
"""

from __future__ import annotations

import copy
from typing import Any

from lab.cluster.resources import by_kind
from lab.controllers.context import ControllerContext, owner_reference
from lab.controllers.workloads import owned, template_hash

KEY = "controllerrevisions.apps"
CHANGE_CAUSE = "kubernetes.io/change-cause"
_OWNERS = ("statefulsets.apps", "daemonsets.apps")


def revision_name(owner: dict[str, Any]) -> str:
    return f"{owner['metadata']['name']}-{template_hash(owner['spec']['template'])}"


class ControllerRevisionController:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def reconcile(self) -> None:
        for key in _OWNERS:
            for owner in self.ctx.store.iter_all(key):
                self._sync(owner)

    def _sync(self, owner: dict[str, Any]) -> None:
        meta = owner["metadata"]
        namespace, name = meta["namespace"], revision_name(owner)
        history = owned(self.ctx, KEY, owner)
        latest = max((int(r.get("revision", 0)) for r in history), default=0)
        current = next((r for r in history if r["metadata"]["name"] == name), None)
        cause = (meta.get("annotations") or {}).get(CHANGE_CAUSE)
        if current is None:
            template = copy.deepcopy(owner["spec"]["template"])
            template["$patch"] = "replace"
            labels = dict((owner["spec"]["template"].get("metadata") or {}).get("labels") or {})
            labels["controller-revision-hash"] = name.rsplit("-", 1)[1]
            revision: dict[str, Any] = {
                "apiVersion": "apps/v1",
                "kind": "ControllerRevision",
                "metadata": {
                    "name": name,
                    "namespace": namespace,
                    "labels": labels,
                    "ownerReferences": [owner_reference(owner)],
                    **({"annotations": {CHANGE_CAUSE: cause}} if cause else {}),
                },
                "data": {"spec": {"template": template}},
                "revision": latest + 1,
            }
            history.append(self.ctx.api.create(by_kind("ControllerRevision"), namespace, revision))
        elif int(current.get("revision", 0)) < latest:
            updated = {**current, "revision": latest + 1}
            if cause:
                updated["metadata"] = {
                    **current["metadata"],
                    "annotations": {
                        **(current["metadata"].get("annotations") or {}),
                        CHANGE_CAUSE: cause,
                    },
                }
            self.ctx.write_object(KEY, updated)
        limit = int(owner["spec"].get("revisionHistoryLimit", 10))
        old = sorted(
            (r for r in history if r["metadata"]["name"] != name),
            key=lambda r: int(r.get("revision", 0)),
        )
        for stale in old[: max(len(old) - limit, 0)]:
            self.ctx.store.delete(KEY, namespace, stale["metadata"]["name"])
