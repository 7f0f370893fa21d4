"""What no planned write may widen: the Secrets, the ServiceAccount and the images a pod
template reaches.

Write access to a namespace's pod templates is, in Kubernetes, read access to every Secret of
that namespace (a container that takes one in its environment can print it), use of every
ServiceAccount there and of any image. RBAC cannot tell a fix from an exfiltration, so the
ServiceAccount Stratus runs as can do all of that (docs/deploy.md, "Threat model"). Stratus's
own plans never do: every plan an action makes is checked here before it is shown, dry-run or
executed, and a plan that would add a reference to a Secret, change the ServiceAccount (or
whether its token is mounted), or bring an image the object does not run is refused with the
reason. The exceptions are each an action's stated purpose: ``set-image`` sets the one image it
names, and ``rollout-undo`` restores a template the workload ran before (its own revisions).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from tools.errors import Invalid

_CONTAINER_LISTS = ("initContainers", "containers", "ephemeralContainers")
WHOLE = "*"  # every key of the Secret (envFrom, a volume)


@dataclass(frozen=True)
class Reach:
    """What the pods of one template can get at."""

    secrets: frozenset[tuple[str, str]]  # (Secret name, key or WHOLE)
    identity: tuple[str, bool | None]  # serviceAccountName, automountServiceAccountToken
    images: frozenset[str]


def pod_spec_of(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """The pod spec ``obj`` makes pods from (or is, for a Pod); None for other kinds."""
    if not obj:
        return None
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return None
    if obj.get("kind") == "Pod":
        return spec
    if isinstance(spec.get("jobTemplate"), dict):
        spec = spec["jobTemplate"].get("spec") or {}
    template = spec.get("template")
    if isinstance(template, dict) and isinstance(template.get("spec"), dict):
        found: dict[str, Any] = template["spec"]
        return found
    return None


def of_pod_spec(spec: dict[str, Any]) -> Reach:
    secrets: set[tuple[str, str]] = set()
    images: set[str] = set()
    for field in _CONTAINER_LISTS:
        for container in spec.get(field) or []:
            if container.get("image"):
                images.add(str(container["image"]))
            for env in container.get("env") or []:
                ref = (env.get("valueFrom") or {}).get("secretKeyRef")
                if ref:
                    secrets.add((str(ref.get("name", "")), str(ref.get("key", ""))))
            for source in container.get("envFrom") or []:
                ref = source.get("secretRef")
                if ref:
                    secrets.add((str(ref.get("name", "")), WHOLE))
    for volume in spec.get("volumes") or []:
        if volume.get("secret"):
            secrets.add((str(volume["secret"].get("secretName", "")), WHOLE))
        for source in (volume.get("projected") or {}).get("sources") or []:
            if source.get("secret"):
                secrets.add((str(source["secret"].get("name", "")), WHOLE))
    for pull in spec.get("imagePullSecrets") or []:
        secrets.add((str(pull.get("name", "")), WHOLE))
    account = str(spec.get("serviceAccountName") or spec.get("serviceAccount") or "default")
    automount = spec.get("automountServiceAccountToken")
    return Reach(
        secrets=frozenset(secrets),
        identity=(account, automount if isinstance(automount, bool) else None),
        images=frozenset(images),
    )


def check(
    *,
    action: str,
    what: str,
    before: dict[str, Any] | None,
    after: dict[str, Any] | None,
    history: Iterable[dict[str, Any]] = (),
    new_image: str | None = None,
) -> None:
    """Refuse a plan whose ``after`` reaches more than ``before`` (or, for an action that
    restores one, a pod template of ``history``) did; ``new_image`` is the one image an action
    may add because setting it is what the action is for."""
    spec = pod_spec_of(after)
    if spec is None:
        return
    reached = of_pod_spec(spec)
    specs = (pod_spec_of(obj) for obj in (before, *history))
    earlier = [of_pod_spec(s) for s in specs if s is not None]
    known_secrets = frozenset().union(*(r.secrets for r in earlier))
    added = sorted(reached.secrets - known_secrets)
    if added:
        names = ", ".join(
            f"secret/{name}" + ("" if key == WHOLE else f" key {key}") for name, key in added
        )
        raise Invalid(
            f"{action} on {what} would add a reference to {names}; Stratus never writes a new "
            "Secret reference into a pod template (it would hand the Secret's values to the pods)"
        )
    identities = {r.identity for r in earlier} or {("default", None)}
    if reached.identity not in identities:
        account, automount = reached.identity
        raise Invalid(
            f"{action} on {what} would run its pods as serviceAccountName {account!r} "
            f"(automountServiceAccountToken {automount}), not as before; Stratus never changes "
            "the ServiceAccount a workload runs as"
        )
    allowed = frozenset().union(*(r.images for r in earlier)) | (
        {new_image} if new_image else set()
    )
    images = sorted(reached.images - allowed)
    if images:
        raise Invalid(
            f"{action} on {what} would run the image(s) {', '.join(images)}, which it does not "
            "run now; only set-image sets an image, the one it names"
        )
