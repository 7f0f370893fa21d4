"""Request bodies in the Kubernetes protobuf encoding, decoded into the objects JSON would carry.

kubectl 1.32 and later send the bodies of its typed clients (``kubectl create namespace``,
``create deployment``, ``create secret`` …) as ``application/vnd.kubernetes.protobuf`` and do
not fall back to JSON when the server answers 415, so the lab reads them. A body is the magic
``k8s\\x00`` followed by a ``runtime.Unknown`` message: ``typeMeta`` (apiVersion, kind), ``raw``
(the object's own message), ``contentEncoding`` and ``contentType``.

The decoder is a generic wire-format reader driven by the field tables in
:mod:`lab.cluster.protobuf_fields` (generated from the descriptors embedded in kubectl by
:mod:`lab.cluster.protobuf_gen`), plus the JSON mapping of the few apimachinery types that are
not plain messages in JSON: ``Time`` and ``MicroTime`` (RFC 3339 strings), ``Duration``,
``Quantity`` (a string), ``IntOrString``, ``RawExtension`` and ``FieldsV1`` (embedded JSON) and
the ``ExtraValue``-style wrappers of a string list.

Go marshals every non-pointer field, zero or not, so a zero scalar on the wire usually means
"unset" and is dropped, as ``omitempty`` drops it from JSON. The optional (pointer) fields
where an explicit zero means something (``replicas: 0``, ``immutable: false`` …) keep it.
"""

from __future__ import annotations

import base64
import json
import struct
from datetime import UTC, datetime
from functools import cache
from typing import Any

from lab.cluster.errors import ApiError, bad_request

MAGIC = b"k8s\x00"
CONTENT_TYPE = "application/vnd.kubernetes.protobuf"

_META = "k8s.io.apimachinery.pkg.apis.meta.v1."
_UNKNOWN = "k8s.io.apimachinery.pkg.runtime.Unknown"

# descriptor.proto field types
_DOUBLE, _FLOAT, _INT64, _UINT64, _INT32, _FIXED64, _FIXED32, _BOOL, _STRING = range(1, 10)
_MESSAGE, _BYTES, _UINT32, _ENUM, _SFIXED32, _SFIXED64, _SINT32, _SINT64 = range(11, 19)

# Optional (pointer) fields whose zero value is meaningful, by message and field name.
_KEEP_ZERO: dict[str, frozenset[str]] = {
    "k8s.io.api.apps.v1.DeploymentSpec": frozenset(
        {"replicas", "revisionHistoryLimit", "progressDeadlineSeconds"}
    ),
    "k8s.io.api.apps.v1.ReplicaSetSpec": frozenset({"replicas"}),
    "k8s.io.api.apps.v1.StatefulSetSpec": frozenset({"replicas", "revisionHistoryLimit"}),
    "k8s.io.api.apps.v1.DaemonSetSpec": frozenset({"revisionHistoryLimit"}),
    "k8s.io.api.batch.v1.JobSpec": frozenset(
        {
            "parallelism",
            "completions",
            "backoffLimit",
            "activeDeadlineSeconds",
            "ttlSecondsAfterFinished",
            "suspend",
            "manualSelector",
        }
    ),
    "k8s.io.api.batch.v1.CronJobSpec": frozenset(
        {
            "suspend",
            "startingDeadlineSeconds",
            "successfulJobsHistoryLimit",
            "failedJobsHistoryLimit",
        }
    ),
    "k8s.io.api.core.v1.ConfigMap": frozenset({"immutable"}),
    "k8s.io.api.core.v1.Secret": frozenset({"immutable"}),
    "k8s.io.api.core.v1.ServiceAccount": frozenset({"automountServiceAccountToken"}),
    "k8s.io.api.core.v1.PodSpec": frozenset(
        {
            "automountServiceAccountToken",
            "terminationGracePeriodSeconds",
            "activeDeadlineSeconds",
            "enableServiceLinks",
            "shareProcessNamespace",
            "hostUsers",
        }
    ),
    "k8s.io.api.core.v1.SecurityContext": frozenset(
        {"runAsUser", "runAsGroup", "runAsNonRoot", "privileged", "readOnlyRootFilesystem"}
    ),
    "k8s.io.api.core.v1.PodSecurityContext": frozenset(
        {"runAsUser", "runAsGroup", "runAsNonRoot", "fsGroup"}
    ),
    "k8s.io.api.core.v1.PersistentVolumeClaimSpec": frozenset({"storageClassName"}),
    "k8s.io.api.autoscaling.v1.HorizontalPodAutoscalerSpec": frozenset({"minReplicas"}),
    "k8s.io.api.autoscaling.v2.HorizontalPodAutoscalerSpec": frozenset({"minReplicas"}),
    "k8s.io.api.scheduling.v1.PriorityClass": frozenset({"value"}),
    "k8s.io.api.core.v1.ServicePort": frozenset({"port"}),
    "k8s.io.apimachinery.pkg.apis.meta.v1.DeleteOptions": frozenset({"gracePeriodSeconds"}),
}

# Messages that JSON shows as a bare list of strings.
_STRING_LISTS = frozenset(
    {
        "k8s.io.api.authentication.v1.ExtraValue",
        "k8s.io.api.authorization.v1.ExtraValue",
        "k8s.io.api.certificates.v1.ExtraValue",
        _META + "Verbs",
    }
)

# The API groups whose protobuf package is not ``k8s.io.api.<first label of the group>``.
_PACKAGES = {"": "core"}


Table = dict[str, dict[int, tuple[str, int, bool, str]]]


@cache
def _messages() -> Table:
    """The field tables, imported on the first protobuf body (they take ~20 ms to load)."""
    from lab.cluster.protobuf_fields import MESSAGES

    return MESSAGES


def is_protobuf(content_type: str) -> bool:
    return content_type.split(";", maxsplit=1)[0].strip().lower() == CONTENT_TYPE


def decode_object(body: bytes) -> dict[str, Any]:
    """The object a protobuf request body carries, as the equivalent JSON object."""
    if not body.startswith(MAGIC):
        raise bad_request("error decoding request body: protobuf body lacks the k8s prefix")
    try:
        envelope = decode_message(_UNKNOWN, body[len(MAGIC) :])
        type_meta = envelope.get("typeMeta") or {}
        api_version = str(type_meta.get("apiVersion", ""))
        kind = str(type_meta.get("kind", ""))
        encoding = envelope.get("contentEncoding", "")
        if encoding:
            raise bad_request(f"error decoding request body: unsupported encoding {encoding!r}")
        raw = base64.b64decode(envelope.get("raw", ""))
        name = message_name(api_version, kind)
        if name is None:
            raise ApiError(
                415,
                "UnsupportedMediaType",
                f"the protobuf encoding of {kind} ({api_version}) is not supported by the "
                "Stratus lab; send application/json",
            )
        obj = decode_message(name, raw)
    except ApiError:
        raise
    except (ValueError, IndexError, struct.error, KeyError) as exc:
        raise bad_request(f"error decoding request body: malformed protobuf: {exc}") from exc
    return {"apiVersion": api_version, "kind": kind, **obj}


def message_name(api_version: str, kind: str) -> str | None:
    """The message of a kind: ``apps/v1`` Deployment → ``k8s.io.api.apps.v1.Deployment``."""
    group, _, version = api_version.rpartition("/")
    package = _PACKAGES.get(group, group.split(".")[0])
    for candidate in (f"k8s.io.api.{package}.{version}.{kind}", f"{_META}{kind}"):
        if candidate in _messages():
            return candidate
    return None


def _varint(buf: bytes, pos: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        byte = buf[pos]
        pos += 1
        result |= (byte & 0x7F) << shift
        if not byte & 0x80:
            return result, pos
        shift += 7
        if shift > 63:
            raise ValueError("varint too long")


def fields(buf: bytes) -> list[tuple[int, int, int | bytes]]:
    """The (number, wire type, value) triples of one message, in wire order."""
    out: list[tuple[int, int, int | bytes]] = []
    pos, end = 0, len(buf)
    while pos < end:
        tag, pos = _varint(buf, pos)
        number, wire = tag >> 3, tag & 7
        value: int | bytes
        if wire == 0:
            value, pos = _varint(buf, pos)
        elif wire == 1:
            value = int.from_bytes(buf[pos : pos + 8], "little")
            pos += 8
        elif wire == 2:
            length, pos = _varint(buf, pos)
            if pos + length > end:
                raise ValueError("length-delimited field runs past the end")
            value = buf[pos : pos + length]
            pos += length
        elif wire == 5:
            value = int.from_bytes(buf[pos : pos + 4], "little")
            pos += 4
        else:
            raise ValueError(f"unsupported wire type {wire}")
        if pos > end:
            raise ValueError("field runs past the end")
        out.append((number, wire, value))
    return out


def _signed(value: int, bits: int) -> int:
    value &= (1 << bits) - 1
    return value - (1 << bits) if value >> (bits - 1) else value


def _scalar(kind: int, wire: int, value: int | bytes) -> Any:
    if isinstance(value, bytes):
        if kind == _STRING:
            return value.decode("utf-8")
        if kind == _BYTES:
            return base64.b64encode(value).decode("ascii")
        raise ValueError(f"unexpected length-delimited value for type {kind}")
    if kind in (_INT64, _SFIXED64):
        return _signed(value, 64)
    if kind in (_INT32, _SFIXED32, _ENUM):
        return _signed(value, 32)
    if kind in (_UINT64, _UINT32, _FIXED64, _FIXED32):
        return value
    if kind == _BOOL:
        return bool(value)
    if kind in (_SINT32, _SINT64):
        return (value >> 1) ^ -(value & 1)
    if kind == _DOUBLE:
        return struct.unpack("<d", value.to_bytes(8, "little"))[0]
    if kind == _FLOAT:
        return struct.unpack("<f", value.to_bytes(4, "little"))[0]
    raise ValueError(f"unexpected type {kind} for wire type {wire}")


def _packed(kind: int, data: bytes) -> list[Any]:
    values: list[Any] = []
    pos = 0
    while pos < len(data):
        if kind in (_DOUBLE, _FIXED64, _SFIXED64):
            raw, pos = int.from_bytes(data[pos : pos + 8], "little"), pos + 8
            values.append(_scalar(kind, 1, raw))
        elif kind in (_FLOAT, _FIXED32, _SFIXED32):
            raw, pos = int.from_bytes(data[pos : pos + 4], "little"), pos + 4
            values.append(_scalar(kind, 5, raw))
        else:
            raw, pos = _varint(data, pos)
            values.append(_scalar(kind, 0, raw))
    return values


def _go_duration(nanoseconds: int) -> str:
    """Go's ``time.Duration.String()``: ``1h2m3.5s``, ``150ms``, ``0s``."""
    if nanoseconds == 0:
        return "0s"
    sign = "-" if nanoseconds < 0 else ""
    n = abs(nanoseconds)
    if n < 1_000_000_000:
        for unit, scale in (("ms", 1_000_000), ("µs", 1_000), ("ns", 1)):
            if n >= scale:
                return sign + _trim(n / scale) + unit
    hours, rest = divmod(n, 3_600_000_000_000)
    minutes, rest = divmod(rest, 60_000_000_000)
    seconds = _trim(rest / 1_000_000_000)
    text = (
        f"{hours}h{minutes}m{seconds}s"
        if hours
        else (f"{minutes}m{seconds}s" if minutes else f"{seconds}s")
    )
    return sign + text


def _trim(value: float) -> str:
    return f"{value:.9f}".rstrip("0").rstrip(".")


def _special(name: str, buf: bytes) -> tuple[bool, Any]:
    """The JSON value of the apimachinery types that are not objects in JSON."""
    if name in (_META + "Time", _META + "MicroTime"):
        parts = {n: v for n, _, v in fields(buf)}
        seconds = _signed(int(parts.get(1, 0)), 64)
        nanos = int(parts.get(2, 0))
        if not seconds and not nanos:
            return True, None
        moment = datetime.fromtimestamp(seconds, UTC)
        if name.endswith("MicroTime"):
            return True, moment.strftime("%Y-%m-%dT%H:%M:%S") + f".{nanos // 1000:06d}Z"
        return True, moment.strftime("%Y-%m-%dT%H:%M:%SZ")
    if name == _META + "Duration":
        parts = {n: v for n, _, v in fields(buf)}
        return True, _go_duration(_signed(int(parts.get(1, 0)), 64))
    if name == "k8s.io.apimachinery.pkg.api.resource.Quantity":
        parts = {n: v for n, _, v in fields(buf)}
        raw = parts.get(1, b"")
        return True, raw.decode() if isinstance(raw, bytes) else ""
    if name == "k8s.io.apimachinery.pkg.util.intstr.IntOrString":
        parts = {n: v for n, _, v in fields(buf)}
        if int(parts.get(1, 0)) == 1:
            text = parts.get(3, b"")
            return True, text.decode() if isinstance(text, bytes) else ""
        return True, _signed(int(parts.get(2, 0)), 32)
    if name in ("k8s.io.apimachinery.pkg.runtime.RawExtension", _META + "FieldsV1"):
        parts = {n: v for n, _, v in fields(buf)}
        raw = parts.get(1, b"")
        if not isinstance(raw, bytes) or not raw:
            return True, None
        if raw.startswith(MAGIC):
            return True, decode_object(raw)
        return True, json.loads(raw)
    if name in _STRING_LISTS:
        return True, [v.decode() for n, _, v in fields(buf) if n == 1 and isinstance(v, bytes)]
    return False, None


def _zero(value: Any) -> bool:
    return (
        value is None
        or value == ""
        or value is False
        or (isinstance(value, int | float) and not isinstance(value, bool) and value == 0)
    )


def decode_message(name: str, buf: bytes) -> dict[str, Any]:
    """One message as the JSON object Kubernetes would show for it."""
    table = _messages().get(name)
    if table is None:
        raise KeyError(f"no field table for {name}")
    keep_zero = _KEEP_ZERO.get(name, frozenset())
    out: dict[str, Any] = {}
    for number, wire, value in fields(buf):
        spec = table.get(number)
        if spec is None:
            continue  # a field newer than our tables: ignored, as an older server would
        field_name, kind, repeated, ref = spec
        if kind == -1:  # a map: ref is "key type,value type[,value message]"
            if not isinstance(value, bytes):
                raise ValueError(f"map field {field_name} is not length-delimited")
            key_kind, value_kind, value_ref = _map_types(ref)
            entry = {n: (w, v) for n, w, v in fields(value)}
            key = _scalar(key_kind, *entry[1]) if 1 in entry else ""
            if 2 not in entry:
                item: Any = "" if value_kind in (_STRING, _BYTES) else None
            elif value_kind == _MESSAGE:
                raw = entry[2][1]
                item = _message_value(value_ref, raw if isinstance(raw, bytes) else b"")
            else:
                item = _scalar(value_kind, *entry[2])
            out.setdefault(field_name, {})[str(key)] = item
            continue
        if kind == _MESSAGE:
            if not isinstance(value, bytes):
                raise ValueError(f"message field {field_name} is not length-delimited")
            decoded = _message_value(ref, value)
            if not field_name:  # an embedded struct, inline in JSON
                out.update(decoded or {})
            elif repeated:
                out.setdefault(field_name, []).append(decoded)
            elif decoded is not None:
                out[field_name] = decoded
            continue
        if repeated and wire == 2 and kind not in (_STRING, _BYTES) and isinstance(value, bytes):
            out.setdefault(field_name, []).extend(_packed(kind, value))
            continue
        scalar = _scalar(kind, wire, value)
        if repeated:
            out.setdefault(field_name, []).append(scalar)
        elif not _zero(scalar) or field_name in keep_zero:
            out[field_name] = scalar
        else:
            out.pop(field_name, None)
    return out


def _message_value(name: str, buf: bytes) -> Any:
    special, value = _special(name, buf)
    return value if special else decode_message(name, buf)


def _map_types(ref: str) -> tuple[int, int, str]:
    key, value, *message = ref.split(",")
    return int(key), int(value), message[0] if message else ""
