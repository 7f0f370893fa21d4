"""Secret values never reach Stratus's store; the values an undo needs stay in the cluster.

What Stratus stores of a Secret — a proposal's plan, an execution's before- and after-image —
is ``stored_image``: every value (``data``, ``stringData`` and kubectl's last-applied
annotation) replaced by its digest. Undo still has to put back exactly what a write replaced,
so before writing a Secret the executor copies the values it is about to overwrite into a
*keeper*: a Secret of its own in the same namespace (``stratus-undo-<execution id>``), under
the same RBAC as the Secret itself. Undo reads the keeper, rebuilds the before-image, checks
it against the digests in the record (so a keeper someone edited restores nothing), writes it,
and then deletes the keeper. docs/tools.md says why this and not the alternatives.
"""

from __future__ import annotations

import base64
import binascii
import copy
from typing import Any

from tools import errors
from tools.objects import LAST_APPLIED, ObjectRef, normalized, redacted

KEEPER_PREFIX = "stratus-undo-"
KEEPER_LABEL = "stratus.io/undo-of"
_DATA = "data."  # a keeper's key for one key of the Secret's data
_APPLIED = "last-applied-configuration"  # a keeper's key for the last-applied annotation


def is_secret(obj: dict[str, Any] | None) -> bool:
    return obj is not None and obj.get("kind") == "Secret"


def stored_image(obj: dict[str, Any] | None) -> dict[str, Any] | None:
    """What Stratus may store of an object: a Secret with digests for values; others as is."""
    return redacted(obj)


def same_stored(a: dict[str, Any] | None, b: dict[str, Any] | None) -> bool:
    """Whether two objects — live or as stored — are the same as people see them."""
    return normalized(redacted(a)) == normalized(redacted(b))


def keeper_ref(execution_id: str, namespace: str) -> ObjectRef:
    return ObjectRef("Secret", f"{KEEPER_PREFIX}{execution_id}", namespace)


def keeper(execution_id: str, before: dict[str, Any]) -> dict[str, Any]:
    """The keeper of a Secret's values as they are before execution ``execution_id``."""
    meta = before.get("metadata") or {}
    data = {_DATA + key: value for key, value in (before.get("data") or {}).items()}
    applied = (meta.get("annotations") or {}).get(LAST_APPLIED)
    if applied is not None:
        data[_APPLIED] = base64.b64encode(str(applied).encode()).decode()
    return {
        "apiVersion": "v1",
        "kind": "Secret",
        "type": "Opaque",
        "metadata": {
            "name": f"{KEEPER_PREFIX}{execution_id}",
            "namespace": meta.get("namespace", ""),
            "labels": {
                KEEPER_LABEL: meta.get("name", ""),
                "app.kubernetes.io/managed-by": "stratus",
            },
        },
        "data": data,
    }


def restored(
    stored: dict[str, Any], kept: dict[str, Any] | None, *, execution_id: str
) -> dict[str, Any]:
    """The before-image of a Secret write, values included: the stored image with the
    keeper's values put back. Refused unless every value matches its stored digest."""
    ref = keeper_ref(execution_id, (stored.get("metadata") or {}).get("namespace", ""))
    if kept is None:
        raise errors.NotFound(
            f"secret/{ref.name}, which keeps the values this undo restores, is gone: Stratus "
            "stores only their digests, so the Secret cannot be put back as it was",
            subject=str(ref),
        )
    image = copy.deepcopy(stored)
    values = kept.get("data") or {}
    image["data"] = {
        key.removeprefix(_DATA): value for key, value in values.items() if key.startswith(_DATA)
    }
    if not image["data"]:
        image.pop("data")
    annotations = (image.get("metadata") or {}).get("annotations") or {}
    if LAST_APPLIED in annotations:
        try:
            annotations[LAST_APPLIED] = base64.b64decode(str(values.get(_APPLIED, ""))).decode()
        except (binascii.Error, UnicodeDecodeError):
            annotations[LAST_APPLIED] = ""
    if not same_stored(image, stored):
        raise errors.Tampered(
            f"secret/{ref.name} does not hold the values the record of {execution_id} names "
            "(their digests differ); undo refuses to write them",
            subject=str(ref),
        )
    return image
