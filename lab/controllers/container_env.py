"""A simulated container's whole environment, as the kubelet and containerd build it at start.

Real containers see much more than the pod's ``env``: scripts read ``$HOSTNAME``,
``$KUBERNETES_SERVICE_HOST`` and ``$PGDATA``, and a ``kubectl exec … -- env`` in a cluster
lists them all. In containerd's order:

1. ``PATH`` (the image's, else the runtime default), ``HOSTNAME`` (the pod's host name), then
   the image's own ``ENV`` (``lab/image_env.py``);
2. the container's configured environment, which replaces an image variable of the same name:
   its ``envFrom`` and ``env`` (``value`` with ``$(VAR)`` references expanded from the
   variables before it and the Service variables, ``$$`` escaping), then the Service variables
   the kubelet adds for every Service with a cluster IP — the ``kubernetes`` Service of
   ``default`` always, the Services of the pod's namespace unless ``enableServiceLinks:
   false`` — that existed when the container started (Docker-link style: ``WEB_SERVICE_HOST``,
   ``WEB_SERVICE_PORT_HTTP``, ``WEB_PORT_80_TCP_ADDR`` …; a name the pod sets itself wins);
3. ``HOME`` (``/root``) when nothing set it, as runc does.

The configured part alone (what ``resolve_environment`` resolves) is what a crash loop
compares to decide whether a restart would start differently; Services do not wake it.
"""

from __future__ import annotations

from typing import Any

from lab.cluster.store import ObjectStore
from lab.controllers import process_spec
from lab.image_env import DEFAULT_PATH, image_environment
from lab.images import ImageCatalog

MASTER_NAMESPACE = "default"
MASTER_SERVICE = "kubernetes"


def link_services(store: ObjectStore, pod: dict[str, Any]) -> list[dict[str, Any]]:
    """The Services whose variables the kubelet gives the pod's containers, by name (one of
    the pod's namespace shadows the master Service of the same name)."""
    namespace = pod["metadata"]["namespace"]
    chosen: dict[str, dict[str, Any]] = {}
    if (pod.get("spec") or {}).get("enableServiceLinks", True) is not False:
        for service in store.list_objects("services", namespace):
            chosen[str(service["metadata"]["name"])] = service
    master = store.get("services", MASTER_NAMESPACE, MASTER_SERVICE)
    if master is not None:
        chosen.setdefault(MASTER_SERVICE, master)
    return [chosen[name] for name in sorted(chosen)]


def _host_name(pod: dict[str, Any]) -> str:
    spec = pod.get("spec") or {}
    return str(spec.get("hostname") or pod["metadata"]["name"])[:63]


def build(
    store: ObjectStore,
    catalog: ImageCatalog,
    pod: dict[str, Any],
    container: dict[str, Any],
    configured: dict[str, str],
) -> dict[str, str]:
    """The environment the container's first process gets (see the module docstring)."""
    image = image_environment(catalog, str(container.get("image", "")))
    env: dict[str, str] = {"PATH": image.pop("PATH", DEFAULT_PATH), "HOSTNAME": _host_name(pod)}
    env.update(image)
    services = process_spec.service_variables(link_services(store, pod))
    literal = {str(v.get("name")) for v in container.get("env") or [] if "value" in v}
    declared: dict[str, str] = {}
    for name, value in configured.items():
        declared[name] = (
            process_spec.expand(value, {**services, **declared}) if name in literal else value
        )
    env.update(declared)
    for name, value in services.items():
        if name not in declared:
            env[name] = value
    env.setdefault("HOME", "/root")
    return env
