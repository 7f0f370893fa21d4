"""What the API server does to an object before it is stored: defaulting and validation.

Defaults are the ones kubectl output and clients rely on (restartPolicy, imagePullPolicy,
deployment strategy, service targetPort …), so that objects read back look like a real
cluster's. Validation rejects what a real server rejects with 422 Invalid, naming the field.
"""

from __future__ import annotations

import base64
import re
from typing import Any

from lab.cluster import quantity
from lab.cluster.errors import ApiError, invalid
from lab.cluster.resources import ResourceType

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_LABEL_VALUE = re.compile(r"^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$")
_LABEL_KEY = re.compile(
    r"^([a-z0-9]([-a-z0-9.]*[a-z0-9])?/)?[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$"
)
_CONFIG_KEY = re.compile(r"^[-._a-zA-Z0-9]+$")
_LABEL_NAMED = ("namespaces", "services")
_WORKLOADS = ("deployments", "replicasets", "statefulsets", "daemonsets")


# ---------------------------------------------------------------- defaulting


def _default_probe(probe: dict[str, Any] | None) -> None:
    if not probe:
        return
    for key, value in (
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ):
        probe.setdefault(key, value)
    if "httpGet" in probe:
        probe["httpGet"].setdefault("scheme", "HTTP")
        probe["httpGet"].setdefault("path", "/")


def _default_container(container: dict[str, Any]) -> None:
    image = str(container.get("image", ""))
    tag = image.rsplit(":", 1)[1] if ":" in image.rsplit("/", 1)[-1] else "latest"
    container.setdefault("imagePullPolicy", "Always" if tag == "latest" else "IfNotPresent")
    container.setdefault("terminationMessagePath", "/dev/termination-log")
    container.setdefault("terminationMessagePolicy", "File")
    container.setdefault("resources", {})
    for port in container.get("ports") or []:
        port.setdefault("protocol", "TCP")
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        _default_probe(container.get(probe))


def default_pod_spec(spec: dict[str, Any]) -> None:
    spec.setdefault("restartPolicy", "Always")
    spec.setdefault("dnsPolicy", "ClusterFirst")
    spec.setdefault("schedulerName", "default-scheduler")
    spec.setdefault("terminationGracePeriodSeconds", 30)
    spec.setdefault("securityContext", {})
    if "serviceAccountName" in spec or "serviceAccount" in spec:
        name = spec.get("serviceAccountName") or spec.get("serviceAccount")
        spec["serviceAccountName"] = spec["serviceAccount"] = name
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        if isinstance(container, dict):
            _default_container(container)


def _default_template(spec: dict[str, Any]) -> None:
    template = spec.setdefault("template", {})
    template.setdefault("metadata", {})
    default_pod_spec(template.setdefault("spec", {}))


_DEFAULT_TOLERATED = ("node.kubernetes.io/not-ready", "node.kubernetes.io/unreachable")


def _default_tolerations(spec: dict[str, Any]) -> None:
    """The DefaultTolerationSeconds admission plugin: 300 s on not-ready and unreachable."""
    tolerations = spec.get("tolerations") or []
    if not isinstance(tolerations, list):
        return
    for key in _DEFAULT_TOLERATED:
        covered = any(
            isinstance(t, dict)
            and t.get("effect", "NoExecute") in ("", "NoExecute")
            and (t.get("key") == key or (not t.get("key") and t.get("operator") == "Exists"))
            for t in tolerations
        )
        if not covered:
            tolerations.append(
                {"key": key, "operator": "Exists", "effect": "NoExecute", "tolerationSeconds": 300}
            )
    spec["tolerations"] = tolerations


def qos_class(spec: dict[str, Any]) -> str:
    """Guaranteed (every container limits = requests for CPU and memory), BestEffort (none
    sets any), or Burstable."""
    containers = [*(spec.get("containers") or []), *(spec.get("initContainers") or [])]
    any_set, guaranteed = False, bool(containers)
    for container in containers:
        resources = (container.get("resources") if isinstance(container, dict) else None) or {}
        limits, requests = resources.get("limits") or {}, resources.get("requests") or {}
        any_set = any_set or bool(limits) or bool(requests)
        for name in ("cpu", "memory"):
            limit = limits.get(name)
            request = requests.get(name, limit)
            valid = quantity.is_valid(limit) and quantity.is_valid(request)
            if not valid or quantity.parse(limit) != quantity.parse(request):
                guaranteed = False
    if not any_set:
        return "BestEffort"
    return "Guaranteed" if guaranteed else "Burstable"


def apply_defaults(rt: ResourceType, obj: dict[str, Any]) -> None:
    spec = obj.get("spec")
    if rt.plural == "pods" and isinstance(spec, dict):
        default_pod_spec(spec)
        if "serviceAccountName" not in spec:
            spec["serviceAccountName"] = spec["serviceAccount"] = "default"
        if not (obj.get("status") or {}).get("phase"):  # a create: what the API server adds
            obj["status"] = {"phase": "Pending", "qosClass": qos_class(spec)}
            _default_tolerations(spec)
    elif rt.plural in _WORKLOADS and isinstance(spec, dict):
        _default_template(spec)
        if rt.plural != "daemonsets":
            spec.setdefault("replicas", 1)
        if rt.plural != "replicasets":
            spec.setdefault("revisionHistoryLimit", 10)
        if rt.plural == "deployments":
            spec.setdefault("progressDeadlineSeconds", 600)
            strategy = spec.setdefault("strategy", {"type": "RollingUpdate"})
            if strategy.get("type", "RollingUpdate") == "RollingUpdate":
                strategy["type"] = "RollingUpdate"
                rolling = strategy.setdefault("rollingUpdate", {})
                rolling.setdefault("maxUnavailable", "25%")
                rolling.setdefault("maxSurge", "25%")
        elif rt.plural == "statefulsets":
            spec.setdefault("podManagementPolicy", "OrderedReady")
            spec.setdefault(
                "updateStrategy", {"type": "RollingUpdate", "rollingUpdate": {"partition": 0}}
            )
        elif rt.plural == "daemonsets":
            spec.setdefault(
                "updateStrategy",
                {
                    "type": "RollingUpdate",
                    "rollingUpdate": {"maxUnavailable": 1, "maxSurge": 0},
                },
            )
    elif rt.plural == "replicationcontrollers" and isinstance(spec, dict):
        _default_template(spec)
        spec.setdefault("replicas", 1)
        labels = spec["template"]["metadata"].get("labels") or {}
        if not spec.get("selector") and labels:
            spec["selector"] = dict(labels)
        elif spec.get("selector") and not labels:
            spec["template"]["metadata"]["labels"] = dict(spec["selector"])
        if isinstance(obj.get("metadata"), dict) and not obj["metadata"].get("labels"):
            template_labels = spec["template"]["metadata"].get("labels") or {}
            if template_labels:
                obj["metadata"]["labels"] = dict(template_labels)
    elif rt.plural == "services" and isinstance(spec, dict):
        if not obj.get("status"):
            obj["status"] = {"loadBalancer": {}}
        spec.setdefault("type", "ClusterIP")
        spec.setdefault("sessionAffinity", "None")
        spec.setdefault("ipFamilies", ["IPv4"])
        spec.setdefault("ipFamilyPolicy", "SingleStack")
        spec.setdefault("internalTrafficPolicy", "Cluster")
        for port in spec.get("ports") or []:
            if isinstance(port, dict):
                port.setdefault("protocol", "TCP")
                port.setdefault("targetPort", port.get("port"))
    elif rt.plural == "secrets":
        obj.setdefault("type", "Opaque")
        string_data = obj.pop("stringData", None) or {}
        data = obj.setdefault("data", {})
        for key, value in string_data.items():
            data[key] = base64.b64encode(str(value).encode()).decode()
    elif rt.plural == "persistentvolumeclaims" and isinstance(spec, dict):
        spec.setdefault("volumeMode", "Filesystem")
    elif rt.plural == "namespaces":
        if not (obj.get("spec") or {}).get("finalizers"):
            obj["spec"] = {**(obj.get("spec") or {}), "finalizers": ["kubernetes"]}
        if not (obj.get("status") or {}).get("phase"):
            obj["status"] = {**(obj.get("status") or {}), "phase": "Active"}
        # The API server labels every namespace with its own name (and keeps it so).
        meta = obj.setdefault("metadata", {})
        if isinstance(meta, dict) and meta.get("name"):
            labels = meta.get("labels") or {}
            meta["labels"] = {**labels, "kubernetes.io/metadata.name": meta["name"]}


# ---------------------------------------------------------------- validation


class _Problems:
    def __init__(self) -> None:
        self.items: list[tuple[str, str]] = []

    def add(self, field: str, message: str) -> None:
        self.items.append((field, message))


def _validate_labels(labels: Any, field: str, problems: _Problems) -> None:
    if labels is None:
        return
    if not isinstance(labels, dict):
        problems.add(field, "Invalid value: must be a map of strings")
        return
    for key, value in labels.items():
        if not _LABEL_KEY.match(str(key)) or len(str(key).split("/")[-1]) > 63:
            problems.add(
                field,
                f'Invalid value: "{key}": name part must consist of alphanumeric '
                "characters, '-', '_' or '.'",
            )
        if not isinstance(value, str) or not _LABEL_VALUE.match(value) or len(value) > 63:
            problems.add(
                field,
                f'Invalid value: "{value}": a valid label must be an empty string '
                "or consist of alphanumeric characters, '-', '_' or '.'",
            )


def _validate_resources(resources: Any, field: str, problems: _Problems) -> None:
    if not isinstance(resources, dict):
        return
    for section in ("requests", "limits"):
        for name, value in (resources.get(section) or {}).items():
            if not quantity.is_valid(value):
                problems.add(
                    f"{field}.{section}[{name}]",
                    f'Invalid value: "{value}": quantities must match the regular '
                    "expression '^([+-]?[0-9.]+)([eEinumkKMGTP]*[-+]?[0-9]*)$'",
                )


def _validate_pod_spec(spec: Any, field: str, problems: _Problems) -> None:
    if not isinstance(spec, dict):
        problems.add(field, "Required value")
        return
    containers = spec.get("containers")
    if not isinstance(containers, list) or not containers:
        problems.add(f"{field}.containers", "Required value")
        return
    seen: set[str] = set()
    groups = (("containers", containers), ("initContainers", spec.get("initContainers") or []))
    for group, items in groups:
        for index, container in enumerate(items):
            where = f"{field}.{group}[{index}]"
            if not isinstance(container, dict):
                problems.add(where, "Invalid value: must be an object")
                continue
            name = container.get("name")
            if not name:
                problems.add(f"{where}.name", "Required value")
            elif not _DNS_LABEL.match(str(name)):
                problems.add(
                    f"{where}.name",
                    f'Invalid value: "{name}": a lowercase RFC 1123 label '
                    "must consist of lower case alphanumeric characters "
                    "or '-'",
                )
            elif name in seen:
                problems.add(f"{where}.name", f'Duplicate value: "{name}"')
            seen.add(str(name))
            if not container.get("image"):
                problems.add(f"{where}.image", "Required value")
            for p_index, port in enumerate(container.get("ports") or []):
                number = port.get("containerPort") if isinstance(port, dict) else None
                if not isinstance(number, int) or not 0 < number < 65536:
                    problems.add(
                        f"{where}.ports[{p_index}].containerPort",
                        f"Invalid value: {number}: must be between 1 and 65535, inclusive",
                    )
            _validate_resources(container.get("resources"), f"{where}.resources", problems)


def _selector_matches_template(spec: dict[str, Any]) -> bool:
    selector = spec.get("selector") or {}
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    match_labels = selector.get("matchLabels") or {}
    return all(labels.get(k) == v for k, v in match_labels.items())


def _validate_workload(rt: ResourceType, spec: Any, problems: _Problems) -> None:
    if not isinstance(spec, dict):
        problems.add("spec", "Required value")
        return
    replicas = spec.get("replicas")
    if replicas is not None and (not isinstance(replicas, int) or replicas < 0):
        problems.add(
            "spec.replicas", f"Invalid value: {replicas}: must be greater than or equal to 0"
        )
    selector = spec.get("selector")
    if not isinstance(selector, dict) or not (
        selector.get("matchLabels") or selector.get("matchExpressions")
    ):
        problems.add("spec.selector", "Required value")
    elif not _selector_matches_template(spec):
        problems.add(
            "spec.template.metadata.labels",
            "Invalid value: `selector` does not match template `labels`",
        )
    template = spec.get("template") or {}
    _validate_labels(
        (template.get("metadata") or {}).get("labels"), "spec.template.metadata.labels", problems
    )
    _validate_pod_spec(template.get("spec"), "spec.template.spec", problems)


def _validate_service(spec: Any, problems: _Problems) -> None:
    if not isinstance(spec, dict):
        problems.add("spec", "Required value")
        return
    if spec.get("type", "ClusterIP") not in (
        "ClusterIP",
        "NodePort",
        "LoadBalancer",
        "ExternalName",
    ):
        problems.add("spec.type", f'Unsupported value: "{spec.get("type")}"')
    for index, port in enumerate(spec.get("ports") or []):
        number = port.get("port") if isinstance(port, dict) else None
        if not isinstance(number, int) or not 0 < number < 65536:
            problems.add(
                f"spec.ports[{index}].port",
                f"Invalid value: {number}: must be between 1 and 65535, inclusive",
            )
        target = port.get("targetPort") if isinstance(port, dict) else None
        if isinstance(target, int) and not 0 < target < 65536:
            problems.add(
                f"spec.ports[{index}].targetPort",
                f"Invalid value: {target}: must be between 1 and 65535, inclusive",
            )
    if spec.get("selector") is not None:
        _validate_labels(spec.get("selector"), "spec.selector", problems)


def validate(rt: ResourceType, obj: Any, old: dict[str, Any] | None = None) -> None:
    """Raise a 422 ApiError listing every problem found in ``obj``."""
    if not isinstance(obj, dict):
        raise ApiError(400, "BadRequest", "the request body must be a JSON object")
    problems = _Problems()
    meta = obj.get("metadata")
    name = ""
    if not isinstance(meta, dict):
        problems.add("metadata", "Required value")
    else:
        name = str(meta.get("name") or "")
        pattern = _DNS_LABEL if rt.plural in _LABEL_NAMED else _DNS_SUBDOMAIN
        if not name:
            problems.add("metadata.name", "Required value: name or generateName is required")
        elif rt.group == "rbac.authorization.k8s.io":  # path segment names (system:discovery)
            if name in (".", "..") or "/" in name or "%" in name:
                problems.add(
                    "metadata.name", f"Invalid value: \"{name}\": may not contain '/' or '%'"
                )
        elif not pattern.match(name) or len(name) > (63 if rt.plural in _LABEL_NAMED else 253):
            problems.add(
                "metadata.name",
                f'Invalid value: "{name}": a lowercase RFC 1123 '
                f"{'label' if rt.plural in _LABEL_NAMED else 'subdomain'} must consist "
                "of lower case alphanumeric characters, '-' or '.'",
            )
        _validate_labels(meta.get("labels"), "metadata.labels", problems)
    spec = obj.get("spec")
    if rt.plural == "pods":
        _validate_pod_spec(spec, "spec", problems)
    elif rt.plural in _WORKLOADS:
        _validate_workload(rt, spec, problems)
        if (
            old is not None
            and isinstance(spec, dict)
            and rt.group == "apps"
            and spec.get("selector") != (old.get("spec") or {}).get("selector")
        ):
            problems.add("spec.selector", "Invalid value: field is immutable")
    elif rt.plural == "replicationcontrollers" and isinstance(spec, dict):
        # A v1 selector is a plain map; validate it as a ReplicaSet's matchLabels.
        _validate_workload(
            rt, {**spec, "selector": {"matchLabels": spec.get("selector")}}, problems
        )
    elif rt.plural == "services":
        _validate_service(spec, problems)
        if old is not None and isinstance(spec, dict):
            old_ip = (old.get("spec") or {}).get("clusterIP")
            if spec.get("clusterIP") not in (None, "", old_ip):
                problems.add("spec.clusterIP", "Invalid value: field is immutable")
    elif rt.plural in ("configmaps", "secrets"):
        for section in ("data", "binaryData"):
            for key in obj.get(section) or {}:
                if not _CONFIG_KEY.match(str(key)):
                    problems.add(
                        f"{section}[{key}]",
                        f'Invalid value: "{key}": a valid config '
                        "key must consist of alphanumeric "
                        "characters, '-', '_' or '.'",
                    )
    if problems.items:
        raise invalid(rt.kind, name, problems.items, rt.group)
