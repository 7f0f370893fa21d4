"""ConfigMap values that drifted from what was last applied and that the app rejects.

The witness is the app's own words — a log line such as ``invalid value "x" for NAME`` — for a
variable the container takes from a ConfigMap key (``configMapKeyRef``, or ``envFrom``). The
key is at fault when its value now differs from the value ``kubectl apply`` last wrote: that
is the value to restore. A drifted key the app accepts (no rejection in any log) is a change
someone made on purpose, not a fault.

Facts set (``configmap-rejected-value``): ``key``, ``value`` (as it is now), ``applied`` (the
last-applied value), ``variable`` (the env var the app rejected), ``readers`` (workloads that
read the key, "Kind/name", the rejecting ones first).
"""

from __future__ import annotations

import re

from agents.analyzers import _workloads as w
from agents.model import Category, Evidence, Finding
from agents.snapshot import Snapshot

NAME = "config"
# invalid value "paypal-live" for PAYMENT_PROVIDER / invalid value for LOG_LEVEL: "x"
_REJECTED = re.compile(
    r"invalid (?:value|setting)\s+\"?(?P<value>[^\"\s]*)\"?\s+for\s+(?P<env>[A-Za-z_][A-Za-z0-9_]*)"
    r"|invalid (?:value|setting) for (?P<env2>[A-Za-z_][A-Za-z0-9_]*)",
    re.IGNORECASE,
)


def _sources(container: w.Obj, variable: str) -> list[tuple[str, str]]:
    """The (ConfigMap, key) pairs a container's variable comes from."""
    found = []
    for entry in container.get("env") or []:
        if entry.get("name") == variable:
            ref = (entry.get("valueFrom") or {}).get("configMapKeyRef") or {}
            if ref.get("name") and ref.get("key"):
                found.append((str(ref["name"]), str(ref["key"])))
            return found  # an explicit variable hides envFrom
    for source in container.get("envFrom") or []:
        ref = source.get("configMapRef") or {}
        if ref.get("name"):
            found.append((str(ref["name"]), variable[len(source.get("prefix") or "") :]))
    return found


def _reads(workload: w.Obj, configmap: str, key: str) -> bool:
    for container in w.containers_of(w.template_of(workload)) + w.containers_of(
        w.template_of(workload), init=True
    ):
        for entry in container.get("env") or []:
            ref = (entry.get("valueFrom") or {}).get("configMapKeyRef") or {}
            if ref.get("name") == configmap and ref.get("key") == key:
                return True
        if any(
            (s.get("configMapRef") or {}).get("name") == configmap
            for s in container.get("envFrom") or []
        ):
            return True
    return False


def _rejections(snapshot: Snapshot) -> list[tuple[w.Obj, w.Obj, str, str | None, str]]:
    """(pod, container spec, variable, rejected value or None, log line) from current and
    previous logs."""
    found = []
    for pod in snapshot.pods:
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            cname = str(status.get("name"))
            spec = next(
                (c for c in (pod.get("spec") or {}).get("containers") or [] if c["name"] == cname),
                None,
            )
            if spec is None:
                continue
            current, previous = w.logs_of(snapshot, w.name_of(pod), cname)
            for line in (previous + "\n" + current).splitlines():
                match = _REJECTED.search(line)
                if match:
                    variable = match["env"] or match["env2"]
                    found.append((pod, spec, variable, match["value"], line.strip()))
                    break
    return found


def rejected_values(snapshot: Snapshot) -> list[Finding]:
    findings: dict[tuple[str, str], Finding] = {}
    for pod, container, variable, value, line in _rejections(snapshot):
        for configmap_name, key in _sources(container, variable):
            if (configmap_name, key) in findings:
                continue
            configmap = snapshot.get("ConfigMap", configmap_name)
            if configmap is None:
                continue
            now = (configmap.get("data") or {}).get(key)
            applied = ((w.last_applied(configmap) or {}).get("data") or {}).get(key)
            if now is None or applied is None or str(applied) == str(now):
                continue  # no drift to undo: the value was always so (a bad deploy of config)
            if value is not None and value != "" and value != str(now):
                continue  # the app rejected another value than the key holds
            owner = w.workload_of(snapshot, pod)
            readers = sorted(
                (
                    f"{kind}/{w.name_of(o)}"
                    for kind in w.WORKLOAD_KINDS
                    for o in snapshot.of(kind)
                    if _reads(o, configmap_name, key)
                ),
                key=lambda r: (r != (f"{owner[0]}/{owner[1]}" if owner else ""), r),
            )
            evidence: list[Evidence] = [
                w.evidence("log", f"pod/{w.name_of(pod)}", line),
                w.evidence(
                    "spec",
                    f"configmap/{configmap_name}",
                    f"{key}: {now!r} (last applied: {applied!r})",
                ),
                w.evidence(
                    "spec",
                    f"pod/{w.name_of(pod)}",
                    f"container {container['name']}: {variable} from configmap "
                    f"{configmap_name} key {key}",
                ),
            ]
            findings[(configmap_name, key)] = Finding(
                analyzer=NAME,
                mechanism="configmap-rejected-value",
                category=Category.CONFIGURATION,
                resource=w.key(snapshot, "ConfigMap", configmap_name),
                symptoms=[
                    w.key(snapshot, "Pod", w.name_of(pod)),
                    *([w.key(snapshot, *owner)] if owner else []),
                ],
                summary=(
                    f"configmap/{configmap_name} key {key} was changed to {now!r} (last applied "
                    f"{applied!r}); {w.name_of(pod)} rejects it as {variable}"
                ),
                evidence=evidence,
                severity=3,
                confidence=0.92,
                facts={
                    "key": key,
                    "value": str(now),
                    "applied": str(applied),
                    "variable": variable,
                    "readers": readers,
                },
            )
    return list(findings.values())


ANALYZERS = [rejected_values]
