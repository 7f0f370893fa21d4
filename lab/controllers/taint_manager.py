"""The NoExecute taint manager: a pod running on a node with a NoExecute taint it does not
tolerate is evicted (deleted, with a TaintManagerEviction event); one that tolerates it for
``tolerationSeconds`` is evicted when that time is up. Its controller then replaces it
elsewhere, as on a cluster."""

from __future__ import annotations

from typing import Any

from lab.cluster.resources import by_kind
from lab.controllers.context import ControllerContext
from lab.controllers.scheduling import _tolerates

COMPONENT = "taint-eviction-controller"


def _matching(tolerations: list[dict[str, Any]], taint: dict[str, Any]) -> list[dict[str, Any]]:
    return [t for t in tolerations if _tolerates([t], taint)]


class TaintManager:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self._deadline: dict[str, float] = {}  # pod uid → when its toleration runs out

    def reconcile(self) -> None:
        nodes = {n["metadata"]["name"]: n for n in self.ctx.store.iter_all("nodes")}
        now = self.ctx.clock.now()
        seen: set[str] = set()
        for pod in list(self.ctx.store.iter_all("pods")):
            spec = pod.get("spec") or {}
            node = nodes.get(spec.get("nodeName") or "")
            if node is None or (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            taints = [
                t
                for t in (node.get("spec") or {}).get("taints") or []
                if t.get("effect") == "NoExecute"
            ]
            if not taints:
                continue
            tolerations = spec.get("tolerations") or []
            uid = pod["metadata"]["uid"]
            limit: float | None = None  # seconds it may stay; None: for ever
            evict_now = False
            for taint in taints:
                matching = _matching(tolerations, taint)
                if not matching:
                    evict_now = True
                    break
                seconds = [t["tolerationSeconds"] for t in matching if "tolerationSeconds" in t]
                if seconds and len(seconds) == len(matching):
                    limit = min(limit, *seconds) if limit is not None else min(seconds)
            if not evict_now and limit is not None:
                seen.add(uid)
                if uid not in self._deadline:
                    self._deadline[uid] = now + max(float(limit), 0.0)
                    self.ctx.clock.call_later(max(float(limit), 0.0), lambda: None, steady=True)
                if self._deadline[uid] > now:
                    continue
                evict_now = True
            if evict_now:
                self._evict(pod)
        for uid in [u for u in self._deadline if u not in seen]:
            del self._deadline[uid]

    def _evict(self, pod: dict[str, Any]) -> None:
        meta = pod["metadata"]
        self.ctx.events.record(
            pod,
            "Normal",
            "TaintManagerEviction",
            f"Marking for deletion Pod {meta['namespace']}/{meta['name']}",
            component=COMPONENT,
        )
        self.ctx.api.delete(by_kind("Pod"), meta["namespace"], meta["name"])
        self._deadline.pop(meta["uid"], None)
