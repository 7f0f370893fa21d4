"""Credential-shaped text, redacted wherever text leaves Stratus for someone who should not
hold it: its own log lines (``operations.logs``) and cluster text quoted to a model or an
outside agent (``agents.llm.telemetry``). A Secret's values are never read; this is for the
ones that leak into logs, events and ConfigMaps."""

from __future__ import annotations

import re

REDACTED = "[redacted]"
TOKEN_SHAPES = re.compile(
    r"xox[a-z]-[A-Za-z0-9-]+"  # Slack bot, user and refresh tokens
    r"|xapp-[A-Za-z0-9-]+"  # Slack app-level tokens (Socket Mode)
    r"|(?i:bearer)\s+[A-Za-z0-9._~+/=-]+"  # any Authorization header
    r"|eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"  # JWTs (ServiceAccount tokens)
    r"|sk-[A-Za-z0-9_-]{16,}"  # model API keys
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"  # AWS access key ids
)
# ``password=…``, ``api_key: …``: the value after a credential's name (the name is kept, so a
# reader still sees which setting it was).
CREDENTIAL_VALUES = re.compile(
    r"(?i)\b((?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|client[_-]?secret)"
    r"[\"']?\s*[=:]\s*)[\"']?[^\s\"',;&]+"
)


def redact(text: str) -> str:
    """``text`` with every credential-shaped part replaced by ``[redacted]``."""
    return CREDENTIAL_VALUES.sub(lambda m: m.group(1) + REDACTED, TOKEN_SHAPES.sub(REDACTED, text))
