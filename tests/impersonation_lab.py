"""A lab with RBAC on, set up as a cluster where Stratus writes as the approver: a
``stratus`` ServiceAccount that may read everything and write nothing, but may impersonate
``alice``, ``bob`` and the ``hotel-operators`` group; ``alice`` may change deployments in
``hotel``, ``bob`` may only read them (a ``view`` ClusterRole, created unless the lab has
one). Shared by the lab's impersonation tests and Stratus's.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from kubernetes import client, config

from lab.runner import LabServer

SA_USER = "system:serviceaccount:stratus:stratus"

_OBJECTS: list[dict[str, Any]] = [
    {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "stratus"}},
    {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "stratus", "namespace": "stratus"},
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "stratus-read"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "stratus-impersonate"},
        "rules": [
            {
                "apiGroups": [""],
                "resources": ["users"],
                "verbs": ["impersonate"],
                "resourceNames": ["alice", "bob"],
            },
            {
                "apiGroups": [""],
                "resources": ["groups"],
                "verbs": ["impersonate"],
                "resourceNames": ["hotel-operators"],
            },
        ],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "deployment-operator", "namespace": "hotel"},
        "rules": [
            {
                "apiGroups": ["apps"],
                "resources": ["deployments", "deployments/scale"],
                "verbs": ["get", "list", "watch", "patch", "update"],
            }
        ],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "alice-operates", "namespace": "hotel"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "Role",
            "name": "deployment-operator",
        },
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "alice"}],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "bob-views", "namespace": "hotel"},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": "view"},
        "subjects": [{"apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": "bob"}],
    },
    {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRole",
        "metadata": {"name": "view"},
        "rules": [{"apiGroups": ["*"], "resources": ["*"], "verbs": ["get", "list", "watch"]}],
    },
]


def _binding(name: str, role: str) -> dict[str, Any]:
    return {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": name},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "ClusterRole", "name": role},
        "subjects": [{"kind": "ServiceAccount", "name": "stratus", "namespace": "stratus"}],
    }


def set_up(server: LabServer, admin_kubeconfig: Path, sa_kubeconfig: Path) -> Path:
    """Create the objects above as the admin; write a kubeconfig holding the account's token."""
    api = config.new_client_from_config(str(admin_kubeconfig))
    try:
        core, rbac = client.CoreV1Api(api), client.RbacAuthorizationV1Api(api)
        objects = [*_OBJECTS, _binding("stratus-read", "stratus-read")]
        objects.append(_binding("stratus-impersonate", "stratus-impersonate"))
        for obj in objects:
            kind = obj["kind"]
            if kind == "Namespace":
                core.create_namespace(obj)
            elif kind == "ServiceAccount":
                core.create_namespaced_service_account("stratus", obj)
            elif kind == "ClusterRole":
                try:
                    rbac.create_cluster_role(obj)
                except client.ApiException as exc:
                    if exc.status != 409:  # a lab that ships ``view`` keeps its own
                        raise
            elif kind == "ClusterRoleBinding":
                rbac.create_cluster_role_binding(obj)
            elif kind == "Role":
                rbac.create_namespaced_role(obj["metadata"]["namespace"], obj)
            else:
                rbac.create_namespaced_role_binding(obj["metadata"]["namespace"], obj)
        request = client.AuthenticationV1TokenRequest(
            spec=client.V1TokenRequestSpec(audiences=[], expiration_seconds=3600)
        )
        token = core.create_namespaced_service_account_token("stratus", "stratus", request)
    finally:
        api.close()
    return server.write_kubeconfig(sa_kubeconfig, "hotel", token=token.status.token, user="stratus")
