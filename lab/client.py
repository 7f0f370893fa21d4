"""A small HTTP client for the lab's own ``/lab/v1`` endpoints, used by ``stratus lab``."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from typing import Any

from lab.runner import LabNotRunning

# The end of what a lab answers on /version (``lab.cluster.discovery.SERVER_VERSION``,
# "v1.32.0-stratus-lab"); no real API server says it.
LAB_VERSION_MARK = "-stratus-lab"


class LabRequestFailed(Exception):
    """The lab answered with an error; the message is the lab's own."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class LabClient:
    def __init__(self, url: str, timeout: float = 60.0) -> None:
        self.url = url.rstrip("/")
        self.timeout = timeout

    def request(self, method: str, path: str, body: dict[str, Any] | None = None) -> Any:
        data = json.dumps(body).encode() if body is not None else None
        request = urllib.request.Request(
            f"{self.url}{path}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        # A lab on HTTPS (RBAC on) has a self-signed certificate; its own control endpoints
        # on this machine are reached without verifying it.
        context = ssl._create_unverified_context() if self.url.startswith("https:") else None
        try:
            with urllib.request.urlopen(request, timeout=self.timeout, context=context) as response:
                return json.loads(response.read() or b"null")
        except urllib.error.HTTPError as error:
            raw = error.read()
            try:
                message = json.loads(raw).get("error") or raw.decode()
            except (ValueError, AttributeError):
                message = raw.decode(errors="replace")
            raise LabRequestFailed(error.code, message) from error
        except (urllib.error.URLError, ConnectionError, TimeoutError) as error:
            raise LabNotRunning(
                f"cannot reach the lab at {self.url}: {error}; is 'stratus lab up' running?"
            ) from error

    def get(self, path: str) -> Any:
        return self.request("GET", path)

    def post(self, path: str, body: dict[str, Any] | None = None) -> Any:
        return self.request("POST", path, body or {})


def served_version(client: LabClient) -> str | None:
    """The ``gitVersion`` the server at ``client.url`` reports on /version (no credentials
    sent), or None when it answers something else. Raises ``LabNotRunning`` when unreachable."""
    try:
        answer = client.get("/version")
    except LabRequestFailed:
        return None
    version = answer.get("gitVersion") if isinstance(answer, dict) else None
    return str(version) if version else None


def is_lab_version(version: str | None) -> bool:
    """Whether a /version string is a lab's (the safety of ``stratus lab``: it never writes to
    a cluster that is not one)."""
    return version is not None and version.endswith(LAB_VERSION_MARK)
