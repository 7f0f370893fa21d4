"""What a container's port answers through ``port-forward``, when the lab models the server
instead of running it: enough HTTP for ``curl`` or a browser to get a page.

A container that runs as a real process (``ProcessHost``) is forwarded to for real; the rest
answer here. A port nobody listens on is refused with the kubelet's own words.
"""

from __future__ import annotations

from dataclasses import dataclass

from lab.controllers.containers import PodRun
from lab.images import serves_path

NGINX_PAGE = """<!DOCTYPE html>
<html>
<head>
<title>Welcome to nginx!</title>
</head>
<body>
<h1>Welcome to nginx!</h1>
<p>If you see this page, the nginx web server is successfully installed and
working. Further configuration is required.</p>
</body>
</html>
"""


@dataclass(frozen=True)
class PortTarget:
    """Where forwarded bytes go: a real address, a modeled server, or nowhere."""

    address: tuple[str, int] | None = None
    http: bool = False
    paths: list[str] | None = None
    image: str = ""
    text: str = ""  # what a server like http-echo prints
    refusal: str = ""


def target(run: PodRun | None, port: int, real_address: str | None) -> PortTarget:
    if run is not None:
        for container in run.main:
            if container.state != "running" or port not in container.listens:
                continue
            if real_address is not None:
                return PortTarget(address=(real_address, port))
            args = [str(a) for a in container.spec.get("args") or []]
            text = next((a.split("=", 1)[1] for a in args if a.startswith("-text=")), "")
            return PortTarget(
                http=port in container.http,
                paths=container.http.get(port),
                image=str(container.spec.get("image", "")),
                text=text,
            )
    uid = run.uid if run is not None else ""
    return PortTarget(
        refusal=(
            f"error forwarding port {port} to pod {uid}, uid : failed to execute portforward in "
            f"network namespace: failed to connect to localhost:{port} inside namespace, IPv4: "
            f"dial tcp4 127.0.0.1:{port}: connect: connection refused IPv6 dial tcp6 [::1]:{port}: "
            "connect: connection refused "
        )
    )


def http_answer(found: PortTarget, request: bytes) -> bytes:
    """The response to one HTTP request (a server that does not speak HTTP closes)."""
    if not found.http:
        return b""
    line = request.split(b"\r\n", 1)[0].decode("latin-1")
    parts = line.split(" ")
    method = parts[0] if parts else "GET"
    path = parts[1] if len(parts) > 1 else "/"
    if not serves_path(found.paths, path.split("?", 1)[0]):
        return _response(404, "Not Found", "404 page not found\n", "text/plain")
    if "nginx" in found.image and path in ("/", "/index.html"):
        body = NGINX_PAGE
    elif found.text:
        body = found.text + "\n"
    else:
        body = f"<html><body><h1>It works!</h1><p>{method} {path}</p></body></html>\n"
    return _response(200, "OK", "" if method == "HEAD" else body, "text/html")


def _response(code: int, reason: str, body: str, content_type: str) -> bytes:
    data = body.encode()
    head = (
        f"HTTP/1.1 {code} {reason}\r\nContent-Type: {content_type}\r\n"
        f"Content-Length: {len(data)}\r\nConnection: close\r\n\r\n"
    )
    return head.encode() + data
