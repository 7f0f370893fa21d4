"""Log lines as an operator's pipeline wants them: one JSON object a line carrying the incident
and proposal ids in force (``store.logcontext``), or text for a terminal — and, in both, no
secret ever written.

The format: ``STRATUS_LOG_FORMAT`` (``json`` or ``text``); unset, json when serving in a
cluster (``KUBERNETES_SERVICE_HOST`` is set, as the kubelet sets it) and text otherwise.

Redaction is done on the finished line, traceback included, not on each call site: a client
library's warning or an exception's message is written by code that does not know what a
secret is. Two nets: the exact values of the secrets this process was given (the Slack tokens
and signing secret, the alert token, the audit key, the model key), and the shapes of tokens
(``xox…-``, ``xapp-``, ``Bearer …``, JWTs such as a ServiceAccount token). Secret *values* in
the cluster are never read in the first place (``tools.secrets`` reads digests only).
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable, Mapping
from datetime import UTC, datetime
from typing import Any

from store import logcontext
from store.errors import Remedy, StratusError
from store.redaction import REDACTED, redact

ENV = "STRATUS_LOG_FORMAT"
FORMATS = ("json", "text")
TEXT_FORMAT = "%(asctime)s %(name)s %(message)s"
# Variables whose values are secrets. Anything else named like one is covered too.
SECRET_VARIABLES = (
    "SLACK_BOT_TOKEN",
    "SLACK_APP_TOKEN",
    "SLACK_SIGNING_SECRET",
    "STRATUS_ALERTS_TOKEN",
    "STRATUS_AUDIT_KEY",
    "OPENAI_API_KEY",
)
_SECRET_NAME = re.compile(r"(TOKEN|SECRET|PASSWORD|API_KEY|AUDIT_KEY)$")
MIN_SECRET = 6  # shorter values would redact ordinary words; real tokens are far longer


class LogSettingError(StratusError, code="log_setting", remedy=Remedy.FIX_CONFIG):
    """``STRATUS_LOG_FORMAT`` names no format Stratus writes."""


def format_from(env: Mapping[str, str] | None = None) -> str:
    values = os.environ if env is None else env
    chosen = values.get(ENV, "").strip().lower()
    if not chosen:
        return "json" if values.get("KUBERNETES_SERVICE_HOST") else "text"
    if chosen not in FORMATS:
        raise LogSettingError(f"{ENV}={values[ENV]!r} is not accepted: json or text", subject=ENV)
    return chosen


def secrets_from(env: Mapping[str, str] | None = None) -> tuple[str, ...]:
    """The secret values this process was given, longest first (so a secret containing
    another is replaced whole)."""
    values = os.environ if env is None else env
    found = {
        value
        for name, value in values.items()
        if (name in SECRET_VARIABLES or _SECRET_NAME.search(name)) and len(value) >= MIN_SECRET
    }
    return tuple(sorted(found, key=len, reverse=True))


class Redactor:
    def __init__(self, secrets: Iterable[str]) -> None:
        self.secrets = tuple(secrets)

    def __call__(self, text: str) -> str:
        for secret in self.secrets:
            if secret in text:
                text = text.replace(secret, REDACTED)
        return redact(text)


class RedactingTextFormatter(logging.Formatter):
    def __init__(self, redact: Redactor) -> None:
        super().__init__(TEXT_FORMAT)
        self.redact = redact

    def format(self, record: logging.LogRecord) -> str:
        return self.redact(super().format(record))


class JsonFormatter(logging.Formatter):
    """One JSON object a line: time, level, logger, message, the ids in force, the traceback."""

    def __init__(self, redact: Redactor) -> None:
        super().__init__()
        self.redact = redact

    def format(self, record: logging.LogRecord) -> str:
        line: dict[str, Any] = {
            "time": datetime.fromtimestamp(record.created, UTC)
            .isoformat(timespec="milliseconds")
            .replace("+00:00", "Z"),
            "level": record.levelname,
            "logger": record.name,
            "message": self.redact(record.getMessage()),
            **logcontext.current(),
        }
        for key in ("incident_id", "proposal_id"):  # ``extra=`` names them where known
            given = getattr(record, key, None)
            if isinstance(given, str) and given:
                line[key] = given
        if record.exc_info:
            line["exception"] = self.redact(self.formatException(record.exc_info))
        if record.stack_info:
            line["stack"] = self.redact(self.formatStack(record.stack_info))
        return json.dumps(line, ensure_ascii=False)


def formatter(chosen: str, *, secrets: Iterable[str]) -> logging.Formatter:
    redact = Redactor(secrets)
    return JsonFormatter(redact) if chosen == "json" else RedactingTextFormatter(redact)


def configure(env: Mapping[str, str] | None = None, *, level: int = logging.INFO) -> str:
    """Point the root logger at stderr in the chosen format, redacted; returns the format."""
    chosen = format_from(env)
    handler = logging.StreamHandler()
    handler.setFormatter(formatter(chosen, secrets=secrets_from(env)))
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level)
    logging.captureWarnings(True)  # a library's warning is a line like any other
    return chosen
