"""Where Prometheus is and how to reach it, from the environment.

A real deployment sits behind something: a bearer token (often a projected service-account
token that rotates, so a token *file* is read on every request), basic auth, a private CA, or a
tenant header (Thanos, Mimir, Cortex). Bad configuration is an error with the variable's name;
no URL means no metrics source, which is a normal way to run.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from store.errors import Remedy, StratusError
from tools.env import integer, number

DEFAULT_TIMEOUT = 2.0  # seconds per request: a card must not wait on a slow Prometheus
DEFAULT_MAX_SERIES = 200  # series one answer may hold; more are cut and said so
DEFAULT_MAX_POINTS = 60  # points per series of a range query; the step follows from it
MAX_BYTES = 8_000_000  # an answer larger than this is refused, not parsed
_TRUE = {"1", "true", "yes", "on"}
_FALSE = {"", "0", "false", "no", "off"}


def _fail(message: str) -> StratusError:
    return StratusError(message, remedy=Remedy.FIX_CONFIG)


@dataclass(frozen=True)
class PrometheusConfig:
    url: str
    token: str = ""
    token_file: Path | None = None
    username: str = ""
    password: str = ""
    ca_file: Path | None = None
    insecure_skip_verify: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    timeout: float = DEFAULT_TIMEOUT
    max_series: int = DEFAULT_MAX_SERIES
    max_points: int = DEFAULT_MAX_POINTS

    def __post_init__(self) -> None:
        parts = urlsplit(self.url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise _fail(f"STRATUS_PROMETHEUS_URL={self.url!r} is not an http(s) URL")
        if self.token and self.token_file:
            raise _fail("set STRATUS_PROMETHEUS_TOKEN or STRATUS_PROMETHEUS_TOKEN_FILE, not both")
        if (self.token or self.token_file) and self.username:
            raise _fail("set a bearer token or STRATUS_PROMETHEUS_USER (basic auth), not both")
        if not math.isfinite(self.timeout) or not 0.05 <= self.timeout <= 60:
            raise _fail("STRATUS_PROMETHEUS_TIMEOUT must be between 0.05 and 60 seconds")
        if not 1 <= self.max_series <= 10_000 or not 2 <= self.max_points <= 11_000:
            raise _fail("the Prometheus series and point caps must be positive and bounded")
        for path, name in ((self.ca_file, "CA_FILE"), (self.token_file, "TOKEN_FILE")):
            if path is not None and not path.is_file():
                raise _fail(f"STRATUS_PROMETHEUS_{name}={str(path)!r} is not a readable file")

    @property
    def base(self) -> str:
        return self.url.rstrip("/")

    def bearer(self) -> str:
        """The token to send now (a token file is re-read: projected tokens rotate)."""
        if self.token_file is not None:
            try:
                return self.token_file.read_text().strip()
            except OSError as error:
                raise _fail(f"cannot read the Prometheus token file: {error}") from error
        return self.token

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> PrometheusConfig | None:
        """The configuration in ``environ`` (default: the process environment); ``None`` when
        STRATUS_PROMETHEUS_URL is not set."""
        env = os.environ if environ is None else environ

        def get(name: str) -> str:
            return env.get(f"STRATUS_PROMETHEUS_{name}", "").strip()

        url = get("URL")
        if not url:
            return None
        insecure = get("INSECURE_SKIP_VERIFY").lower()
        if insecure not in _TRUE | _FALSE:
            raise _fail(
                f"STRATUS_PROMETHEUS_INSECURE_SKIP_VERIFY={insecure!r}: expected true or false"
            )
        return cls(
            url=url,
            token=get("TOKEN"),
            token_file=Path(get("TOKEN_FILE")) if get("TOKEN_FILE") else None,
            username=get("USER"),
            password=env.get("STRATUS_PROMETHEUS_PASSWORD", ""),
            ca_file=Path(get("CA_FILE")) if get("CA_FILE") else None,
            insecure_skip_verify=insecure in _TRUE,
            headers=_headers(get("HEADERS")),
            timeout=number(
                "STRATUS_PROMETHEUS_TIMEOUT", default=DEFAULT_TIMEOUT, low=0.05, high=60, env=env
            ),
            max_series=integer(
                "STRATUS_PROMETHEUS_MAX_SERIES",
                default=DEFAULT_MAX_SERIES,
                low=1,
                high=10_000,
                env=env,
            ),
            max_points=integer(
                "STRATUS_PROMETHEUS_MAX_POINTS",
                default=DEFAULT_MAX_POINTS,
                low=2,
                high=11_000,
                env=env,
            ),
        )


def _headers(raw: str) -> dict[str, str]:
    """``Name: value`` pairs separated by ``;`` (e.g. ``X-Scope-OrgID: team-a``)."""
    found: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in raw.split(";"))):
        name, colon, value = item.partition(":")
        name = name.strip()
        if not colon or not name or any(c in name for c in " \t\r\n") or "\n" in value:
            raise _fail(f"STRATUS_PROMETHEUS_HEADERS: {item!r} is not 'Name: value'")
        found[name] = value.strip()
    return found
