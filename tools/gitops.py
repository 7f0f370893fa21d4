"""Objects a GitOps controller owns: Argo CD and Flux re-apply what is in Git, so a write to
such an object is reverted at the next sync unless the change is also made in Git.

Read from the object's own labels and annotations (what the controllers set); the result goes
on a proposal as a warning and into the facts a policy can match (``managed_by``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

ARGO_TRACKING = "argocd.argoproj.io/tracking-id"  # "APP:GROUP/KIND:NAMESPACE/NAME"
ARGO_INSTANCE = "argocd.argoproj.io/instance"
FLUX_KUSTOMIZATION = ("kustomize.toolkit.fluxcd.io/name", "kustomize.toolkit.fluxcd.io/namespace")
FLUX_HELM = ("helm.toolkit.fluxcd.io/name", "helm.toolkit.fluxcd.io/namespace")
TOOLS = ("argocd", "flux")


@dataclass(frozen=True)
class GitOpsOwner:
    tool: str  # argocd | flux
    app: str  # the Argo CD Application, or the Flux Kustomization/HelmRelease

    def warning(self) -> str:
        what = "Argo CD application" if self.tool == "argocd" else "Flux"
        return (
            f"managed by {what} {self.app}: this change will be reverted at the next sync "
            "unless it is also made in Git"
        )


def managed_by(obj: dict[str, Any] | None) -> GitOpsOwner | None:
    metadata = (obj or {}).get("metadata") or {}
    labels = metadata.get("labels") or {}
    annotations = metadata.get("annotations") or {}
    tracking = str(annotations.get(ARGO_TRACKING) or "")
    if tracking:
        return GitOpsOwner("argocd", tracking.split(":", 1)[0])
    if labels.get(ARGO_INSTANCE):
        return GitOpsOwner("argocd", str(labels[ARGO_INSTANCE]))
    for kind, (name_key, namespace_key) in (
        ("kustomization", FLUX_KUSTOMIZATION),
        ("helmrelease", FLUX_HELM),
    ):
        if labels.get(name_key):
            where = f"{labels[namespace_key]}/" if labels.get(namespace_key) else ""
            return GitOpsOwner("flux", f"{kind} {where}{labels[name_key]}")
    return None
