"""The downward API: a pod's own fields and its containers' resources, as the kubelet renders
them into environment variables and downward-API volume files.

- ``fieldRef``: ``metadata.name|namespace|uid``, ``metadata.labels['k']`` and
  ``metadata.annotations['k']``, the whole ``metadata.labels``/``annotations`` (volumes only:
  ``key="value"`` lines, sorted, the value quoted as Go's ``%q`` quotes it, no trailing
  newline), ``spec.nodeName``, ``spec.serviceAccountName``, ``status.podIP``,
  ``status.hostIP``.
- ``resourceFieldRef``: ``limits.*`` and ``requests.*`` of cpu, memory and ephemeral-storage
  divided by the ``divisor`` and rounded up, as the kubelet computes them (``limits.memory``
  with ``divisor: 1Mi`` of a 64Mi limit is ``64``; ``limits.cpu`` of 100m is ``1``). A limit
  that is not set is the node's allocatable, as the kubelet substitutes it.

Values are read from the pod as it is now, so a label added later appears in the volume's
file (the kubelet rewrites it on its next sync) but not in a running container's environment.
"""

from __future__ import annotations

import hashlib
import math
import re
from decimal import Decimal
from typing import Any

from lab.cluster import quantity

# The annotations a kubelet keeps on its own copy of the pod (its config source, and when it
# first saw the pod), which the downward API shows beside the pod's own.
CONFIG_SOURCE = "kubernetes.io/config.source"
CONFIG_SEEN = "kubernetes.io/config.seen"
_SUBSCRIPT = re.compile(r"^metadata\.(labels|annotations)\['(.+)'\]$")


def go_quote(text: str) -> str:
    """``text`` as Go's ``strconv.Quote`` writes it: printable characters kept, ``"`` and
    ``\\`` escaped, control characters as ``\\n``, ``\\t``, ``\\x00`` or ``\\u0085``."""
    escapes = {
        "\a": r"\a",
        "\b": r"\b",
        "\f": r"\f",
        "\n": r"\n",
        "\r": r"\r",
        "\t": r"\t",
        "\v": r"\v",
        '"': r"\"",
        "\\": r"\\",
    }
    out: list[str] = []
    for char in text:
        if char in escapes:
            out.append(escapes[char])
        elif char.isprintable() or char == " ":
            out.append(char)
        elif ord(char) < 0x80:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) <= 0xFFFF:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return '"' + "".join(out) + '"'


def format_map(values: dict[str, str]) -> str:
    """A labels or annotations file, as the kubelet's ``fieldpath.FormatMap`` writes it."""
    return "\n".join(f"{key}={go_quote(str(values[key]))}" for key in sorted(values))


def kubelet_annotations(pod: dict[str, Any]) -> dict[str, str]:
    """The pod's annotations as the kubelet holds them (with its own two added)."""
    meta = pod.get("metadata") or {}
    annotations = {str(k): str(v) for k, v in (meta.get("annotations") or {}).items()}
    created = str(meta.get("creationTimestamp") or "1970-01-01T00:00:00Z")
    # The kubelet saw the pod a moment after it was created, and writes nanoseconds.
    nanos = int(hashlib.sha256(str(meta.get("uid", "")).encode()).hexdigest()[:8], 16) % 10**9
    seen = f"{created[:-1]}.{nanos:09d}Z" if created.endswith("Z") else created
    annotations.setdefault(CONFIG_SEEN, seen)
    annotations.setdefault(CONFIG_SOURCE, "api")
    return annotations


def field_value(pod: dict[str, Any], path: str, *, pod_ip: str = "", host_ip: str = "") -> str:
    """A ``fieldRef``'s value; the whole labels/annotations in the volume file format."""
    meta = pod.get("metadata") or {}
    spec = pod.get("spec") or {}
    status = pod.get("status") or {}
    labels = {str(k): str(v) for k, v in (meta.get("labels") or {}).items()}
    subscript = _SUBSCRIPT.match(path)
    if subscript is not None:
        values = labels if subscript.group(1) == "labels" else kubelet_annotations(pod)
        return values.get(subscript.group(2), "")
    if path == "metadata.labels":
        return format_map(labels)
    if path == "metadata.annotations":
        return format_map(kubelet_annotations(pod))
    simple = {
        "metadata.name": meta.get("name", ""),
        "metadata.namespace": meta.get("namespace", ""),
        "metadata.uid": meta.get("uid", ""),
        "spec.nodeName": spec.get("nodeName", ""),
        "spec.serviceAccountName": spec.get("serviceAccountName") or "default",
        "status.podIP": pod_ip or status.get("podIP", ""),
        "status.podIPs": pod_ip or status.get("podIP", ""),
        "status.hostIP": host_ip or status.get("hostIP", ""),
        "status.hostIPs": host_ip or status.get("hostIP", ""),
    }
    return str(simple.get(path) or "")


def _container(pod: dict[str, Any], name: str) -> dict[str, Any]:
    spec = pod.get("spec") or {}
    for container in (spec.get("containers") or []) + (spec.get("initContainers") or []):
        if container.get("name") == name:
            return dict(container)
    return {}


def resource_value(
    pod: dict[str, Any],
    container_name: str,
    ref: dict[str, Any],
    allocatable: dict[str, Any],
) -> str:
    """A ``resourceFieldRef``'s value for the named container (``allocatable``: the node's,
    what an unset limit stands for)."""
    container = _container(pod, str(ref.get("containerName") or container_name))
    kind, _, resource = str(ref.get("resource", "")).partition(".")
    resources = container.get("resources") or {}
    values = dict(resources.get(kind) or {})
    raw = values.get(resource)
    if raw is None and kind == "requests":
        raw = (resources.get("limits") or {}).get(resource)  # a request defaults to the limit
    if raw is None and kind == "limits":
        raw = allocatable.get(resource)
    try:
        amount = quantity.parse(raw) if raw is not None else Decimal(0)
        divisor = quantity.parse(ref.get("divisor") or "1")
    except ValueError:
        return ""
    if divisor <= 0:
        return ""
    if resource == "cpu":
        # The kubelet divides milli-values, so a divisor below 1m counts as 1m.
        milli = amount * 1000
        divisor_milli = max(divisor * 1000, Decimal(1))
        return str(math.ceil(milli / divisor_milli))
    return str(math.ceil(amount / divisor))
