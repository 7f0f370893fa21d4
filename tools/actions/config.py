"""Actions on configuration objects: set a ConfigMap key, or put a ConfigMap or Secret key
back to the value ``kubectl apply`` last wrote (its last-applied configuration).

A Secret's value is read and written here only: the intent names digests, and every diff of a
Secret shows digests (``tools.objects.yaml_diff``), never a value.
"""

from __future__ import annotations

import base64
import binascii
from typing import Any

from pydantic import Field

from tools.actions.base import Action, last_applied, map_at
from tools.errors import Invalid
from tools.objects import secret_digest

KEY_PATTERN = r"^[-._a-zA-Z0-9]+$"


class PatchConfigMapKey(Action):
    name = "patch-configmap-key"
    example = "configmap/web key=LOG_LEVEL value=info"
    kinds = ("ConfigMap",)
    key: str = Field(min_length=1, pattern=r"^[-._a-zA-Z0-9]+$")
    value: str | None = Field(default=None, description="None removes the key")

    def intent(self, current: dict[str, Any]) -> str:
        if self.value is None:
            return f"Remove key {self.key} from configmap/{self.target} in {self.namespace}"
        return (
            f"Set key {self.key} of configmap/{self.target} in {self.namespace} to {self.value!r}"
        )

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        data = map_at(obj, "data")
        if self.value is None:
            if self.key not in data:
                raise Invalid(f"configmap/{self.target} has no key {self.key}")
            del data[self.key]
        else:
            data[self.key] = self.value


class RestoreConfigMapKey(Action):
    """Undo a drift: the key gets the value of the configuration last applied with kubectl."""

    name = "restore-configmap-key"
    example = "configmap/web key=LOG_LEVEL"
    kinds = ("ConfigMap",)
    key: str = Field(min_length=1, pattern=KEY_PATTERN)

    def applied_value(self, current: dict[str, Any]) -> str:
        data = last_applied(current).get("data") or {}
        if self.key not in data:
            raise Invalid(f"configmap/{self.target} had no key {self.key} when it was last applied")
        return str(data[self.key])

    def intent(self, current: dict[str, Any]) -> str:
        now = (current.get("data") or {}).get(self.key)
        was = f" from {now!r}" if now is not None else ""
        return (
            f"Restore key {self.key} of configmap/{self.target} in {self.namespace}{was} to its "
            f"last-applied value {self.applied_value(current)!r}"
        )

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        map_at(obj, "data")[self.key] = self.applied_value(obj)


def _decoded(raw: object) -> str:
    try:
        return base64.b64decode(str(raw), validate=True).decode()
    except (binascii.Error, UnicodeDecodeError) as exc:
        raise Invalid("a value of the Secret is not base64 text") from exc


class RestoreSecretKey(Action):
    """Undo a drift of a credential: the key gets its last-applied value, which never leaves
    this layer (the card shows digests)."""

    name = "restore-secret-key"
    example = "secret/db-auth key=password"
    kinds = ("Secret",)
    risk = "high"
    key: str = Field(min_length=1, pattern=KEY_PATTERN)

    def applied_value(self, current: dict[str, Any]) -> str:
        applied = last_applied(current)
        if self.key in (applied.get("stringData") or {}):
            return str(applied["stringData"][self.key])
        if self.key in (applied.get("data") or {}):
            return _decoded(applied["data"][self.key])
        raise Invalid(f"secret/{self.target} had no key {self.key} when it was last applied")

    def intent(self, current: dict[str, Any]) -> str:
        raw = (current.get("data") or {}).get(self.key)
        was = f" (now {secret_digest(_decoded(raw))})" if raw is not None else ""
        return (
            f"Restore key {self.key} of secret/{self.target} in {self.namespace} to its "
            f"last-applied value ({secret_digest(self.applied_value(current))}){was}"
        )

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        value = self.applied_value(obj)
        map_at(obj, "data")[self.key] = base64.b64encode(value.encode()).decode()
        if self.key in (obj.get("stringData") or {}):
            del obj["stringData"][self.key]
