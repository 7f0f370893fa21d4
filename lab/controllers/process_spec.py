"""What a real process container is started with: its command line and its environment,
built as a kubelet and a container runtime build them (pure: objects in, lists and dicts out).

- The command line follows Docker's rules (``command`` replaces the image's entrypoint and drops
  its default arguments, ``args`` replace those), ``$(VAR)`` references are expanded from the
  container's environment (``$$`` escapes), and the program is mapped to what runs it on this
  machine (``stratus`` → the lab's Python running ``-m cli``).
- The environment is the image's own (``PATH``, ``HOME``, ``HOSTNAME``…), then the Service
  variables of the pod's namespace (``SHOP_SERVICE_HOST`` …, unless ``enableServiceLinks`` is
  false), then ``KUBERNETES_SERVICE_HOST``/``PORT`` naming the lab's real address, then the
  container's ``envFrom`` and ``env`` as ``resolve_environment`` resolved them.
- Values and arguments that start with a mount path are rewritten to the mapped directory
  (``pod_files.rewrite``), and ``STRATUS_SERVICEACCOUNT_DIR`` names the directory holding the
  ServiceAccount token, since nothing can be mounted at the path the product reads by default.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from lab.controllers import pod_files
from lab.images import ImageSpec

TOKEN_MOUNT_PATH = "/var/run/secrets/kubernetes.io/serviceaccount"
SERVICEACCOUNT_DIR_ENV = "STRATUS_SERVICEACCOUNT_DIR"
_REFERENCE = re.compile(r"\$\$|\$\(([A-Za-z_][A-Za-z0-9_.\-]*)\)")


class ProgramNotFound(Exception):
    """The command line names a program the image does not have."""

    def __init__(self, program: str) -> None:
        super().__init__(program)
        self.program = program


@dataclass(frozen=True)
class Address:
    """Where the lab's API server really listens (what in-cluster clients must reach)."""

    host: str
    port: int


def expand(text: str, env: dict[str, str]) -> str:
    """Kubernetes' ``$(VAR)`` expansion: a defined variable is replaced, an undefined one is
    left as written, ``$$`` is a literal ``$``."""

    def replace(match: re.Match[str]) -> str:
        if match.group(0) == "$$":
            return "$"
        name = match.group(1)
        return env[name] if name in env else match.group(0)

    return _REFERENCE.sub(replace, text)


def command_line(image: ImageSpec, container: dict[str, Any], env: dict[str, str]) -> list[str]:
    """The words the runtime executes, before the program is mapped to this machine."""
    command = [str(w) for w in container.get("command") or []]
    args = [str(w) for w in container.get("args") or []]
    words = [*command, *args] if command else [*image.entrypoint, *(args or image.cmd)]
    return [expand(word, env) for word in words]


def host_argv(image: ImageSpec, words: list[str], python: str) -> list[str]:
    """The command line as this machine runs it: the program mapped through the image's
    ``process`` table (``python`` is the lab's own interpreter), the arguments kept."""
    if not words:
        raise ProgramNotFound("")
    program = words[0].rsplit("/", 1)[-1]
    runner = image.process.get(program)
    if runner is None:
        raise ProgramNotFound(words[0])
    return [python if w == "python" else w for w in runner] + words[1:]


def _env_name(service: str) -> str:
    return service.upper().replace("-", "_")


def service_variables(services: list[dict[str, Any]]) -> dict[str, str]:
    """The variables the kubelet gives every container for the Services of its namespace
    (those with a cluster IP), Docker-link style, as a real cluster does."""
    env: dict[str, str] = {}
    for service in services:
        spec = service.get("spec") or {}
        ip = spec.get("clusterIP")
        ports = spec.get("ports") or []
        if not ip or ip == "None" or not ports:
            continue
        name = _env_name(str(service["metadata"]["name"]))
        first = ports[0]
        env[f"{name}_SERVICE_HOST"] = str(ip)
        env[f"{name}_SERVICE_PORT"] = str(first.get("port"))
        for port in ports:
            protocol = str(port.get("protocol") or "TCP")
            number = port.get("port")
            if port.get("name"):
                env[f"{name}_SERVICE_PORT_{_env_name(str(port['name']))}"] = str(number)
            prefix = f"{name}_PORT_{number}_{protocol}"
            env[prefix] = f"{protocol.lower()}://{ip}:{number}"
            env[f"{prefix}_PROTO"] = protocol.lower()
            env[f"{prefix}_PORT"] = str(number)
            env[f"{prefix}_ADDR"] = str(ip)
        env[f"{name}_PORT"] = (
            f"{str(first.get('protocol') or 'TCP').lower()}://{ip}:{first.get('port')}"
        )
    return env


def in_cluster_variables(api: Address) -> dict[str, str]:
    """``KUBERNETES_SERVICE_*`` as a pod sees them, but naming the lab's real address: the
    lab's ``kubernetes`` Service has a cluster IP nothing on this machine answers on."""
    url = f"tcp://{api.host}:{api.port}"
    prefix = f"KUBERNETES_PORT_{api.port}_TCP"
    return {
        "KUBERNETES_SERVICE_HOST": api.host,
        "KUBERNETES_SERVICE_PORT": str(api.port),
        "KUBERNETES_SERVICE_PORT_HTTPS": str(api.port),
        "KUBERNETES_PORT": url,
        prefix: url,
        f"{prefix}_PROTO": "tcp",
        f"{prefix}_PORT": str(api.port),
        f"{prefix}_ADDR": api.host,
    }


def environment(
    *,
    image_env: dict[str, str],
    pod: dict[str, Any],
    container: dict[str, Any],
    resolved: dict[str, str],
    services: list[dict[str, Any]],
    api: Address,
    mapped: list[tuple[str, Path]],
) -> dict[str, str]:
    """The process's whole environment (see the module docstring for the order)."""
    env = dict(image_env)
    if (pod.get("spec") or {}).get("enableServiceLinks", True) is not False:
        env.update(service_variables(services))
    env.update(in_cluster_variables(api))
    # Variables defined by value may refer to earlier ones (and to the service variables).
    literal = {str(v.get("name")) for v in container.get("env") or [] if "value" in v}
    for name, value in resolved.items():
        env[name] = expand(value, env) if name in literal else value
    for name, value in list(env.items()):
        env[name] = pod_files.rewrite(value, mapped)
    token_dir = next((folder for path, folder in mapped if path == TOKEN_MOUNT_PATH), None)
    if token_dir is not None:
        env[SERVICEACCOUNT_DIR_ENV] = str(token_dir)
    return env


def arguments(argv: list[str], mapped: list[tuple[str, Path]]) -> list[str]:
    """The command line with container paths mapped (``--db=/var/…`` is left: only a word that
    starts with a mount path is a path the runtime would have found there)."""
    return [argv[0], *(pod_files.rewrite(word, mapped) for word in argv[1:])]
