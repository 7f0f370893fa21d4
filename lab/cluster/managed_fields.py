"""Field ownership: ``metadata.managedFields`` kept on every write, and server-side apply.

Every create, update and patch is recorded as an ``Update`` by its field manager (the
``fieldManager`` parameter, or the client's User-Agent up to the first ``/`` as a real API server
takes it): the manager comes to own the fields it set or changed, and those fields leave every
other manager. An apply (``application/apply-patch+yaml``) is an ``Apply``: its configuration is
merged onto the live object, fields the manager applied before and leaves out now are removed
when nobody else owns them, and changing a field another manager owns is a conflict — a 409
whose causes name each field and manager, worded as k8s.io/apimachinery's
``NewConflictError`` words them — unless the apply is forced, which takes the fields over.
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass, field
from typing import Any

from lab.cluster import fieldsets
from lab.cluster.errors import ApiError, invalid
from lab.cluster.fieldsets import FieldSet

APPLY = "Apply"
UPDATE = "Update"
KUBECTL = "kubectl"
LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


@dataclass
class Manager:
    """One ``managedFields`` entry: who, how, at which version, and the fields it owns."""

    manager: str
    operation: str
    api_version: str
    time: str
    fields: FieldSet = field(default_factory=set)
    subresource: str = ""

    def identity(self) -> tuple[str, str, str, str]:
        # An applier is one manager whatever version it applies with; an updater is one per
        # version, as the real server keys them.
        version = "" if self.operation == APPLY else self.api_version
        return (self.manager, self.operation, version, self.subresource)

    def printed(self) -> str:
        """The manager as a conflict message names it (``printManager`` in apimachinery)."""
        text = json.dumps(self.manager)
        if self.subresource:
            text += f" with subresource {json.dumps(self.subresource)}"
        if self.operation == UPDATE:
            text += f" using {self.api_version}"
        return text

    def entry(self) -> dict[str, Any]:
        entry: dict[str, Any] = {
            "manager": self.manager,
            "operation": self.operation,
            "apiVersion": self.api_version,
            "time": self.time,
            "fieldsType": "FieldsV1",
            "fieldsV1": fieldsets.to_fields_v1(self.fields),
        }
        if self.subresource:
            entry["subresource"] = self.subresource
        return entry


def managers_of(obj: dict[str, Any] | None) -> list[Manager]:
    entries = ((obj or {}).get("metadata") or {}).get("managedFields") or []
    managers = []
    for entry in entries:
        if not isinstance(entry, dict) or not entry.get("manager"):
            continue
        managers.append(
            Manager(
                manager=str(entry["manager"]),
                operation=str(entry.get("operation") or UPDATE),
                api_version=str(entry.get("apiVersion") or ""),
                time=str(entry.get("time") or ""),
                fields=fieldsets.from_fields_v1(entry.get("fieldsV1")),
                subresource=str(entry.get("subresource") or ""),
            )
        )
    return managers


def entries(managers: list[Manager]) -> list[dict[str, Any]]:
    """The wire form, leaving out managers that no longer own anything."""
    return [m.entry() for m in managers if m.fields]


def validate_options(*, manager: str, apply: bool, force: bool) -> None:
    """The PatchOptions checks a real server makes before it looks at the object."""
    problems: list[tuple[str, str]] = []
    if apply and not manager:
        problems.append(("fieldManager", "Required value: is required for apply patch"))
    if len(manager) > 128:
        problems.append(
            ("fieldManager", f"Too long: may not be more than 128 bytes (got {len(manager)})")
        )
    if force and not apply:
        problems.append(("force", "Forbidden: may not be specified for non-apply patch"))
    if problems:
        raise invalid("PatchOptions", "", problems, "meta.k8s.io")


def manager_from_user_agent(user_agent: str) -> str:
    """The manager a write without ``fieldManager`` is recorded under."""
    return user_agent.split("/", 1)[0][:128]


def _own(managers: list[Manager], wanted: Manager, fields: FieldSet) -> None:
    """Give ``wanted`` its fields; an entry whose fields do not change keeps its time, as the
    API server keeps it (so a no-op apply leaves ``managedFields`` as they were)."""
    for existing in managers:
        if existing.identity() == wanted.identity():
            if existing.fields != fields or existing.api_version != wanted.api_version:
                existing.api_version, existing.time = wanted.api_version, wanted.time
            existing.fields = fields
            return
    wanted.fields = fields
    managers.append(wanted)


def record_update(
    old: dict[str, Any] | None,
    new: dict[str, Any],
    *,
    manager: str,
    api_version: str,
    now: str,
    kind: str,
    subresource: str = "",
) -> list[dict[str, Any]]:
    """The ``managedFields`` of ``new`` after an ``Update`` by ``manager`` (``old`` None: a
    create). A client that sent ``managedFields`` of its own has them taken as the prior state,
    which is how kubectl hands a client-side applier's fields over to server-side apply."""
    sent = (new.get("metadata") or {}).get("managedFields")
    if sent == [{}]:  # the documented way to clear them
        return []
    previous = managers_of(new) if sent is not None else managers_of(old)
    changed, removed = fieldsets.compare(old or {}, new, kind)
    for other in previous:
        other.fields -= changed | removed
    updater = Manager(manager, UPDATE, api_version, now, subresource=subresource)
    before = next((m.fields for m in previous if m.identity() == updater.identity()), set())
    _own(previous, updater, before | changed)
    return entries(previous)


def apply(
    live: dict[str, Any] | None,
    config: dict[str, Any],
    *,
    manager: str,
    force: bool,
    api_version: str,
    now: str,
    kind: str,
) -> dict[str, Any]:
    """The object after ``manager`` applies ``config`` to ``live`` (None: it does not exist
    yet), with its ``managedFields``; raises the 409 of a conflict unless ``force``."""
    base = copy.deepcopy(live) if live is not None else {}
    previous = managers_of(live)
    mine = Manager(manager, APPLY, api_version, now)
    last_applied = next((m.fields for m in previous if m.identity() == mine.identity()), set())
    config = {k: v for k, v in config.items() if k != "status"}
    config_meta = {k: v for k, v in (config.get("metadata") or {}).items() if k != "managedFields"}
    config = {**config, "metadata": config_meta}
    merged: dict[str, Any] = fieldsets.merge(base, config, (), kind)
    applied = fieldsets.applied_set(config, kind)
    others = [m for m in previous if m.identity() != mine.identity()]
    _prune(merged, last_applied - applied, [*others, Manager(manager, APPLY, "", "", applied)])
    changed, removed = fieldsets.compare(base, merged, kind)
    conflicts = [(m, p) for m in others for p in sorted(m.fields & changed)]
    if manager == KUBECTL and live is not None:
        # kubectl moving from client-side to server-side apply: what its last client-side
        # apply set, and the live object still holds, is its own (lastappliedmanager.go).
        allowed = _last_applied_fields(live, kind)
        conflicts = [(m, p) for m, p in conflicts if p not in allowed]
    if conflicts and not force:
        raise conflict_error(conflicts)
    for other in others:
        other.fields -= changed | removed
    _own(previous, mine, applied)
    meta = merged.setdefault("metadata", {})
    annotations = meta.get("annotations") or {}
    if manager == KUBECTL and LAST_APPLIED in annotations:
        # ... and the annotation follows, so a later client-side apply sees this one.
        annotations[LAST_APPLIED] = json.dumps(
            _without_last_applied(config), separators=(",", ":"), sort_keys=True
        )
    meta["managedFields"] = entries(previous)
    return merged


def _last_applied_fields(live: dict[str, Any], kind: str) -> FieldSet:
    text = ((live.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    try:
        last = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        return set()
    if not isinstance(last, dict):
        return set()
    modified, _ = fieldsets.compare(last, live, kind)
    return fieldsets.applied_set(last, kind) - modified


def _without_last_applied(config: dict[str, Any]) -> dict[str, Any]:
    copied = copy.deepcopy(config)
    annotations = (copied.get("metadata") or {}).get("annotations")
    if isinstance(annotations, dict):
        annotations.pop(LAST_APPLIED, None)
        if not annotations:
            copied["metadata"].pop("annotations")
    return copied


def _prune(obj: dict[str, Any], dropped: FieldSet, keepers: list[Manager]) -> None:
    """Remove what the applier gave up, except where a manager (the applier's new set among
    them) still owns it or a part of it."""
    owned: FieldSet = set().union(*(m.fields for m in keepers))
    for path in sorted(dropped, key=len, reverse=True):
        if any(o[: len(path)] == path for o in owned):
            continue
        fieldsets.remove(obj, path)


def conflict_error(conflicts: list[tuple[Manager, fieldsets.Path]]) -> ApiError:
    causes = [
        {
            "type": "FieldManagerConflict",
            "message": f"conflict with {m.printed()}",
            "field": fieldsets.describe(p),
        }
        for m, p in conflicts
    ]
    if len(conflicts) == 1:
        m, p = conflicts[0]
        message = (
            f"Apply failed with 1 conflict: conflict with {m.printed()}: {fieldsets.describe(p)}"
        )
    else:
        lines: list[str] = []
        by_manager: dict[str, list[fieldsets.Path]] = {}
        printed: dict[str, str] = {}
        for m, p in conflicts:
            key = json.dumps(m.identity())
            by_manager.setdefault(key, []).append(p)
            printed[key] = m.printed()
        for key in sorted(by_manager, key=lambda k: printed[k]):
            lines.append(f"conflicts with {printed[key]}:")
            lines.extend(f"- {fieldsets.describe(p)}" for p in by_manager[key])
        message = f"Apply failed with {len(conflicts)} conflicts: " + "\n".join(lines)
    return ApiError(409, "Conflict", message, causes=causes)
