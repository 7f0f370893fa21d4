"""``[KIND/]NAME`` targets as kubectl users type them."""

from __future__ import annotations

from store.errors import Remedy
from tools.errors import Invalid

KIND_ALIASES = {
    "deploy": "Deployment",
    "deployment": "Deployment",
    "deployments": "Deployment",
    "sts": "StatefulSet",
    "statefulset": "StatefulSet",
    "statefulsets": "StatefulSet",
    "ds": "DaemonSet",
    "daemonset": "DaemonSet",
    "daemonsets": "DaemonSet",
    "svc": "Service",
    "service": "Service",
    "services": "Service",
    "cm": "ConfigMap",
    "configmap": "ConfigMap",
    "configmaps": "ConfigMap",
    "no": "Node",
    "node": "Node",
    "nodes": "Node",
    "po": "Pod",
    "pod": "Pod",
    "pods": "Pod",
    "netpol": "NetworkPolicy",
    "networkpolicy": "NetworkPolicy",
    "networkpolicies": "NetworkPolicy",
    "hpa": "HorizontalPodAutoscaler",
    "horizontalpodautoscaler": "HorizontalPodAutoscaler",
    "horizontalpodautoscalers": "HorizontalPodAutoscaler",
    "secret": "Secret",
    "secrets": "Secret",
    "quota": "ResourceQuota",
    "resourcequota": "ResourceQuota",
    "resourcequotas": "ResourceQuota",
    "pvc": "PersistentVolumeClaim",
    "persistentvolumeclaim": "PersistentVolumeClaim",
    "persistentvolumeclaims": "PersistentVolumeClaim",
    "cj": "CronJob",
    "cronjob": "CronJob",
    "cronjobs": "CronJob",
    "job": "Job",
    "jobs": "Job",
}


def parse_target(target: str, default_kind: str) -> tuple[str, str]:
    """(kind, name). The name is checked later, with the namespace, by ``ObjectRef``; here a
    second ``/`` is refused outright so ``deployment/geo/status`` cannot mean anything."""
    kind_text, sep, name = target.partition("/")
    if not sep:
        return default_kind, target
    kind = KIND_ALIASES.get(kind_text.lower())
    if kind is None:
        raise Invalid(
            f"unknown kind {kind_text!r} in {target!r}; known: "
            f"{', '.join(sorted(set(KIND_ALIASES)))}",
            remedy=Remedy.FIX_INPUT,
        )
    if "/" in name:
        raise Invalid(f"{target!r} is not KIND/NAME: a name has no '/'")
    return kind, name
