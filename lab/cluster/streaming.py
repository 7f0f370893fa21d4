"""``pods/exec``, ``pods/attach`` and ``pods/portforward``: checked as a real API server
checks them, then served over the protocol the client asked for.

The pod and container are checked first (404 for a missing pod, 400 for a container that is
not in it or a pod without a node, as a real API server answers). An exec over websockets runs
the command in the container (``remotecommand``). What the lab cannot serve fails with the 500
a real API server returns when its connection to the kubelet's port 10250 is refused:
``error dialing backend: dial tcp <node IP>:10250: connect: connection refused``. kubectl
prints it and exits 1; nothing waits.
"""

from __future__ import annotations

from typing import Any

from aiohttp import web

from lab.cluster import portforward, remotecommand, spdy_streams
from lab.cluster.errors import ApiError, bad_request

KUBELET_PORT = 10250
STREAMING = ("exec", "attach", "portforward")


def _flag(request: web.Request, name: str) -> bool:
    return request.query.get(name, "").lower() in ("true", "1")


async def serve(
    request: web.Request, backend: Any, pod: dict[str, Any], subresource: str
) -> web.StreamResponse:
    container = request.query.get("container")
    problem = check(pod, subresource, container)
    if problem is not None:
        raise problem
    websocket, spdy = remotecommand.is_websocket(request), spdy_streams.is_spdy(request)
    stopped = getattr(backend, "container_running", None)
    if subresource in ("exec", "attach") and stopped is not None and (websocket or spdy):
        name = stopped(pod, container)
        if name is not None:  # the kubelet's own answer, which kubectl prints after its prefix
            return web.Response(status=404, text=f'container not found ("{name}")')
    # A cluster that runs commands and follows output (ClusterSim) has these two.
    opener = getattr(backend, f"open_{subresource}", None)
    if subresource in ("exec", "attach") and opener is not None and (websocket or spdy):
        tty = _flag(request, "tty")
        if subresource == "attach":
            session = opener(pod, container, stdin=_flag(request, "stdin"))
        else:
            argv = request.query.getall("command", [])
            if not argv:
                raise bad_request("you must specify at least 1 command")
            session = opener(pod, container, argv, tty=tty)
        if websocket:
            return await remotecommand.serve_exec(request, session, stdin=_flag(request, "stdin"))
        return await spdy_streams.serve_exec(
            request,
            session,
            stdin=_flag(request, "stdin"),
            stdout=_flag(request, "stdout"),
            stderr=_flag(request, "stderr"),
            tty=tty,
        )
    port_target = getattr(backend, "port_target", None)  # a cluster that forwards ports
    if subresource == "portforward" and port_target is not None:

        def resolve(port: int) -> Any:
            return port_target(pod, port)

        if spdy or (websocket and spdy_streams.is_tunnel(request)):
            return await spdy_streams.serve_portforward(request, resolve)
        if websocket:
            ports = portforward.ports_of(request)
            if not ports:
                raise bad_request("at least one port must be specified")
            return await portforward.serve(request, ports, resolve)
    raise unreachable(pod)


def unreachable(pod: dict[str, Any]) -> ApiError:
    host_ip = (pod.get("status") or {}).get("hostIP") or "10.0.0.11"
    return ApiError(  # ErrorToAPIStatus of a plain error: code 500, no reason
        500,
        "",
        f"error dialing backend: dial tcp {host_ip}:{KUBELET_PORT}: connect: connection refused",
    )


def refuse(pod: dict[str, Any], subresource: str, container: str | None) -> ApiError:
    """The error a streaming request to ``pod`` gets (raised by the caller)."""
    return check(pod, subresource, container) or unreachable(pod)


def check(pod: dict[str, Any], subresource: str, container: str | None) -> ApiError | None:
    """What a real API server refuses before it dials the kubelet, or None."""
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
    return None
