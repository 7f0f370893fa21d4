"""The Kubernetes permissions Stratus needs, derived from what it reads and its action catalog.

An installation should be able to do exactly what Stratus does and nothing more, and the
manifests should not drift from the code: a new action in the catalog must widen the write
role, and a removed one must narrow it. So the write permissions are computed from the
catalog (each action's kinds and operation, what its undo and its recovery fence send, the
related objects its plan lists), and the read permissions from ``READS``, the kinds the read
layer lists and gets (``tools.reads``, ``agents.snapshot``, ``agents.health``, the executor's
re-reads). ``tools.rbac`` turns them into RBAC objects, ``stratus deploy rbac`` prints them,
and a test fails when the shipped manifests grant more or less.

Secrets are deliberately apart (``Permissions.secrets``): reading a Secret hands over its
values, and RBAC cannot narrow ``list`` or ``create`` to names known in advance (the undo
keepers are named after executions). Nothing binds them by default: the credential analyzer
then sees no Secrets and ``restore-secret-key`` is refused by the cluster. An operator who
wants both binds the opt-in ``stratus-secrets`` role in chosen namespaces (docs/deploy.md).

Everything here is pure: dicts and frozensets in, dicts out.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from tools.actions import CATALOG, Action

LEADER_LEASE = "stratus-leader"  # the Lease the one active instance holds (issue 19 §2)


@dataclass(frozen=True)
class Resource:
    """Where a kind lives in the API, as RBAC names it."""

    group: str
    plural: str
    namespaced: bool = True


RESOURCES: dict[str, Resource] = {
    "Pod": Resource("", "pods"),
    "Service": Resource("", "services"),
    "Endpoints": Resource("", "endpoints"),
    "Event": Resource("", "events"),
    "ConfigMap": Resource("", "configmaps"),
    "Secret": Resource("", "secrets"),
    "PersistentVolumeClaim": Resource("", "persistentvolumeclaims"),
    "ResourceQuota": Resource("", "resourcequotas"),
    "LimitRange": Resource("", "limitranges"),
    "Namespace": Resource("", "namespaces", namespaced=False),
    "Node": Resource("", "nodes", namespaced=False),
    "Deployment": Resource("apps", "deployments"),
    "StatefulSet": Resource("apps", "statefulsets"),
    "DaemonSet": Resource("apps", "daemonsets"),
    "ReplicaSet": Resource("apps", "replicasets"),
    "ControllerRevision": Resource("apps", "controllerrevisions"),
    "HorizontalPodAutoscaler": Resource("autoscaling", "horizontalpodautoscalers"),
    "NetworkPolicy": Resource("networking.k8s.io", "networkpolicies"),
    "Job": Resource("batch", "jobs"),
    "CronJob": Resource("batch", "cronjobs"),
    "StorageClass": Resource("storage.k8s.io", "storageclasses", namespaced=False),
    "Lease": Resource("coordination.k8s.io", "leases"),
}

# What the read layer reads, kind → verbs. Every namespaced kind a look lists
# (``agents.snapshot.NAMESPACED``), the ones read by name (a pod's status, a Service and its
# Endpoints, a Deployment's history, every catalog target the executor re-reads), and the
# cluster-scoped ones (the namespace asked about, nodes, storage classes). No ``watch``:
# nothing in Stratus watches. Secrets are not here: see the module docstring.
READS: dict[str, frozenset[str]] = {
    kind: frozenset({"get", "list"})
    for kind in (
        "Pod",
        "Deployment",
        "ReplicaSet",
        "StatefulSet",
        "DaemonSet",
        "Service",
        "Endpoints",
        "Event",
        "ConfigMap",
        "PersistentVolumeClaim",
        "ResourceQuota",
        "LimitRange",
        "HorizontalPodAutoscaler",
        "NetworkPolicy",
        "ControllerRevision",
        "Job",
        "CronJob",
        "Node",
        "StorageClass",
    )
} | {"Namespace": frozenset({"get"})}
# Subresources the read layer reads: container logs (``tools.reads.logs``, snapshot tails).
READ_SUBRESOURCES: dict[str, tuple[str, frozenset[str]]] = {
    "Pod": ("log", frozenset({"get"})),
}
# A Node is registered by its kubelet: an undo forced over a deleted Node never re-creates
# it (the cluster refuses, which is right), so ``create nodes`` is never granted.
NEVER_RECREATED = frozenset({"Node"})


@dataclass(frozen=True, order=True)
class Grant:
    """One permission: a verb on a resource (``pods``, ``pods/log``) of an API group,
    optionally only on named objects."""

    group: str
    resource: str
    verb: str
    name: str = ""


@dataclass(frozen=True)
class Permissions:
    """What Stratus needs, by where it is bound."""

    read: frozenset[Grant]  # namespaced reads, in every managed namespace
    read_cluster: frozenset[Grant]  # cluster-scoped reads (nodes, storage classes, namespaces)
    write: frozenset[Grant]  # namespaced writes of the catalog, in every managed namespace
    write_cluster: frozenset[Grant]  # cluster-scoped writes of the catalog (nodes)
    secrets: frozenset[Grant]  # opt-in: Secrets read and written (see the module docstring)
    leader: frozenset[Grant]  # the leader Lease, in Stratus's own namespace


def action_verbs(action: type[Action], kind: str) -> frozenset[str]:
    """The write verbs one catalog action needs on ``kind``: its own write, its dry-run (the
    same verb), the recovery fence of a write whose answer was lost, and the write its undo
    sends (itself fenced the same way).

    A replace is undone by a replace, or — forced over an object deleted since — by a create.
    A create is undone by a delete. A delete that can be undone is undone by a create, or —
    forced over an object re-created since — by a replace. A fence (``tools.fences``) is the
    approved create itself for a create, and for a replace or a delete a replace of the
    object as read with an annotation: so whatever is ever deleted needs ``update`` too.
    Stratus never patches: every write is a full replace with the resourceVersion it planned
    on."""
    writes: set[str] = set()
    if action.operation == "replace":
        writes.add("replace")
        if action.reversible and kind not in NEVER_RECREATED:
            writes.add("create")
    elif action.operation == "create":
        writes.add("create")
        if action.reversible:
            writes.add("delete")
    elif action.operation == "delete":
        writes.add("delete")
        if action.reversible and kind not in NEVER_RECREATED:
            writes.update(("create", "replace"))
    else:  # pragma: no cover - a new operation must be thought about here
        raise ValueError(f"{action.name}: unknown operation {action.operation!r}")
    verbs = {"update" if write == "replace" else write for write in writes}
    if "delete" in writes:
        verbs.add("update")  # the fence of a delete whose answer was lost
    return frozenset(verbs)


def _related_kinds(action: type[Action]) -> set[str]:
    """Kinds an action's plan lists besides its target (a rollout undo's revisions).
    ``related()`` is an instance method that depends on the target's kind, so it is asked
    of one instance per kind."""
    kinds: set[str] = set()
    for kind in action.kinds:
        instance = action.model_construct(kind=kind, target="x", namespace="x")
        related = instance.related()
        if related is not None:
            kinds.add(related[1])
    return kinds


def _grant(kind: str, verb: str, *, subresource: str = "", name: str = "") -> Grant:
    resource = RESOURCES[kind]
    plural = f"{resource.plural}/{subresource}" if subresource else resource.plural
    return Grant(resource.group, plural, verb, name)


def derive(
    catalog: Mapping[str, type[Action]] = CATALOG,
    reads: Mapping[str, frozenset[str]] = READS,
) -> Permissions:
    """The permissions for ``catalog`` and ``reads`` (by default: Stratus's own)."""
    read: set[Grant] = set()
    read_cluster: set[Grant] = set()
    write: set[Grant] = set()
    write_cluster: set[Grant] = set()
    secrets: set[Grant] = set()
    wanted_reads = {kind: set(verbs) for kind, verbs in reads.items()}
    for action in catalog.values():
        for kind in action.kinds:
            # The executor reads every target before it plans, and again under the lock.
            wanted_reads.setdefault(kind, set()).add("get")
            for verb in action_verbs(action, kind):
                grant = _grant(kind, verb)
                if kind == "Secret":
                    secrets.add(grant)
                elif RESOURCES[kind].namespaced:
                    write.add(grant)
                else:
                    write_cluster.add(grant)
            if kind == "Secret" and action.operation != "create":
                # The keeper of the values an overwrite replaces (``tools.secrets``): created
                # before the write, read by its undo, deleted after.
                secrets.update(_grant("Secret", verb) for verb in ("create", "get", "delete"))
        for kind in _related_kinds(action):
            wanted_reads.setdefault(kind, set()).add("list")
    for kind, verbs in wanted_reads.items():
        for verb in verbs:
            grant = _grant(kind, verb)
            if kind == "Secret":
                secrets.add(grant)
            elif RESOURCES[kind].namespaced:
                read.add(grant)
            else:
                read_cluster.add(grant)
    for kind, (subresource, sub_verbs) in READ_SUBRESOURCES.items():
        read.update(_grant(kind, verb, subresource=subresource) for verb in sub_verbs)
    # The credential analyzer reads Secrets (their values become digests at once) when it may.
    secrets.update(_grant("Secret", verb) for verb in ("get", "list"))
    leader = {
        # RBAC cannot limit ``create`` to a name: the object does not exist yet.
        _grant("Lease", "create"),
        _grant("Lease", "get", name=LEADER_LEASE),
        _grant("Lease", "update", name=LEADER_LEASE),
    }
    return Permissions(
        read=frozenset(read),
        read_cluster=frozenset(read_cluster),
        write=frozenset(write),
        write_cluster=frozenset(write_cluster),
        secrets=frozenset(secrets),
        leader=frozenset(leader),
    )
