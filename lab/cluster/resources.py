"""The resource types the emulator serves, as discovery describes them.

One table drives discovery, routing, short-name resolution in kubectl and the list kinds, so
adding a resource type is adding one line here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

READ_VERBS = ("get", "list", "watch")
ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class ResourceType:
    """One served resource: where it lives in the API and how clients name it."""

    group: str
    version: str
    kind: str
    plural: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    verbs: tuple[str, ...] = ALL_VERBS
    field_selectors: tuple[str, ...] = field(default=())

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def singular(self) -> str:
        return self.kind.lower()

    @property
    def key(self) -> str:
        """Storage key: the plural qualified by its group (``deployments.apps``)."""
        return f"{self.plural}.{self.group}" if self.group else self.plural

    @property
    def list_kind(self) -> str:
        return f"{self.kind}List"


_CREATE_ONLY = ("create",)
# RBAC objects, and the review kinds that are only ever created (answered, never stored).
RBAC_TYPES: tuple[ResourceType, ...] = (
    ResourceType("rbac.authorization.k8s.io", "v1", "Role", "roles", True),
    ResourceType("rbac.authorization.k8s.io", "v1", "RoleBinding", "rolebindings", True),
    ResourceType("rbac.authorization.k8s.io", "v1", "ClusterRole", "clusterroles", False),
    ResourceType(
        "rbac.authorization.k8s.io", "v1", "ClusterRoleBinding", "clusterrolebindings", False
    ),
    ResourceType(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectAccessReview",
        "selfsubjectaccessreviews",
        False,
        verbs=_CREATE_ONLY,
    ),
    ResourceType(
        "authorization.k8s.io",
        "v1",
        "SelfSubjectRulesReview",
        "selfsubjectrulesreviews",
        False,
        verbs=_CREATE_ONLY,
    ),
    ResourceType(
        "authorization.k8s.io",
        "v1",
        "SubjectAccessReview",
        "subjectaccessreviews",
        False,
        verbs=_CREATE_ONLY,
    ),
    ResourceType(
        "authorization.k8s.io",
        "v1",
        "LocalSubjectAccessReview",
        "localsubjectaccessreviews",
        True,
        verbs=_CREATE_ONLY,
    ),
    ResourceType(
        "authentication.k8s.io", "v1", "TokenReview", "tokenreviews", False, verbs=_CREATE_ONLY
    ),
    ResourceType(
        "authentication.k8s.io",
        "v1",
        "SelfSubjectReview",
        "selfsubjectreviews",
        False,
        verbs=_CREATE_ONLY,
    ),
)
REVIEW_KINDS = frozenset(rt.plural for rt in RBAC_TYPES if rt.verbs == _CREATE_ONLY)

_POD_FIELDS = (
    "spec.nodeName",
    "spec.restartPolicy",
    "spec.schedulerName",
    "spec.serviceAccountName",
    "status.phase",
    "status.podIP",
    "status.nominatedNodeName",
)
_EVENT_FIELDS = (
    "involvedObject.kind",
    "involvedObject.namespace",
    "involvedObject.name",
    "involvedObject.uid",
    "involvedObject.apiVersion",
    "involvedObject.resourceVersion",
    "involvedObject.fieldPath",
    "reason",
    "reportingComponent",
    "source",
    "type",
)

RESOURCE_TYPES: tuple[ResourceType, ...] = (
    ResourceType(
        "",
        "v1",
        "Namespace",
        "namespaces",
        False,
        ("ns",),
        ("status",),
        field_selectors=("status.phase",),
    ),
    ResourceType(
        "",
        "v1",
        "Node",
        "nodes",
        False,
        ("no",),
        ("status",),
        field_selectors=("spec.unschedulable",),
    ),
    ResourceType(
        "",
        "v1",
        "Pod",
        "pods",
        True,
        ("po",),
        ("log", "status", "eviction", "exec", "attach", "portforward"),
        ("all",),
        field_selectors=_POD_FIELDS,
    ),
    ResourceType("", "v1", "Service", "services", True, ("svc",), ("status",), ("all",)),
    ResourceType("", "v1", "Endpoints", "endpoints", True, ("ep",)),
    ResourceType("", "v1", "Event", "events", True, ("ev",), field_selectors=_EVENT_FIELDS),
    ResourceType("", "v1", "ConfigMap", "configmaps", True, ("cm",)),
    ResourceType("", "v1", "Secret", "secrets", True, field_selectors=("type",)),
    ResourceType("", "v1", "ServiceAccount", "serviceaccounts", True, ("sa",), ("token",)),
    ResourceType(
        "", "v1", "PersistentVolumeClaim", "persistentvolumeclaims", True, ("pvc",), ("status",)
    ),
    ResourceType("", "v1", "ResourceQuota", "resourcequotas", True, ("quota",), ("status",)),
    ResourceType("", "v1", "LimitRange", "limitranges", True, ("limits",)),
    ResourceType(
        "apps", "v1", "Deployment", "deployments", True, ("deploy",), ("scale", "status"), ("all",)
    ),
    ResourceType(
        "apps",
        "v1",
        "ReplicaSet",
        "replicasets",
        True,
        ("rs",),
        ("scale", "status"),
        ("all",),
        field_selectors=("status.replicas",),
    ),
    ResourceType(
        "apps", "v1", "StatefulSet", "statefulsets", True, ("sts",), ("scale", "status"), ("all",)
    ),
    ResourceType("apps", "v1", "DaemonSet", "daemonsets", True, ("ds",), ("status",), ("all",)),
    ResourceType("discovery.k8s.io", "v1", "EndpointSlice", "endpointslices", True),
    ResourceType("networking.k8s.io", "v1", "NetworkPolicy", "networkpolicies", True, ("netpol",)),
    ResourceType(
        "autoscaling",
        "v2",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        True,
        ("hpa",),
        ("status",),
        ("all",),
    ),
    ResourceType("storage.k8s.io", "v1", "StorageClass", "storageclasses", False, ("sc",)),
    # Served in a second version, stored in the first (lab.cluster.conversion).
    ResourceType(
        "autoscaling",
        "v1",
        "HorizontalPodAutoscaler",
        "horizontalpodautoscalers",
        True,
        ("hpa",),
        ("status",),
        ("all",),
    ),
    ResourceType("", "v1", "PersistentVolume", "persistentvolumes", False, ("pv",), ("status",)),
    ResourceType("apps", "v1", "ControllerRevision", "controllerrevisions", True),
    ResourceType("batch", "v1", "Job", "jobs", True, (), ("status",), ("all",)),
    ResourceType("batch", "v1", "CronJob", "cronjobs", True, ("cj",), ("status",), ("all",)),
    ResourceType(
        "policy", "v1", "PodDisruptionBudget", "poddisruptionbudgets", True, ("pdb",), ("status",)
    ),
    ResourceType(
        "",
        "v1",
        "ReplicationController",
        "replicationcontrollers",
        True,
        ("rc",),
        ("scale", "status"),
        ("all",),
    ),
    ResourceType(
        "apiregistration.k8s.io", "v1", "APIService", "apiservices", False, (), ("status",)
    ),
    # Leader election (Stratus's one active instance, as every controller's).
    ResourceType("coordination.k8s.io", "v1", "Lease", "leases", True),
    *RBAC_TYPES,
)

# A kind served in two versions is stored as the first listed (its preferred version).
_BY_KEY = {rt.key: rt for rt in reversed(RESOURCE_TYPES)}
_BY_PATH = {(rt.group, rt.version, rt.plural): rt for rt in RESOURCE_TYPES}
_BY_KIND = {rt.kind: rt for rt in reversed(RESOURCE_TYPES)}


def by_path(group: str, version: str, plural: str) -> ResourceType | None:
    """The resource served at ``/apis/{group}/{version}/{plural}`` (group '' is core)."""
    return _BY_PATH.get((group, version, plural))


def by_kind(kind: str) -> ResourceType:
    """The resource type of a kind; raises KeyError for kinds the emulator does not serve."""
    return _BY_KIND[kind]


def by_key(key: str) -> ResourceType:
    return _BY_KEY[key]


def groups() -> dict[str, list[str]]:
    """Served non-core groups and their versions, in discovery order."""
    served: dict[str, list[str]] = {}
    for rt in RESOURCE_TYPES:
        if rt.group and rt.version not in served.setdefault(rt.group, []):
            served[rt.group].append(rt.version)
    return served


def in_group_version(group: str, version: str) -> list[ResourceType]:
    return [rt for rt in RESOURCE_TYPES if rt.group == group and rt.version == version]
