"""Digests that tell whether a stored record was edited after it was written.

With ``STRATUS_AUDIT_KEY`` set, digests are HMAC-SHA256 under that key, so someone who can
edit the database file but does not hold the key cannot forge a matching digest. Without a
key they are plain SHA-256: they still catch accidental corruption and careless edits, and the
audit log (which records every execution's digest) catches the rest at ``audit verify``.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from typing import Any

from store.errors import Remedy, StratusError

KEY_ENV = "STRATUS_AUDIT_KEY"


class AuditKeyError(StratusError, code="audit_key", remedy=Remedy.FIX_CONFIG):
    """``STRATUS_AUDIT_KEY`` is set but empty, or missing where the audit log is keyed."""


# Said once, first, wherever records fail their digests because the key is not the one they
# were written with: otherwise every genuine record reads as tampered.
KEY_MISMATCH = f"{KEY_ENV} is missing or is not the key this database was written with"


def audit_key() -> bytes | None:
    """The key, or None when the variable is unset. Set but empty (or blank) is an error:
    falling back to unkeyed digests would quietly drop the protection the key was set for."""
    value = os.environ.get(KEY_ENV)
    if value is None:
        return None
    if not value.strip():
        raise AuditKeyError(
            f"${KEY_ENV} is set but empty; set it to the installation's key, or unset it"
        )
    return value.encode()


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), default=str).encode()


def digest(value: Any, *, key: bytes | None = None) -> str:
    """A hex digest of a JSON-able value, keyed when a key is given or configured."""
    material = canonical(value)
    secret = key if key is not None else audit_key()
    if secret:
        return "hmac-sha256:" + hmac.new(secret, material, hashlib.sha256).hexdigest()
    return "sha256:" + hashlib.sha256(material).hexdigest()


def matches(value: Any, expected: str, *, key: bytes | None = None) -> bool:
    return hmac.compare_digest(digest(value, key=key), expected)


def matches_digest(expected: str, stored: str) -> bool:
    """Two digests compared in constant time; an empty stored digest never matches."""
    return bool(stored) and hmac.compare_digest(expected, stored)
