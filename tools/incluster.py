"""The in-cluster configuration: Stratus running in a pod, as its own ServiceAccount.

When no kubeconfig is given (no ``--kubeconfig``, no ``$KUBECONFIG``, no ``~/.kube/config``)
and the kubelet's ``KUBERNETES_SERVICE_HOST``/``KUBERNETES_SERVICE_PORT`` are set, the API
server is ``https://HOST:PORT``, trusted through the ServiceAccount's ``ca.crt``, and every
request carries the ServiceAccount's ``token``; ``namespace`` is the pod's namespace. The three
files live in ``/var/run/secrets/kubernetes.io/serviceaccount/``, or in
``$STRATUS_SERVICEACCOUNT_DIR`` (the lab's kubelet, a test).

The projected token rotates: the kubelet replaces the file (an atomic swap of its ``..data``
symlink) well before the old token expires, and a bound token expires within the hour. The
official client's in-cluster loader (``kubernetes.config.incluster_config``) re-reads the file
at most once a minute, as client-go's cached file token source does. Here the file is looked
at (one ``stat``) before every request and re-read as soon as it changed, so a rotated token
is used by the next request — and an old token revoked at the moment of rotation never costs
a failed write — and at least once a minute whatever the file's times say.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

DEFAULT_DIR = Path("/var/run/secrets/kubernetes.io/serviceaccount")
DIR_VARIABLE = "STRATUS_SERVICEACCOUNT_DIR"
HOST_VARIABLE = "KUBERNETES_SERVICE_HOST"
PORT_VARIABLE = "KUBERNETES_SERVICE_PORT"
REREAD_SECONDS = 60.0


class InClusterError(Exception):
    """The in-cluster configuration is incomplete: which file or variable, and why."""


def account_dir(env: Mapping[str, str] | None = None) -> Path:
    """Where the ServiceAccount's token, CA and namespace are mounted."""
    values = os.environ if env is None else env
    configured = values.get(DIR_VARIABLE, "").strip()
    return Path(configured) if configured else DEFAULT_DIR


def chosen(
    *, kubeconfig: str | None, env: Mapping[str, str], default_kubeconfig_exists: bool
) -> bool:
    """Whether to use the in-cluster configuration: nothing names a kubeconfig (a flag,
    ``$KUBECONFIG``, the default file) and the kubelet's service variables are set. A
    kubeconfig always wins, as with kubectl and client-go's loading rules."""
    if kubeconfig or env.get("KUBECONFIG") or default_kubeconfig_exists:
        return False
    return bool(env.get(HOST_VARIABLE, "").strip() and env.get(PORT_VARIABLE, "").strip())


def server_url(env: Mapping[str, str]) -> str:
    host = env.get(HOST_VARIABLE, "").strip()
    port = env.get(PORT_VARIABLE, "").strip()
    if not host or not port:
        raise InClusterError(f"{HOST_VARIABLE} and {PORT_VARIABLE} must both be set")
    if ":" in host or "%" in host:  # an IPv6 address, as net.JoinHostPort brackets it
        host = f"[{host}]"
    return f"https://{host}:{port}"


def namespace(directory: Path) -> str:
    """The pod's namespace (the ServiceAccount's ``namespace`` file); ``default`` without it."""
    try:
        text = (directory / "namespace").read_text(encoding="utf-8").strip()
    except OSError:
        return "default"
    return text or "default"


@dataclass(frozen=True)
class _Stamp:
    """What identifies one version of the token file (a swap changes the inode)."""

    inode: int
    size: int
    modified_ns: int


def _stamp(path: Path) -> _Stamp:
    found = path.stat()
    return _Stamp(found.st_ino, found.st_size, found.st_mtime_ns)


class RotatingToken:
    """The ServiceAccount token, re-read when its file changes (and at least every
    ``reread_seconds``). Thread-safe: the worker threads share one client."""

    def __init__(self, path: Path, *, reread_seconds: float = REREAD_SECONDS) -> None:
        self.path = path
        self.reread_seconds = reread_seconds
        self._lock = threading.Lock()
        self._stamp: _Stamp | None = None
        self._read_at = 0.0
        self.token = ""
        self.reads = 0
        self.current()

    def _read(self) -> None:
        stamp = _stamp(self.path)
        token = self.path.read_text(encoding="utf-8").strip()
        if not token:
            raise InClusterError(f"the token file {self.path} is empty")
        self.token, self._stamp, self._read_at = token, stamp, time.monotonic()
        self.reads += 1

    def current(self) -> str:
        """The token to send now. A file that vanished for a moment (mid-swap) or that is
        momentarily empty keeps the last token: the next request looks again."""
        with self._lock:
            try:
                stale = time.monotonic() - self._read_at >= self.reread_seconds
                if self._stamp is None or stale or _stamp(self.path) != self._stamp:
                    self._read()
            except (OSError, InClusterError):
                if not self.token:
                    raise
            return self.token


def configure(configuration: Any, *, env: Mapping[str, str] | None = None) -> RotatingToken:
    """Point a ``kubernetes.client.Configuration`` at the in-cluster API server with the
    ServiceAccount's CA and a token that follows its file. Raises ``InClusterError`` (or
    ``OSError``) naming what is missing."""
    values = os.environ if env is None else env
    directory = account_dir(values)
    ca = directory / "ca.crt"
    token_file = directory / "token"
    url = server_url(values)
    if not token_file.is_file():
        raise InClusterError(f"no ServiceAccount token at {token_file}")
    if not ca.is_file() or not ca.read_text(encoding="utf-8").strip():
        raise InClusterError(f"no CA certificate at {ca}")
    token = RotatingToken(token_file)
    configuration.host = url
    configuration.ssl_ca_cert = str(ca)
    configuration.api_key["BearerToken"] = token.token
    configuration.api_key_prefix["BearerToken"] = "Bearer"

    def refresh(target: Any) -> None:
        # The client calls this before building every request's headers.
        target.api_key["BearerToken"] = token.current()

    configuration.refresh_api_key_hook = refresh
    return token
