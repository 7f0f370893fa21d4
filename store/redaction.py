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
    r"|(?i:bearer)[ \t]+[A-Za-z0-9._~+/=-]{8,}"  # an Authorization header (not a name)
    r"|eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*"  # JWTs (ServiceAccount tokens)
    r"|sk-[A-Za-z0-9_-]{16,}"  # model API keys
    r"|\b(?:AKIA|ASIA)[0-9A-Z]{16}\b"  # AWS access key ids
    r"|\bgh[pousr]_[A-Za-z0-9]{20,}"  # GitHub tokens
    r"|\bgithub_pat_[A-Za-z0-9_]{20,}"
    r"|\bglpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|\b[rs]k_(?:live|test)_[A-Za-z0-9]{10,}"  # Stripe
)
# The password of a URL's user info (``postgres://app:hunter2@db:5432``): the user is kept.
URL_PASSWORDS = re.compile(r"(?i)(\b[a-z][a-z0-9+.-]*://[^\s:/@]+:)[^\s@/]+(@)")
# ``password=…``, ``api_key: …``: the value after a credential's name (the name is kept, so a
# reader still sees which setting it was).
# The name may be part of a longer one (``DB_PASSWORD=…``, ``AWS_SECRET_ACCESS_KEY: …``,
# ``STRIPE_KEY=…``): ``_`` is a word character, so a bare ``\bpassword`` missed those.
CREDENTIAL_VALUES = re.compile(
    r"(?i)\b((?:[a-z0-9]+[_.-])*"
    r"(?:password|passwd|pwd|secret|token|api[_-]?key|access[_-]?key|client[_-]?secret"
    r"|private[_-]?key|[a-z0-9]+[_-]key)"
    r"(?:[_.-][a-z0-9]+)*[\"']?\s*[=:]\s*)[\"']?[^\s\"',;&]+"
)
# The words that make a variable's name read as a credential's (``DB_PASSWORD``,
# ``githubToken``, ``AWS_SECRET_ACCESS_KEY``); a name ending in ``KEY`` does too.
CREDENTIAL_WORDS = frozenset(
    {
        "password",
        "passwd",
        "pwd",
        "pass",
        "passphrase",
        "secret",
        "token",
        "credential",
        "credentials",
        "creds",
        "apikey",
        "privatekey",
        "auth",
        "key",
        "keys",
        "pat",
        "sk",
        "dsn",
        "pem",
        "jwt",
        "bearer",
        "cert",
        "signature",
    }
)
# Stems found inside one-word names: ``PGPASSWORD``, ``SESSIONSECRET``, ``ENCRYPTIONKEY``.
_STEMS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "token",
    "credential",
    "apikey",
    "privatekey",
    "accesskey",
    "signingkey",
    "encryptionkey",
    "masterkey",
    "sessionkey",
    "hmackey",
    "licensekey",
    "bearer",
)
_NAME_PARTS = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


def redact(text: str) -> str:
    """``text`` with every credential-shaped part replaced by ``[redacted]``."""
    text = URL_PASSWORDS.sub(lambda m: m.group(1) + REDACTED + m.group(2), text)
    return CREDENTIAL_VALUES.sub(lambda m: m.group(1) + REDACTED, TOKEN_SHAPES.sub(REDACTED, text))


def credential_value(value: str) -> bool:
    """Whether a value is shaped like a credential whatever its name (a GitHub token, a URL
    carrying a password)."""
    return bool(TOKEN_SHAPES.search(value) or URL_PASSWORDS.search(value))


def credential_name(name: str) -> bool:
    """Whether a setting's name (an environment variable's) reads as a credential's: one of its
    words is ``password``, ``key``, ``pat``, …, or the name holds a credential's stem even
    where no separator splits it (``PGPASSWORD``, ``SIGNINGKEY``, ``HTPASSWD``). Errs towards
    yes: a value hidden by mistake costs a reader a look at the cluster; one shown by mistake
    is a leaked credential (an outside tester listed a dozen the word rule missed)."""
    words = [w.lower() for w in _NAME_PARTS.findall(name)]
    joined = "".join(words)
    return bool(words) and (
        any(w in CREDENTIAL_WORDS for w in words) or any(stem in joined for stem in _STEMS)
    )
