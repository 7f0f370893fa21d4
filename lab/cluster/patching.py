"""The three patch types of the Kubernetes API: JSON patch, JSON merge patch and strategic merge.

Strategic merge follows the patch-merge keys of the built-in types for the lists that matter
(containers by name, container ports by containerPort, service ports by port, env by name,
volumes by name, volumeMounts by mountPath …) and the ``$patch``, ``$setElementOrder``,
``$retainKeys`` and ``$deleteFromPrimitiveList`` directives kubectl sends. Lists without a merge
key (tolerations, args, command) are replaced, as in Kubernetes.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import jsonpatch
import yaml

from lab.cluster.errors import ApiError, bad_request, unsupported_media_type
from lab.cluster.resources import ResourceType

JSON_PATCH = "application/json-patch+json"
MERGE_PATCH = "application/merge-patch+json"
STRATEGIC_PATCH = "application/strategic-merge-patch+json"
APPLY_PATCH = "application/apply-patch+yaml"

# Merge keys by list field name; "ports" depends on where it appears (see _merge_key).
_MERGE_KEYS = {
    "containers": "name",
    "initContainers": "name",
    "ephemeralContainers": "name",
    "env": "name",
    "volumes": "name",
    "volumeMounts": "mountPath",
    "volumeDevices": "devicePath",
    "imagePullSecrets": "name",
    "hostAliases": "ip",
    "conditions": "type",
    "ownerReferences": "uid",
    "topologySpreadConstraints": "topologyKey",
    "addresses": "type",
    "resourceClaims": "name",
}
# Lists of scalars merged as sets.
_MERGED_PRIMITIVE_LISTS = {"finalizers"}


def _merge_key(path: tuple[str, ...], kind: str) -> str | None:
    field = path[-1] if path else ""
    if field == "ports":
        if kind == "Service" and path == ("spec", "ports"):
            return "port"
        if len(path) >= 2 and path[-2] in ("containers", "initContainers", "ephemeralContainers"):
            return "containerPort"
        return None
    if field == "addresses" and kind != "Node":
        return None
    return _MERGE_KEYS.get(field)


def apply_patch(obj: dict[str, Any], body: bytes, content_type: str) -> dict[str, Any]:
    """Return the patched copy of ``obj``; raises ApiError (400/415/422) on a bad patch."""
    media = content_type.split(";", maxsplit=1)[0].strip()
    if media == APPLY_PATCH:  # objects take it through ApiService.apply; the scale view does not
        raise unsupported_media_type(content_type)
    if media not in (JSON_PATCH, MERGE_PATCH, STRATEGIC_PATCH):
        raise unsupported_media_type(content_type)
    try:
        document = json.loads(body or b"null")
    except ValueError as exc:
        raise bad_request(f"error decoding patch: {exc}") from exc
    if media == JSON_PATCH:
        return _json_patch(obj, document)
    if not isinstance(document, dict):
        raise bad_request("error decoding patch: a merge patch must be a JSON object")
    if media == MERGE_PATCH:
        merged: dict[str, Any] = merge_patch(obj, document)
        return merged
    return strategic_merge(obj, document, kind=str(obj.get("kind", "")))


def decode_apply(body: bytes, rt: ResourceType, name: str) -> dict[str, Any]:
    """An apply configuration (YAML or JSON), checked against the resource it is sent to."""
    try:
        config = yaml.safe_load(body.decode("utf-8", errors="replace") or "null")
    except yaml.YAMLError as exc:
        raise bad_request(f"error decoding YAML: {exc}") from exc
    if not isinstance(config, dict):
        raise bad_request("error decoding patch: an apply configuration must be an object")
    text = body.decode("utf-8", errors="replace")
    if not config.get("kind"):
        raise bad_request(f"Object 'Kind' is missing in '{text}'")
    if not config.get("apiVersion"):
        raise bad_request(f"Object 'apiVersion' is missing in '{text}'")
    if config["kind"] != rt.kind or config["apiVersion"] != rt.api_version:
        raise bad_request(
            f"the API version in the data ({config['apiVersion']}) and kind ({config['kind']}) "
            f"do not match the resource {rt.plural}.{rt.group or 'core'}"
        )
    meta = config.setdefault("metadata", {})
    if not isinstance(meta, dict):
        raise bad_request("metadata must be an object")
    sent = meta.setdefault("name", name)
    if sent != name:
        raise bad_request(
            f"the name of the object ({sent}) does not match the name on the URL ({name})"
        )
    return config


def _json_patch(obj: dict[str, Any], document: Any) -> dict[str, Any]:
    if not isinstance(document, list):
        raise bad_request("error decoding patch: a JSON patch must be a list of operations")
    result: Any = obj
    for operation in document:
        try:
            result = jsonpatch.JsonPatch([operation]).apply(result)
        except (jsonpatch.JsonPatchException, jsonpatch.JsonPointerException) as exc:
            raise _patch_failed(operation, exc) from exc
        except (TypeError, KeyError, AttributeError) as exc:
            raise bad_request(f"error decoding patch: invalid JSON patch operation: {exc}") from exc
    if not isinstance(result, dict):
        raise ApiError(422, "Invalid", "the patch replaced the whole object with a non-object")
    return result


def _patch_failed(operation: Any, exc: Exception) -> ApiError:
    """A JSON patch operation that does not apply, worded as evanphx/json-patch (which the
    API server uses) words it, inside the Status NewGenericServerResponse builds for 422."""
    op = operation.get("op") if isinstance(operation, dict) else None
    path = operation.get("path") if isinstance(operation, dict) else None
    if isinstance(exc, jsonpatch.InvalidJsonPatch):
        detail = (
            f"Unexpected kind: {op}: unknown object type"
            if path is not None
            else f"{op} operation failed to decode path: missing value"
        )
    elif op == "test":
        detail = f"testing value {path} failed: test failed"
    elif op in ("move", "copy"):
        source = operation.get("from")
        detail = f"{op} operation does not apply: doc is missing from path: {source}: missing value"
    elif op == "replace":
        detail = f"replace operation does not apply: doc is missing key: {path}: missing value"
    else:
        detail = f'{op} operation does not apply: doc is missing path: "{path}": missing value'
    return ApiError(
        422,
        "Invalid",
        "the server rejected our request due to an error in our request",
        causes=[{"reason": "UnexpectedServerResponse", "message": detail}],
    )


def merge_patch(target: Any, patch: Any) -> Any:
    """RFC 7386 JSON merge patch."""
    if not isinstance(patch, dict):
        return copy.deepcopy(patch)
    result = dict(target) if isinstance(target, dict) else {}
    for key, value in patch.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = merge_patch(result.get(key), value)
    return result


def strategic_merge(
    target: dict[str, Any], patch: dict[str, Any], *, kind: str, path: tuple[str, ...] = ()
) -> dict[str, Any]:
    directive = patch.get("$patch")
    if directive == "replace":
        return {k: copy.deepcopy(v) for k, v in patch.items() if k != "$patch"}
    if directive == "delete":
        return {}
    if directive not in (None, "merge"):
        raise bad_request(f"unknown patch type: {directive!r}")
    result = dict(target)
    retain = patch.get("$retainKeys")
    for key, value in patch.items():
        if key in ("$patch", "$retainKeys") or key.startswith("$setElementOrder/"):
            continue
        if key.startswith("$deleteFromPrimitiveList/"):
            field = key.split("/", 1)[1]
            result[field] = [v for v in result.get(field) or [] if v not in value]
            continue
        child_path = (*path, key)
        if value is None:
            result.pop(key, None)
        elif isinstance(value, dict):
            current = result.get(key)
            merged = strategic_merge(
                current if isinstance(current, dict) else {}, value, kind=kind, path=child_path
            )
            if value.get("$patch") == "delete":
                result.pop(key, None)
            else:
                result[key] = merged
        elif isinstance(value, list):
            result[key] = _merge_list(result.get(key), value, child_path, kind)
        else:
            result[key] = copy.deepcopy(value)
    if isinstance(retain, list):
        result = {k: v for k, v in result.items() if k in retain}
    for key, order in patch.items():
        if key.startswith("$setElementOrder/"):
            field = key.split("/", 1)[1]
            if isinstance(result.get(field), list):
                result[field] = _apply_order(result[field], order, _merge_key((*path, field), kind))
    return result


def _merge_list(current: Any, patch: list[Any], path: tuple[str, ...], kind: str) -> list[Any]:
    current_list = list(current) if isinstance(current, list) else []
    if path[-1] in _MERGED_PRIMITIVE_LISTS:
        merged = list(current_list)
        merged.extend(v for v in patch if v not in merged)
        return merged
    key = _merge_key(path, kind)
    if key is None:
        if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
            return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
        return copy.deepcopy(patch)
    if any(isinstance(item, dict) and item.get("$patch") == "replace" for item in patch):
        return [copy.deepcopy(i) for i in patch if not (isinstance(i, dict) and "$patch" in i)]
    merged = [copy.deepcopy(item) for item in current_list]
    for item in patch:
        if not isinstance(item, dict) or key not in item:
            raise bad_request(f"map: {item!r} does not contain declared merge key: {key}")
        index = next(
            (
                i
                for i, existing in enumerate(merged)
                if isinstance(existing, dict) and existing.get(key) == item[key]
            ),
            None,
        )
        if item.get("$patch") == "delete":
            if index is not None:
                merged.pop(index)
            continue
        if index is None:
            merged.append({k: v for k, v in copy.deepcopy(item).items() if k != "$patch"})
        else:
            merged[index] = strategic_merge(merged[index], item, kind=kind, path=path)
    return merged


def _apply_order(items: list[Any], order: list[Any], key: str | None) -> list[Any]:
    """Reorder by ``$setElementOrder``; items the order does not name go last."""
    if key is None:
        return items
    wanted = [o.get(key) if isinstance(o, dict) else o for o in order]
    ranked = {value: rank for rank, value in enumerate(wanted)}
    return sorted(
        items,
        key=lambda item: ranked.get(item.get(key) if isinstance(item, dict) else item, len(ranked)),
    )
