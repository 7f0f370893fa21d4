"""A read-only client of the Prometheus HTTP API: ``/api/v1/query`` and ``/api/v1/query_range``.

Bounded everywhere, because it sits on the path of an incident: each request has one deadline
(connect, headers and the whole body together; when it passes the socket is shut down, so a
server trickling bytes cannot hold the caller, see ``deadline``), Prometheus is asked to stop
the query at the same deadline, an answer larger than ``MAX_BYTES`` is refused, at most
``max_series`` series are kept, and a range query's step follows from the window so it returns
at most ``max_points`` points per series. Nothing is retried: the caller degrades to what the
cluster says instead.

Every failure — a timeout, a refused connection, an HTTP error, Prometheus' own error answer
(``status: error`` with its ``errorType``), a body that is not the API's JSON — is one
``PrometheusError`` whose ``reason`` says which, and whose message says it to a person.
"""

from __future__ import annotations

import json
import logging
import math
import time
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

import requests
import urllib3

from tools.errors import ToolError
from tools.prometheus.config import MAX_BYTES, PrometheusConfig
from tools.prometheus.deadline import Cutoff, DeadlineAdapter

log = logging.getLogger("stratus.prometheus")
Reason = Literal["timeout", "unreachable", "http", "query", "bad_response", "too_large"]


class PrometheusError(ToolError, code="prometheus", retryable=True):
    """Prometheus did not give an answer that can be used; ``reason`` says why."""

    def __init__(self, message: str, *, reason: Reason, **fields: Any) -> None:
        super().__init__(message, **fields)
        self.reason: Reason = reason


@dataclass(frozen=True)
class Sample:
    labels: dict[str, str]
    value: float
    at: float  # Unix seconds


@dataclass(frozen=True)
class Series:
    labels: dict[str, str]
    points: tuple[tuple[float, float], ...]  # (Unix seconds, value), oldest first

    @property
    def last(self) -> float | None:
        return self.points[-1][1] if self.points else None


@dataclass(frozen=True)
class InstantResult:
    promql: str
    samples: tuple[Sample, ...]
    truncated: bool = False  # more series matched than ``max_series``


@dataclass(frozen=True)
class RangeResult:
    promql: str
    series: tuple[Series, ...]
    step: float
    truncated: bool = False


def _number(raw: Any) -> float:
    try:
        return float(raw)  # Prometheus writes "NaN", "+Inf" and "-Inf" as strings too
    except (TypeError, ValueError):
        raise PrometheusError(
            f"Prometheus answered a value that is not a number: {str(raw)[:40]!r}",
            reason="bad_response",
        ) from None


def _stamp(at: datetime | float) -> float:
    return at.timestamp() if isinstance(at, datetime) else float(at)


class PrometheusClient:
    """One Prometheus (a requests session reused between queries; thread-safe for the reads
    done here)."""

    def __init__(self, config: PrometheusConfig) -> None:
        self.config = config
        self._session = requests.Session()
        for scheme in ("http://", "https://"):  # each request can be cut at its deadline
            self._session.mount(scheme, DeadlineAdapter())
        self._session.headers.update(config.headers)
        self._session.headers["Accept"] = "application/json"
        if config.username:
            self._session.auth = (config.username, config.password)
        # Passed with every request: requests lets REQUESTS_CA_BUNDLE override a session's
        # own ``verify``, and the configured CA must win.
        self._verify: bool | str = True
        if config.insecure_skip_verify:
            self._verify = False
            # Asked for explicitly: said once in the log instead of a warning per request.
            urllib3.disable_warnings(urllib3.exceptions.InsecureRequestWarning)
            log.warning("Prometheus at %s: TLS certificates are not verified", config.base)
        elif config.ca_file is not None:
            self._verify = str(config.ca_file)

    @property
    def url(self) -> str:
        return self.config.base

    def close(self) -> None:
        self._session.close()

    # ------------------------------------------------------------------ queries

    def query(self, promql: str, *, at: datetime | float | None = None) -> InstantResult:
        params = {"query": promql}
        if at is not None:
            params["time"] = f"{_stamp(at):.3f}"
        data = self._get("/api/v1/query", params)
        kind, result = data.get("resultType"), data.get("result")
        if kind == "scalar" and isinstance(result, list) and len(result) == 2:
            return InstantResult(promql, (Sample({}, _number(result[1]), float(result[0])),))
        if kind != "vector" or not isinstance(result, list):
            raise PrometheusError(
                f"Prometheus answered a {kind!r} where an instant vector was expected",
                reason="bad_response",
            )
        cap = self.config.max_series
        samples = []
        for item in result[:cap]:
            stamp, value = _pair(item.get("value"))
            samples.append(Sample(_labels(item), value, stamp))
        return InstantResult(promql, tuple(samples), truncated=len(result) > cap)

    def query_range(
        self,
        promql: str,
        *,
        start: datetime | float,
        end: datetime | float,
        step: float | None = None,
    ) -> RangeResult:
        """``promql`` evaluated from ``start`` to ``end``; without ``step``, the window is cut
        into at most ``max_points`` points (never finer than a second)."""
        begin, finish = _stamp(start), _stamp(end)
        if finish <= begin:
            raise PrometheusError("a range query needs its end after its start", reason="query")
        finest = max(math.ceil((finish - begin) / (self.config.max_points - 1)), 1)
        chosen = max(step or finest, finest)  # a step finer than the cap allows is widened
        data = self._get(
            "/api/v1/query_range",
            {
                "query": promql,
                "start": f"{begin:.3f}",
                "end": f"{finish:.3f}",
                "step": f"{chosen:g}",
            },
        )
        result = data.get("result")
        if data.get("resultType") != "matrix" or not isinstance(result, list):
            raise PrometheusError(
                f"Prometheus answered a {data.get('resultType')!r} to a range query",
                reason="bad_response",
            )
        cap = self.config.max_series
        series = []
        for item in result[:cap]:
            values = item.get("values") or []
            points = tuple(_pair(v) for v in values[-self.config.max_points :])
            series.append(Series(_labels(item), points))
        return RangeResult(promql, tuple(series), float(chosen), truncated=len(result) > cap)

    # ------------------------------------------------------------------ one request

    def _get(self, path: str, params: dict[str, str]) -> dict[str, Any]:
        timeout = self.config.timeout
        params = {**params, "timeout": f"{timeout:g}s"}  # Prometheus stops the query too
        headers = {}
        token = self.config.bearer()
        if token:
            headers["Authorization"] = f"Bearer {token}"
        where = f"Prometheus at {self.config.base}"
        deadline = time.monotonic() + timeout
        cutoff = Cutoff(timeout)
        try:
            with (
                cutoff.armed(),
                self._session.get(
                    self.config.base + path,
                    params=params,
                    headers=headers,
                    timeout=(timeout, timeout),
                    stream=True,
                    allow_redirects=False,
                    verify=self._verify,
                ) as response,
            ):
                body = _read(response, deadline, where)
                status = response.status_code
        except requests.Timeout as error:
            raise _late(where, timeout) from error
        except (requests.RequestException, urllib3.exceptions.HTTPError, OSError) as error:
            if cutoff.fired:  # the deadline shut the socket: whatever broke, it was late
                raise _late(where, timeout) from error
            raise PrometheusError(
                f"{where} cannot be reached: {_short(error)}", reason="unreachable"
            ) from error
        if cutoff.fired:  # a cut during the headers can read as a short, empty answer
            raise _late(where, timeout)
        try:
            answer = json.loads(body)
        except ValueError:
            answer = None
        if isinstance(answer, dict) and answer.get("status") == "error":
            raise PrometheusError(
                f"{where} refused the query ({answer.get('errorType', 'error')}): "
                f"{str(answer.get('error', ''))[:300]}",
                reason="query",
                details={"error_type": answer.get("errorType"), "status": status},
            )
        if status != 200:
            raise PrometheusError(
                f"{where} answered HTTP {status}", reason="http", details={"status": status}
            )
        if not isinstance(answer, dict) or answer.get("status") != "success":
            raise PrometheusError(
                f"{where} answered something that is not the Prometheus API's JSON",
                reason="bad_response",
            )
        data = answer.get("data")
        if not isinstance(data, dict):
            raise PrometheusError(f"{where} answered without data", reason="bad_response")
        return data


def _late(where: str, timeout: float) -> PrometheusError:
    return PrometheusError(f"{where} did not answer within {timeout:g} s", reason="timeout")


def _read(response: requests.Response, deadline: float, where: str) -> bytes:
    """The body, within the request's deadline and ``MAX_BYTES``. A server trickling bytes is
    cut by the request's ``Cutoff``, which shuts the socket; the check here catches the body
    that arrives whole just after the deadline."""
    chunks: list[bytes] = []
    size = 0
    for chunk in response.iter_content(chunk_size=65536):
        size += len(chunk)
        if size > MAX_BYTES:
            raise PrometheusError(
                f"{where} answered more than {MAX_BYTES // 1_000_000} MB; narrow the query",
                reason="too_large",
            )
        if time.monotonic() > deadline:
            raise requests.Timeout("the answer took longer than the timeout")
        chunks.append(chunk)
    return b"".join(chunks)


def _labels(item: Any) -> dict[str, str]:
    metric = item.get("metric") if isinstance(item, dict) else None
    if not isinstance(metric, dict):
        raise PrometheusError("Prometheus answered a series without labels", reason="bad_response")
    return {str(k): str(v) for k, v in metric.items()}


def _pair(raw: Any) -> tuple[float, float]:
    if not isinstance(raw, list) or len(raw) != 2:
        raise PrometheusError("Prometheus answered a malformed sample", reason="bad_response")
    return float(raw[0]), _number(raw[1])


def _short(error: Exception) -> str:
    text = str(error)
    if "Connection refused" in text:
        return "connection refused"
    if "Name or service not known" in text or "NameResolutionError" in text:
        return "unknown host"
    if "CERTIFICATE_VERIFY_FAILED" in text or isinstance(error, requests.exceptions.SSLError):
        return "its TLS certificate is not trusted (set STRATUS_PROMETHEUS_CA_FILE)"
    return text[:200]
