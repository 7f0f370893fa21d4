"""What a container's port answers through ``port-forward``, when the lab models the server
instead of running it: enough HTTP for ``curl`` or a browser to get a page.

A container that runs as a real process (``ProcessHost``) is forwarded to for real; the rest
answer here, to ``port-forward``, to ``wget``/``curl`` in other pods (``exec_network``) and to
HTTP probes (``page_status``): nginx and httpd from the container's files (``http_files``),
the other images from their declared paths. A port nobody listens on is refused with the
kubelet's own words.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lab.controllers import http_files, image_filesystems
from lab.controllers.containers import PodRun
from lab.controllers.exec_files import ContainerFiles
from lab.images import serves_path, split_image


@dataclass(frozen=True)
class PortTarget:
    """Where forwarded bytes go: a real address, a modeled server, or nowhere."""

    address: tuple[str, int] | None = None
    http: bool = False
    paths: list[str] | None = None
    image: str = ""
    text: str = ""  # what a server like http-echo prints
    refusal: str = ""
    # An image server that serves its document root (nginx, httpd): the container's files.
    files: ContainerFiles | None = None
    server: str = ""  # the image's ``filesystem`` (nginx, httpd …)
    version: str = ""
    root: str = ""
    wire: str = ""  # the protocol of a server that does not speak HTTP (redis, postgres)
    uid: str = ""  # the pod's, for what the server holds
    env: tuple[tuple[str, str], ...] = ()  # the server's environment (postgres's credentials)
    data: dict[str, str] | None = None  # what a redis server holds (its keys), when known


def target(
    run: PodRun | None,
    port: int,
    real_address: str | None,
    files_of: Callable[[dict[str, Any]], ContainerFiles] | None = None,
) -> PortTarget:
    """Where a connection to the pod's ``port`` goes; ``files_of`` gives a container's files,
    for the servers that serve them."""
    if run is not None:
        for container in run.main:
            if container.state != "running" or port not in container.listens:
                continue
            if real_address is not None:
                return PortTarget(address=(real_address, port))
            args = [str(a) for a in container.spec.get("args") or []]
            text = next((a.split("=", 1)[1] for a in args if a.startswith("-text=")), "")
            image = container.behaviour
            served = image is not None and _own_server(
                image.http_paths, image.listens, container, port
            )
            root = image_filesystems.tree(image.filesystem).docroot if image is not None else ""
            serves_files = served and bool(root) and files_of is not None
            return PortTarget(
                http=port in container.http,
                paths=container.http.get(port),
                image=str(container.spec.get("image", "")),
                text=text,
                files=files_of(container.spec) if serves_files and files_of is not None else None,
                server=(image.filesystem or "") if image is not None and served else "",
                version=image.version_of(split_image(container.image)[1])
                if image is not None
                else "",
                root=root if served else "",
                wire=(image.wire or "") if image is not None and served else "",
                uid=run.uid,
                env=tuple(container.env.items()),
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


def page_status(found: PortTarget, path: str) -> int | None:
    """The status the server gives ``GET path`` when it answers from the container's files
    (what an HTTP probe sees); None for the servers that answer their declared paths."""
    if found.files is None or not found.http:
        return None
    answer = http_files.serve(
        found.files,
        server=found.server,
        version=found.version,
        root=http_files.document_root(found.files, found.server, found.root),
        method="GET",
        target=path,
        host="",
        now=0.0,
    )
    return answer.status


def _own_server(paths: list[str] | None, listens: list[int], container: Any, port: int) -> bool:
    """Whether what answers on ``port`` is the image's own server (not, say, ``python -m
    http.server`` started in an nginx image): its port, with the image's paths."""
    return port in listens and (port not in container.http or container.http[port] == paths)


def http_answer(found: PortTarget, request: bytes) -> bytes:
    """The response to one HTTP request (a server that does not speak HTTP closes)."""
    if not found.http:
        return b""
    head = request.split(b"\r\n\r\n", 1)[0].decode("latin-1").split("\r\n")
    parts = head[0].split(" ")
    method = parts[0] if parts else "GET"
    path = parts[1] if len(parts) > 1 else "/"
    if found.files is not None:
        host = next(
            (h.split(":", 1)[1].strip() for h in head[1:] if h.lower().startswith("host:")), ""
        )
        answer = http_files.serve(
            found.files,
            server=found.server,
            version=found.version,
            root=http_files.document_root(found.files, found.server, found.root),
            method=method,
            target=path,
            host=host,
            now=time.time(),
        )
        lines = [f"HTTP/1.1 {answer.status} {answer.reason}"]
        lines += [f"{name}: {value}" for name, value in answer.headers]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + answer.body
    if not serves_path(found.paths, path.split("?", 1)[0]):
        return _response(404, "Not Found", "404 page not found\n", "text/plain")
    if "nginx" in found.image and path in ("/", "/index.html"):
        body = image_filesystems.NGINX_INDEX
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
