"""Discovery documents (/version, /api, /apis, group versions) and the minimal OpenAPI v3.

kubectl resolves short names and kinds from these documents. It also asks OpenAPI v3 whether
the server supports the ``fieldValidation`` parameter before ``apply``; the per-group-version
documents say yes for every PATCH, which is all kubectl needs (it then falls back to its own
built-in types for strategic-merge metadata).
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from lab.cluster import resources
from lab.cluster.resources import ResourceType

SERVER_VERSION = {
    "major": "1",
    "minor": "32",
    "gitVersion": "v1.32.0-stratus-lab",
    "gitCommit": "0000000000000000000000000000000000000000",
    "gitTreeState": "clean",
    "buildDate": "2026-11-01T00:00:00Z",
    "goVersion": "go1.23.0",
    "compiler": "gc",
    "platform": "linux/amd64",
}

_SUBRESOURCE_VERBS = {
    "status": ["get", "patch", "update"],
    "scale": ["get", "patch", "update"],
    "log": ["get"],
    "eviction": ["create"],
    "exec": ["create", "get"],
    "attach": ["create", "get"],
    "portforward": ["create", "get"],
    "token": ["create"],
}


def core_versions(address: str) -> dict[str, Any]:
    return {
        "kind": "APIVersions",
        "versions": ["v1"],
        "serverAddressByClientCIDRs": [{"clientCIDR": "0.0.0.0/0", "serverAddress": address}],
    }


def _group_entry(name: str, versions: list[str]) -> dict[str, Any]:
    listed = [{"groupVersion": f"{name}/{v}", "version": v} for v in versions]
    return {"name": name, "versions": listed, "preferredVersion": listed[0]}


def group_list() -> dict[str, Any]:
    return {
        "kind": "APIGroupList",
        "apiVersion": "v1",
        "groups": [_group_entry(n, vs) for n, vs in resources.groups().items()],
    }


def group(name: str) -> dict[str, Any] | None:
    versions = resources.groups().get(name)
    if not versions:
        return None
    return {"kind": "APIGroup", "apiVersion": "v1", **_group_entry(name, versions)}


def _subresource_entry(rt: ResourceType, sub: str) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "name": f"{rt.plural}/{sub}",
        "singularName": "",
        "namespaced": rt.namespaced,
        "kind": rt.kind,
        "verbs": _SUBRESOURCE_VERBS[sub],
    }
    if sub == "scale":
        entry.update(group="autoscaling", version="v1", kind="Scale")
    elif sub == "eviction":
        entry.update(group="policy", version="v1", kind="Eviction")
    elif sub in ("exec", "attach", "portforward"):
        entry["kind"] = {"exec": "PodExecOptions", "attach": "PodAttachOptions"}.get(
            sub, "PodPortForwardOptions"
        )
    elif sub == "token":
        entry.update(group="authentication.k8s.io", version="v1", kind="TokenRequest")
    return entry


def resource_list(group_name: str, version: str) -> dict[str, Any] | None:
    served = resources.in_group_version(group_name, version)
    if not served:
        return None
    items: list[dict[str, Any]] = []
    for rt in served:
        entry: dict[str, Any] = {
            "name": rt.plural,
            "singularName": rt.singular,
            "namespaced": rt.namespaced,
            "kind": rt.kind,
            "verbs": list(rt.verbs),
        }
        if rt.short_names:
            entry["shortNames"] = list(rt.short_names)
        if rt.categories:
            entry["categories"] = list(rt.categories)
        items.append(entry)
        items.extend(_subresource_entry(rt, sub) for sub in rt.subresources)
    gv = f"{group_name}/{version}" if group_name else version
    return {"kind": "APIResourceList", "apiVersion": "v1", "groupVersion": gv, "resources": items}


def _gv_path(group_name: str, version: str) -> str:
    return f"apis/{group_name}/{version}" if group_name else f"api/{version}"


def _all_group_versions() -> list[tuple[str, str]]:
    pairs = [("", "v1")]
    pairs.extend((g, v) for g, versions in resources.groups().items() for v in versions)
    return pairs


def openapi_v3_root() -> dict[str, Any]:
    paths = {}
    for group_name, version in _all_group_versions():
        doc = openapi_v3_group_version(group_name, version) or {}
        digest = hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:16].upper()
        path = _gv_path(group_name, version)
        paths[path] = {"serverRelativeURL": f"/openapi/v3/{path}?hash={digest}"}
    return {"paths": paths}


def openapi_v3_group_version(group_name: str, version: str) -> dict[str, Any] | None:
    served = resources.in_group_version(group_name, version)
    if not served:
        return None
    paths: dict[str, Any] = {}
    for rt in served:
        prefix = f"/{_gv_path(group_name, version)}"
        item_path = (
            f"{prefix}/namespaces/{{namespace}}/{rt.plural}/{{name}}"
            if rt.namespaced
            else f"{prefix}/{rt.plural}/{{name}}"
        )
        gvk = {"group": rt.group, "version": rt.version, "kind": rt.kind}
        parameters = [
            {"name": "fieldValidation", "in": "query", "schema": {"type": "string"}},
            {"name": "dryRun", "in": "query", "schema": {"type": "string"}},
        ]
        paths[item_path] = {
            "patch": {
                "operationId": f"patch{rt.kind}",
                "x-kubernetes-group-version-kind": gvk,
                "x-kubernetes-action": "patch",
                "parameters": parameters,
                "responses": {"200": {"description": "OK"}},
            },
        }
    return {
        "openapi": "3.0.0",
        "info": {"title": "Stratus lab", "version": SERVER_VERSION["gitVersion"]},
        "paths": paths,
        "components": {"schemas": {}},
    }


def _varint(value: int) -> bytes:
    out = bytearray()
    while True:
        byte, value = value & 0x7F, value >> 7
        out.append(byte | (0x80 if value else 0))
        if not value:
            return bytes(out)


def _pb(field: int, payload: bytes | str) -> bytes:
    """One length-delimited protobuf field."""
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint((field << 3) | 2) + _varint(len(data)) + data


def _v2_patch_paths() -> list[tuple[str, dict[str, str]]]:
    """(item path, group-version-kind) of every served kind's PATCH."""
    found = []
    for group_name, version in _all_group_versions():
        for rt in resources.in_group_version(group_name, version):
            prefix = f"/{_gv_path(group_name, version)}"
            item = (
                f"{prefix}/namespaces/{{namespace}}/{rt.plural}/{{name}}"
                if rt.namespaced
                else f"{prefix}/{rt.plural}/{{name}}"
            )
            found.append((item, {"group": rt.group, "version": rt.version, "kind": rt.kind}))
    return found


def openapi_v2(protobuf: bool) -> bytes:
    """An OpenAPI v2 document with each kind's PATCH (and its ``dryRun`` parameter) and no
    definitions.

    kubectl 1.20 downloads it (as gnostic protobuf) before ``apply``: with no definitions it
    skips schema validation, which the server then does itself; before ``diff`` and
    ``--dry-run=server`` it looks for the ``dryRun`` parameter of the kind's PATCH. Field
    numbers are gnostic's ``openapi_v2`` messages (read from kubectl 1.20's own descriptors).
    """
    title, version = "Stratus lab", str(SERVER_VERSION["gitVersion"])
    patches = _v2_patch_paths()
    if not protobuf:
        paths = {
            item: {
                "patch": {
                    "x-kubernetes-group-version-kind": gvk,
                    "x-kubernetes-action": "patch",
                    "parameters": [{"name": "dryRun", "in": "query", "type": "string"}],
                    "responses": {"200": {"description": "OK"}},
                }
            }
            for item, gvk in patches
        }
        return json.dumps(
            {
                "swagger": "2.0",
                "info": {"title": title, "version": version},
                "paths": paths,
                "definitions": {},
            }
        ).encode()
    # Operation: parameters 8 (ParametersItem 1 → Parameter 2 → NonBodyParameter 3 → query
    # sub-schema: in 2, name 4, type 6), responses 9, vendor_extension 13 (NamedAny: name 1,
    # value 2 → Any.yaml 2). PathItem.patch is 8; NamedPathItem name 1, value 2; Paths.path 2.
    dry_run = _pb(8, _pb(1, _pb(2, _pb(3, _pb(2, "query") + _pb(4, "dryRun") + _pb(6, "string")))))
    ok = _pb(9, _pb(1, _pb(1, "200") + _pb(2, _pb(1, _pb(1, "OK")))))
    named_paths = b""
    for item, gvk in patches:
        gvk_yaml = f'group: "{gvk["group"]}"\nkind: {gvk["kind"]}\nversion: {gvk["version"]}\n'
        extensions = _pb(13, _pb(1, "x-kubernetes-group-version-kind") + _pb(2, _pb(2, gvk_yaml)))
        extensions += _pb(13, _pb(1, "x-kubernetes-action") + _pb(2, _pb(2, "patch\n")))
        operation = dry_run + ok + extensions
        named_paths += _pb(2, _pb(1, item) + _pb(2, _pb(8, operation)))
    info = _pb(1, title) + _pb(2, version)
    return _pb(1, "2.0") + _pb(2, info) + _pb(8, named_paths)
