"""MCP clients: who an outside agent is, what it may call and how much it may ask for.

A client is named in a YAML file (``STRATUS_MCP_CLIENTS``, docs/mcp.md) with the SHA-256 of
its bearer token — never the token itself — its tool mode (``all`` or ``read``) and its
limits. The file is read again on every authentication, so a client removed from it (its
token revoked) is refused from the next call on, without a restart. A token is compared with
every client's hash in constant time (``hmac.compare_digest``), and all of them are compared,
so the time taken says nothing about which client, or whether any, came close.

Also here, with the other authorization rules: a client sees only its own proposals and undoes
only its own writes (``owns``).
"""

from __future__ import annotations

import hashlib
import hmac
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

import yaml
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from store.errors import Remedy, StratusError

PREFIX = "mcp:"
ENV_FILE = "STRATUS_MCP_CLIENTS"
ENV_TOKEN = "STRATUS_MCP_TOKEN"
_SHA256 = r"^[0-9a-f]{64}$"


class ClientsError(StratusError, code="mcp_clients", remedy=Remedy.FIX_CONFIG):
    """The clients file is missing or does not load: no client is let in."""


class Unauthenticated(StratusError, code="unauthenticated", remedy=Remedy.FIX_CONFIG):
    """No token, or a token no configured client holds."""


class Limits(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    proposals_per_minute: int = Field(default=6, ge=1, le=600, strict=True)
    open_proposals: int = Field(default=3, ge=1, le=100, strict=True)


class ClientEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    name: str = Field(pattern=r"^[a-z0-9]([-a-z0-9._]*[a-z0-9])?$", max_length=63)
    token_sha256: str = Field(pattern=_SHA256)
    tools: Literal["all", "read"] = "all"
    limits: Limits = Field(default_factory=Limits)
    # May it propose actions that cannot be undone (deleting a pod, a job, a PVC)?
    irreversible: bool = Field(default=False, strict=True)
    # May it propose writes to nodes (cordon, drain, uncordon)? See ``intake.Quota.nodes``.
    nodes: bool = Field(default=False, strict=True)


class ClientsFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    clients: list[ClientEntry] = Field(default_factory=list)


@dataclass(frozen=True)
class Client:
    """An authenticated MCP client."""

    name: str
    tools: str
    limits: Limits
    irreversible: bool = False
    token_sha256: str = ""  # its entry's: recorded on what it proposes (``revocation``)
    nodes: bool = False

    @property
    def requester(self) -> str:
        return PREFIX + self.name

    @property
    def may_propose(self) -> bool:
        return self.tools == "all"


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode()).hexdigest()


def load(path: Path) -> ClientsFile:
    try:
        raw = yaml.safe_load(path.read_text()) or {}
    except (OSError, yaml.YAMLError) as exc:
        raise ClientsError(f"{path}: cannot read the MCP clients file ({exc})") from exc
    try:
        loaded = ClientsFile.model_validate(raw)
    except ValidationError as exc:
        problems = "; ".join(
            f"{'.'.join(str(p) for p in e['loc'])}: {e['msg']}" for e in exc.errors()
        )
        raise ClientsError(f"{path}: {problems}") from exc
    names = [c.name for c in loaded.clients]
    twice = sorted({n for n in names if names.count(n) > 1})
    if twice:
        raise ClientsError(f"{path}: client name(s) given twice: {', '.join(twice)}")
    return loaded


def match(clients: ClientsFile, token: str | None) -> Client:
    """The client holding ``token``; every hash is compared, each in constant time."""
    if not token:
        raise Unauthenticated("no bearer token was given")
    offered = hash_token(token).encode()
    found: ClientEntry | None = None
    for entry in clients.clients:
        if hmac.compare_digest(offered, entry.token_sha256.encode()) and found is None:
            found = entry
    if found is None:
        raise Unauthenticated("the bearer token is not one of a configured client")
    return Client(
        found.name,
        found.tools,
        found.limits,
        found.irreversible,
        found.token_sha256,
        nodes=found.nodes,
    )


@dataclass(frozen=True)
class Registry:
    """The clients file, read again on each ``authenticate`` (revocation is immediate)."""

    path: Path

    @classmethod
    def from_env(cls) -> Registry:
        raw = os.environ.get(ENV_FILE, "").strip()
        if not raw:
            raise ClientsError(f"{ENV_FILE} is not set: name the MCP clients file (docs/mcp.md)")
        return cls(Path(raw))

    def authenticate(self, token: str | None) -> Client:
        return match(load(self.path), token)

    def load(self) -> ClientsFile:
        return load(self.path)


def revocation(clients: ClientsFile, requester: str, token_sha256: str = "") -> str | None:
    """Why an MCP client's proposal may no longer stand — its client is no longer in the
    clients file, or its token was revoked (the entry's hash is no longer the one it proposed
    with) — or None while it stands (and for a requester that is no MCP client). A proposal
    stored before tokens were recorded (``token_sha256`` empty) is judged by its name only."""
    if not requester.startswith(PREFIX):
        return None
    name = requester.removeprefix(PREFIX)
    entry = next((c for c in clients.clients if c.name == name), None)
    if entry is None:
        return f"MCP client {name!r} was revoked: it is no longer in the clients file"
    if token_sha256 and not hmac.compare_digest(entry.token_sha256, token_sha256):
        return (
            f"MCP client {name!r}'s token was revoked: it proposed with a token it no longer holds"
        )
    return None


def owns(client_requester: str, proposal_requester: str) -> bool:
    """Whether a proposal (or the write an undo entry records) is the client's own."""
    return hmac.compare_digest(client_requester.encode(), proposal_requester.encode())
