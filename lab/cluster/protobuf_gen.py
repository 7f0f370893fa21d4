"""Regenerate :mod:`lab.cluster.protobuf_fields` from the descriptors inside a kubectl binary.

Go programs built with the Kubernetes API types carry each ``generated.proto`` as a gzipped
``FileDescriptorProto``. This reads them (with the lab's own wire-format reader), keeps the
messages reachable from the served kinds, and prints a Python module::

    python -m lab.cluster.protobuf_gen /usr/lib/google-cloud-sdk/bin/kubectl.1.33 \\
        > lab/cluster/protobuf_fields.py && ruff format lab/cluster/protobuf_fields.py
"""

from __future__ import annotations

import re
import sys
import zlib
from pathlib import Path

from lab.cluster.protobuf import fields

# API packages whose kinds clients may send; their dependencies come along.
PACKAGES = (
    "k8s.io.api.core.v1",
    "k8s.io.api.apps.v1",
    "k8s.io.api.batch.v1",
    "k8s.io.api.autoscaling.v1",
    "k8s.io.api.autoscaling.v2",
    "k8s.io.api.policy.v1",
    "k8s.io.api.rbac.v1",
    "k8s.io.api.networking.v1",
    "k8s.io.api.scheduling.v1",
    "k8s.io.api.storage.v1",
    "k8s.io.api.discovery.v1",
    "k8s.io.api.coordination.v1",
    "k8s.io.api.events.v1",
    "k8s.io.api.authentication.v1",
    "k8s.io.api.authorization.v1",
)
EXTRA_ROOTS = (
    "k8s.io.apimachinery.pkg.runtime.Unknown",
    "k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions",
    "k8s.io.apimachinery.pkg.apis.meta.v1.Status",
)
# Go structs embedded with ``json:",inline"``: protobuf names a field after the type, JSON
# flattens it into the parent. The table names such a field "".
INLINE = frozenset(
    {
        "LocalObjectReference",
        "EphemeralContainerCommon",
        "PersistentVolumeSource",
        "VolumeSource",
        "IngressRuleValue",
        "ProbeHandler",
    }
)
_MESSAGE = 11
_REPEATED = 3

Field = tuple[str, int, bool, str]


def _text(value: int | bytes) -> str:
    return value.decode() if isinstance(value, bytes) else ""


def _descriptors(binary: bytes) -> list[bytes]:
    found: list[bytes] = []
    for match in re.finditer(rb"\x1f\x8b\x08\x00\x00\x00\x00\x00", binary):
        try:
            data = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(
                binary[match.start() : match.start() + 4_000_000]
            )
        except zlib.error:
            continue
        if data[:1] == b"\x0a" and b"generated.proto" in data[:120]:
            found.append(data)
    return found


def _messages(
    prefix: str, body: bytes, tables: dict[str, dict[int, Field]], maps: dict[str, str]
) -> None:
    parts = fields(body)
    name = prefix + "." + next(_text(v) for n, _, v in parts if n == 1)
    table: dict[int, Field] = {}
    for number, _, value in parts:
        if number == 3 and isinstance(value, bytes):
            _messages(name, value, tables, maps)
        elif (
            number == 7  # MessageOptions.map_entry
            and isinstance(value, bytes)
            and any(n == 7 and v == 1 for n, _, v in fields(value))
        ):
            maps[name] = ""
    for number, _, value in parts:
        if number != 2 or not isinstance(value, bytes):
            continue
        spec = {n: v for n, _, v in fields(value)}
        field_name, ref = _text(spec[1]), _text(spec.get(6, b"")).lstrip(".")
        short = ref.rpartition(".")[2]
        if short in INLINE and field_name in (short[:1].lower() + short[1:], "handler"):
            field_name = ""
        table[int(spec[3])] = (field_name, int(spec[5]), int(spec.get(4, 1)) == _REPEATED, ref)
    tables[name] = table


def load(binary: Path) -> dict[str, dict[int, Field]]:
    tables: dict[str, dict[int, Field]] = {}
    maps: dict[str, str] = {}
    for descriptor in _descriptors(binary.read_bytes()):
        parts = fields(descriptor)
        package = next(_text(v) for n, _, v in parts if n == 2)
        for number, _, value in parts:
            if number == 4 and isinstance(value, bytes):
                _messages(package, value, tables, maps)
    # Fold map entries into their fields: type -1, ref "key type,value type[,value message]".
    for table in tables.values():
        for number, (name, kind, _, ref) in list(table.items()):
            if kind == _MESSAGE and ref in maps:
                key_field, value_field = tables[ref][1], tables[ref][2]
                spec = f"{key_field[1]},{value_field[1]}"
                if value_field[3]:
                    spec += f",{value_field[3]}"
                table[number] = (name, -1, False, spec)
    for name in maps:
        tables.pop(name, None)
    return tables


def reachable(tables: dict[str, dict[int, Field]]) -> dict[str, dict[int, Field]]:
    meta = "k8s.io.apimachinery.pkg.apis.meta.v1.ObjectMeta"
    roots = [
        name
        for name, table in tables.items()
        if name.rpartition(".")[0] in PACKAGES
        and any(f[0] == "metadata" and f[3] == meta for f in table.values())
    ]
    keep: dict[str, dict[int, Field]] = {}
    todo = [*roots, *EXTRA_ROOTS]
    while todo:
        name = todo.pop()
        if name in keep or name not in tables:
            continue
        keep[name] = tables[name]
        for _, kind, _, ref in tables[name].values():
            if kind == _MESSAGE:
                todo.append(ref)
            elif kind == -1 and ref.count(",") == 2:
                todo.append(ref.split(",")[2])
    return dict(sorted(keep.items()))


def render(tables: dict[str, dict[int, Field]], source: str) -> str:
    lines = [
        '"""Protobuf field tables of the Kubernetes API types (generated; do not edit).',
        "",
        f"Made by ``python -m lab.cluster.protobuf_gen`` from the descriptors in {source}.",
        "Each message maps a field number to (JSON name, descriptor type, repeated, message type);",
        'type -1 is a map whose last element reads "key type,value type[,value message]"; the',
        'name "" marks an embedded struct that JSON flattens into its parent.',
        '"""',
        "",
        "MESSAGES: dict[str, dict[int, tuple[str, int, bool, str]]] = {",
    ]
    for name, table in tables.items():
        lines.append(f"    {name!r}: {{")
        for number, spec in sorted(table.items()):
            lines.append(f"        {number}: {spec!r},")
        lines.append("    },")
    lines.append("}")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    if len(argv) != 2:
        print("usage: python -m lab.cluster.protobuf_gen KUBECTL_BINARY", file=sys.stderr)
        return 2
    binary = Path(argv[1])
    tables = reachable(load(binary))
    sys.stdout.write(render(tables, binary.name))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv))
