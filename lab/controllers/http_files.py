"""nginx and httpd serving their document root from the container's files, as the stock
configuration of each image does: a file is its own answer, a folder its ``index.html``, and
what is missing gets the server's own error page and headers (``Server: nginx/1.27.3``).

The files are the container's (``exec_files.ContainerFiles``), so content a volume mounts at
the root, or another container writes into a shared emptyDir, is what is served.
"""

from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from email.utils import formatdate
from urllib.parse import unquote

from lab.controllers.exec_files import ContainerFiles

# When the image's files were built: their Last-Modified (the lab does not date writes).
STOCK_MTIME = 1732636500.0  # Tue, 26 Nov 2024 15:55:00 GMT

TYPES = {
    ".html": "text/html",
    ".htm": "text/html",
    ".txt": "text/plain",
    ".css": "text/css",
    ".js": "application/javascript",
    ".json": "application/json",
    ".xml": "text/xml",
    ".png": "image/png",
    ".jpg": "image/jpeg",
    ".svg": "image/svg+xml",
    ".ico": "image/x-icon",
}

APACHE_404 = (
    '<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">\n<html><head>\n'
    "<title>404 Not Found</title>\n</head><body>\n<h1>Not Found</h1>\n"
    "<p>The requested URL was not found on this server.</p>\n</body></html>\n"
)


@dataclass(frozen=True)
class Answer:
    status: int
    reason: str
    headers: list[tuple[str, str]] = field(default_factory=list)
    body: bytes = b""


def document_root(files: ContainerFiles, server: str, default: str) -> str:
    """The folder the server's configuration serves ``/`` from, as the container's files say
    (a ConfigMap mounted over ``conf.d/default.conf`` may move it), else the image's."""
    if server.startswith("nginx"):
        folder = "/etc/nginx/conf.d"
        paths = [f"{folder}/{n}" for n in files.listing(folder) if n.endswith(".conf")]
        for path in [*paths, "/etc/nginx/nginx.conf"]:
            text = (files.read(path) or b"").decode("utf-8", "replace")
            text = re.sub(r"#[^\n]*", "", text)
            found = re.search(r"location\s+/\s*\{[^}]*?\broot\s+([^;\s]+)\s*;", text)
            found = found or re.search(r"(?m)^\s*root\s+([^;\s]+)\s*;", text)
            if found:
                root = found.group(1).strip("\"'")
                return root if root.startswith("/") else f"/etc/nginx/{root}"
        return default
    conf = (files.read("/usr/local/apache2/conf/httpd.conf") or b"").decode("utf-8", "replace")
    found = re.search(r'(?m)^\s*DocumentRoot\s+"?([^"\s]+)"?', conf)
    return found.group(1) if found else default


def serve(
    files: ContainerFiles,
    *,
    server: str,
    version: str,
    root: str,
    method: str,
    target: str,
    host: str,
    now: float,
) -> Answer:
    """One request to ``server`` (``nginx``, ``nginx-unprivileged`` or ``httpd``)."""
    nginx = server.startswith("nginx")
    banner = f"nginx/{version}" if nginx else f"Apache/{version} (Unix)"
    path = unquote(target.split("?", 1)[0].split("#", 1)[0]) or "/"
    date = formatdate(now, usegmt=True)
    if not path.startswith("/") or posixpath.normpath("/" + path).startswith("/.."):
        return _error(nginx, banner, date, 400, "Bad Request")
    full = posixpath.normpath(root + "/" + path.lstrip("/"))
    if files.is_dir(full):
        if not path.endswith("/"):
            location = f"http://{host.split(':', 1)[0] or 'localhost'}{path}/"
            return _error(nginx, banner, date, 301, "Moved Permanently", location=location)
        index = next(
            (f"{full}/{n}" for n in ("index.html", "index.htm") if files.read(f"{full}/{n}")),
            None,
        )
        if index is None:
            if nginx:
                return _error(nginx, banner, date, 403, "Forbidden")
            return _listing(files, full, path, banner, date)
        full = index
    data = files.read(full)
    if data is None:
        return _error(nginx, banner, date, 404, "Not Found")
    if nginx and method not in ("GET", "HEAD"):
        return _error(nginx, banner, date, 405, "Not Allowed")
    kind = TYPES.get(posixpath.splitext(full)[1].lower(), "application/octet-stream")
    modified = formatdate(STOCK_MTIME, usegmt=True)
    etag = f'"{int(STOCK_MTIME):x}-{len(data):x}"'
    if nginx:
        headers = [
            ("Server", banner),
            ("Date", date),
            ("Content-Type", kind),
            ("Content-Length", str(len(data))),
            ("Last-Modified", modified),
            ("Connection", "close"),
            ("ETag", etag),
            ("Accept-Ranges", "bytes"),
        ]
    else:
        headers = [
            ("Date", date),
            ("Server", banner),
            ("Last-Modified", modified),
            ("ETag", etag),
            ("Accept-Ranges", "bytes"),
            ("Content-Length", str(len(data))),
            ("Connection", "close"),
            ("Content-Type", kind if kind != "application/octet-stream" else "text/plain"),
        ]
    return Answer(200, "OK", headers, b"" if method == "HEAD" else data)


def _error(
    nginx: bool, banner: str, date: str, status: int, reason: str, *, location: str = ""
) -> Answer:
    if nginx:
        title = f"{status} {reason}"
        body = (
            f"<html>\r\n<head><title>{title}</title></head>\r\n<body>\r\n"
            f"<center><h1>{title}</h1></center>\r\n<hr><center>{banner}</center>\r\n"
            "</body>\r\n</html>\r\n"
        )
        headers = [("Server", banner), ("Date", date), ("Content-Type", "text/html")]
    else:
        body = (
            APACHE_404
            if status == 404
            else (
                '<!DOCTYPE HTML PUBLIC "-//IETF//DTD HTML 2.0//EN">\n<html><head>\n'
                f"<title>{status} {reason}</title>\n</head><body>\n<h1>{reason}</h1>\n"
                + (
                    f'<p>The document has moved <a href="{location}">here</a>.</p>\n'
                    if location
                    else ""
                )
                + "</body></html>\n"
            )
        )
        headers = [("Date", date), ("Server", banner)]
    if location:
        headers.append(("Location", location))
    data = body.encode()
    headers.append(("Content-Length", str(len(data))))
    headers.append(("Connection", "close"))
    if not nginx:
        headers.append(("Content-Type", "text/html; charset=iso-8859-1"))
    return Answer(status, reason, headers, data)


def _listing(files: ContainerFiles, full: str, path: str, banner: str, date: str) -> Answer:
    """httpd's ``Options Indexes``: a folder without an index is listed."""
    items = "".join(
        f'<li><a href="{n}{"/" if files.is_dir(f"{full}/{n}") else ""}"> {n}</a></li>\n'
        for n in files.listing(full)
    )
    parent = posixpath.dirname(path.rstrip("/")) or "/"
    body = (
        '<!DOCTYPE HTML PUBLIC "-//W3C//DTD HTML 3.2 Final//EN">\n<html>\n <head>\n'
        f"  <title>Index of {path.rstrip('/') or '/'}</title>\n </head>\n <body>\n"
        f"<h1>Index of {path.rstrip('/') or '/'}</h1>\n"
        f'<ul><li><a href="{parent}"> Parent Directory</a></li>\n'
        f"{items}</ul>\n</body></html>\n"
    ).encode()
    headers = [
        ("Date", date),
        ("Server", banner),
        ("Content-Length", str(len(body))),
        ("Connection", "close"),
        ("Content-Type", "text/html;charset=ISO-8859-1"),
    ]
    return Answer(200, "OK", headers, body)
