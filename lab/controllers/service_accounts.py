"""Service accounts as a cluster wires them: a ``default`` account and the ``kube-root-ca.crt``
ConfigMap in every namespace, and the ServiceAccount admission plugin that refuses a pod whose
account does not exist and mounts the account's token into every container.

The token volume is what ``kubectl get pod -o yaml`` shows on any real pod: a projected
``kube-api-access-<5 random>`` volume (a bound token, the cluster's CA, the namespace) mounted
read-only at ``/var/run/secrets/kubernetes.io/serviceaccount``. Templates never carry it;
only pods, at creation, exactly as the real plugin adds it.
"""

from __future__ import annotations

from typing import Any

from lab.cluster.api import random_suffix
from lab.cluster.errors import forbidden
from lab.cluster.resources import ResourceType
from lab.controllers.context import ControllerContext

TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
TOKEN_VOLUME_PREFIX = "kube-api-access-"
ROOT_CA = "kube-root-ca.crt"
MIRROR_ANNOTATION = "kubernetes.io/config.mirror"
# The lab has no real CA; a certificate-shaped placeholder is what pods find in ca.crt.
ROOT_CA_PEM = (
    "-----BEGIN CERTIFICATE-----\n"
    "MIIDBTCCAe2gAwIBAgIIStratusLabMA0GCSqGSIb3DQEBCwUAMBUxEzARBgNVBAMT\n"
    "Cmt1YmVybmV0ZXMwHhcNMjYwMTAxMDAwMDAwWhcNMzYwMTAxMDAwMDAwWjAVMRMw\n"
    "EQYDVQQDEwprdWJlcm5ldGVzMIIBIjANBgkqhkiG9w0BAQEFAAOCAQ8AMIIBCgKC\n"
    "-----END CERTIFICATE-----\n"
)


def token_volume(name: str) -> dict[str, Any]:
    """The projected volume the plugin adds (field order as the API server prints it)."""
    return {
        "name": name,
        "projected": {
            "defaultMode": 420,
            "sources": [
                {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                {"configMap": {"name": ROOT_CA, "items": [{"key": "ca.crt", "path": "ca.crt"}]}},
                {
                    "downwardAPI": {
                        "items": [
                            {
                                "path": "namespace",
                                "fieldRef": {
                                    "apiVersion": "v1",
                                    "fieldPath": "metadata.namespace",
                                },
                            }
                        ]
                    }
                },
            ],
        },
    }


class ServiceAccountController:
    """Every namespace gets a ``default`` service account and the ``kube-root-ca.crt``
    ConfigMap (the root CA publisher), as on a real cluster."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def reconcile(self) -> None:
        for namespace in self.ctx.store.iter_all("namespaces"):
            name = namespace["metadata"]["name"]
            if (namespace.get("status") or {}).get("phase") == "Terminating":
                continue
            if self.ctx.store.get("serviceaccounts", name, "default") is None:
                self.ctx.store.create(
                    "serviceaccounts",
                    {
                        "apiVersion": "v1",
                        "kind": "ServiceAccount",
                        "metadata": {"name": "default", "namespace": name},
                    },
                )
            if self.ctx.store.get("configmaps", name, ROOT_CA) is None:
                self.ctx.store.create(
                    "configmaps",
                    {
                        "apiVersion": "v1",
                        "kind": "ConfigMap",
                        "metadata": {
                            "name": ROOT_CA,
                            "namespace": name,
                            "annotations": {
                                "kubernetes.io/description": "Contains a CA bundle that can "
                                "be used to verify the kube-apiserver when using internal "
                                "endpoints such as the internal service IP or "
                                "kubernetes.default.svc. No other usage is guaranteed across "
                                "distributions of Kubernetes clusters."
                            },
                        },
                        "data": {"ca.crt": ROOT_CA_PEM},
                    },
                )


class ServiceAccountAdmission:
    """Admission hook (pod creates): the account must exist; its token is mounted unless
    ``automountServiceAccountToken`` is false on the pod (or, unset there, on the account)."""

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx

    def __call__(
        self, operation: str, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        if rt.plural != "pods" or operation != "create":
            return
        meta = obj.get("metadata") or {}
        if MIRROR_ANNOTATION in (meta.get("annotations") or {}):
            return
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        namespace = str(meta.get("namespace") or "")
        account_name = str(spec.get("serviceAccountName") or "default")
        account = self.ctx.store.get("serviceaccounts", namespace, account_name)
        if account is None:
            # Admission runs before the name is generated: a generated name shows its prefix.
            name = str(meta.get("name") or "")
            prefix = str(meta.get("generateName") or "")
            if prefix and name.startswith(prefix) and len(name) == len(prefix) + 5:
                name = prefix
            raise forbidden(
                f'pods "{name}" is forbidden: error looking up service account '
                f'{namespace}/{account_name}: serviceaccount "{account_name}" not found',
                kind="pods",
                name=name,
            )
        automount = spec.get("automountServiceAccountToken")
        if automount is None:
            automount = account.get("automountServiceAccountToken")
        if automount is False:
            return
        mount_token(spec)


def mount_token(spec: dict[str, Any]) -> None:
    """Add the token volume and a read-only mount in every container that lacks one at the
    token path (a pod re-created from a read-back body keeps its own volume and mounts)."""
    volumes = spec.get("volumes")
    if volumes is not None and not isinstance(volumes, list):
        return
    existing = next(
        (
            v.get("name")
            for v in volumes or []
            if isinstance(v, dict) and str(v.get("name", "")).startswith(TOKEN_VOLUME_PREFIX)
        ),
        None,
    )
    volume_name = str(existing or TOKEN_VOLUME_PREFIX + random_suffix())
    needed = False
    for group in ("initContainers", "containers"):
        for container in spec.get(group) or []:
            if not isinstance(container, dict):
                continue
            mounts = container.get("volumeMounts") or []
            if not isinstance(mounts, list):
                continue
            if any(isinstance(m, dict) and m.get("mountPath") == TOKEN_MOUNT_PATH for m in mounts):
                continue
            container["volumeMounts"] = [
                *mounts,
                {"name": volume_name, "readOnly": True, "mountPath": TOKEN_MOUNT_PATH},
            ]
            needed = True
    if needed and existing is None:
        spec["volumes"] = [*(volumes or []), token_volume(volume_name)]
