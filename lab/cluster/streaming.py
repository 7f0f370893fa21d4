"""``pods/exec``, ``pods/attach`` and ``pods/portforward``: the lab has no container runtime
to stream from, so it answers as a cluster whose API server cannot reach the kubelet does.

The pod and container are checked first (404 for a missing pod, 400 for a container that is
not in it or a pod without a node, as a real API server answers), then the request fails with
the 500 a real API server returns when its connection to the kubelet's port 10250 is refused:
``error dialing backend: dial tcp <node IP>:10250: connect: connection refused``. kubectl
prints it and exits 1; nothing waits.
"""

from __future__ import annotations

from typing import Any

from lab.cluster.errors import ApiError, bad_request

KUBELET_PORT = 10250
STREAMING = ("exec", "attach", "portforward")


def refuse(pod: dict[str, Any], subresource: str, container: str | None) -> ApiError:
    """The error a streaming request to ``pod`` gets (raised by the caller)."""
    name = pod["metadata"]["name"]
    spec = pod.get("spec") or {}
    names = [
        c.get("name")
        for c in (spec.get("containers") or []) + (spec.get("initContainers") or [])
        if isinstance(c, dict)
    ]
    if subresource != "portforward":
        if container is None and len(spec.get("containers") or []) > 1:
            main = [c.get("name") for c in spec.get("containers") or []]
            return bad_request(
                f"a container name must be specified for pod {name}, "
                f"choose one of: [{' '.join(str(n) for n in main)}]"
            )
        if container is not None and container not in names:
            return bad_request(f"container {container} is not valid for pod {name}")
    if not spec.get("nodeName"):
        return bad_request(f"pod {name} does not have a host assigned")
    phase = (pod.get("status") or {}).get("phase")
    if phase in ("Succeeded", "Failed") and subresource != "portforward":
        return bad_request(
            f"cannot {'exec into' if subresource == 'exec' else 'attach to'} a container in a "
            f"completed pod; current phase is {phase}"
        )
    host_ip = (pod.get("status") or {}).get("hostIP") or "10.0.0.11"
    return ApiError(  # ErrorToAPIStatus of a plain error: code 500, no reason
        500,
        "",
        f"error dialing backend: dial tcp {host_ip}:{KUBELET_PORT}: connect: connection refused",
    )
