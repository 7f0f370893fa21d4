"""Probes of a real process container: real HTTP and TCP requests to the pod's own address,
on the probe's own timing (initial delay, period, timeout, thresholds), with the messages a
kubelet writes in its ``Unhealthy`` events.

:class:`ProbeCounter` is the pure part (how many successes or failures in a row turn a probe's
verdict); :func:`attempt` is the request itself.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from typing import Any

import aiohttp


def seconds(value: Any, default: float) -> float:
    """A count of seconds from a spec; the default for anything that is not a number ≥ 0."""
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        return default
    return float(value)


def _count(value: Any, default: int) -> int:
    return int(seconds(value, default)) or default


@dataclass(frozen=True)
class ProbeTiming:
    initial_delay: float
    period: float
    timeout: float
    success_threshold: int
    failure_threshold: int

    @classmethod
    def of(cls, probe: dict[str, Any]) -> ProbeTiming:
        """The probe's timing with the API server's defaults."""
        return cls(
            initial_delay=seconds(probe.get("initialDelaySeconds"), 0.0),
            period=seconds(probe.get("periodSeconds"), 10.0) or 10.0,
            timeout=seconds(probe.get("timeoutSeconds"), 1.0) or 1.0,
            success_threshold=_count(probe.get("successThreshold"), 1),
            failure_threshold=_count(probe.get("failureThreshold"), 3),
        )


@dataclass
class ProbeCounter:
    """A probe's verdict from its results in a row: it changes after ``success_threshold``
    successes or ``failure_threshold`` failures, never on one odd result."""

    timing: ProbeTiming
    verdict: bool | None = None  # None: not yet decided (a readiness probe starts unready)
    successes: int = 0
    failures: int = 0

    def record(self, ok: bool) -> bool | None:
        """Count one result; returns the new verdict when it changed, else None."""
        if ok:
            self.successes, self.failures = self.successes + 1, 0
            if self.verdict is not True and self.successes >= self.timing.success_threshold:
                self.verdict = True
                return True
        else:
            self.successes, self.failures = 0, self.failures + 1
            if self.verdict is not False and self.failures >= self.timing.failure_threshold:
                self.verdict = False
                return False
        return None


def probe_port(probe_action: dict[str, Any], container: dict[str, Any]) -> int | None:
    """The port a probe targets, resolving a named port through the container's ports."""
    port = probe_action.get("port")
    if isinstance(port, str) and not port.isdigit():
        return next(
            (
                int(p["containerPort"])
                for p in container.get("ports") or []
                if p.get("name") == port and p.get("containerPort")
            ),
            None,
        )
    try:
        return int(port) if port is not None else None
    except (TypeError, ValueError):
        return None


async def attempt(
    probe: dict[str, Any], container: dict[str, Any], pod_ip: str
) -> tuple[bool, str]:
    """One try of the probe against the process; the kubelet's message when it fails."""
    timing = ProbeTiming.of(probe)
    if "httpGet" in probe:
        action = probe["httpGet"] or {}
        port = probe_port(action, container)
        host = str(action.get("host") or pod_ip)
        path = str(action.get("path") or "/")
        scheme = str(action.get("scheme") or "HTTP").lower()
        url = f"{scheme}://{host}:{port}{path}"
        if port is None:
            return False, f"unknown port {action.get('port')!r} in the probe"
        headers = {str(h.get("name")): str(h.get("value")) for h in action.get("httpHeaders") or []}
        try:
            async with (
                aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=timing.timeout)) as http,
                http.get(url, headers=headers, ssl=False, allow_redirects=True) as response,
            ):
                if 200 <= response.status < 400:
                    return True, ""
                return False, f"HTTP probe failed with statuscode: {response.status}"
        except TimeoutError:
            return False, (
                f'Get "{url}": context deadline exceeded (Client.Timeout exceeded while '
                "awaiting headers)"
            )
        except aiohttp.ClientError:
            return False, f'Get "{url}": dial tcp {host}:{port}: connect: connection refused'
    if "tcpSocket" in probe:
        action = probe["tcpSocket"] or {}
        port = probe_port(action, container)
        host = str(action.get("host") or pod_ip)
        if port is None:
            return False, f"unknown port {action.get('port')!r} in the probe"
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timing.timeout)
        except TimeoutError:
            return False, f"dial tcp {host}:{port}: i/o timeout"
        except OSError:
            return False, f"dial tcp {host}:{port}: connect: connection refused"
        writer.close()
        return True, ""
    # exec and grpc would need to run inside the container: a process container has none.
    kind = next((k for k in ("exec", "grpc") if k in probe), "unknown")
    return False, f"{kind} probes are not supported for containers the lab runs as processes"
