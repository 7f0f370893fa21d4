"""Credential errors between a caller and a server, caused by a Secret that drifted.

The witness is a caller's log line saying the server refused its credentials (``Authentication
failed``, ``password authentication failed``, ``Access denied``, ``WRONGPASS`` …) on a call to
a Service. The Secrets both sides read (env ``secretKeyRef``, ``envFrom``, secret volumes) are
then compared with what ``kubectl apply`` last wrote — by digest only: the snapshot never holds
a value, and neither does a finding. A Secret whose key no longer matches its last-applied
digest is the change that broke the login; the workloads that read it must restart to pick the
restored value up.

Facts set (``secret-drift-auth``): ``keys`` (the drifted keys), ``readers`` (workloads that
read the Secret, "Kind/name"), ``side`` ("server" or "client"), ``service`` (the one called).
"""

from __future__ import annotations

import json

from agents.analyzers import _net as n
from agents.analyzers import _workloads as w
from agents.model import Category, Finding
from agents.snapshot import LAST_APPLIED, Snapshot

NAME = "credentials"


def secret_keys(workload: w.Obj) -> dict[str, set[str] | None]:
    """Secret name → the keys the workload reads (None: all of them)."""
    found: dict[str, set[str] | None] = {}
    template = w.template_of(workload)
    for container in w.containers_of(template) + w.containers_of(template, init=True):
        for entry in container.get("env") or []:
            ref = (entry.get("valueFrom") or {}).get("secretKeyRef") or {}
            if ref.get("name") and ref.get("key"):
                keys = found.setdefault(str(ref["name"]), set())
                if keys is not None:
                    keys.add(str(ref["key"]))
        for source in container.get("envFrom") or []:
            if (source.get("secretRef") or {}).get("name"):
                found[str(source["secretRef"]["name"])] = None
    for volume in (template.get("spec") or {}).get("volumes") or []:
        if (volume.get("secret") or {}).get("secretName"):
            found[str(volume["secret"]["secretName"])] = None
    return found


def drifted_keys(secret: w.Obj, keys: set[str] | None) -> list[str]:
    """Keys whose digest differs from the last-applied digest (the snapshot holds digests)."""
    text = ((secret.get("metadata") or {}).get("annotations") or {}).get(LAST_APPLIED)
    try:
        applied = (json.loads(text).get("data") or {}) if text else {}
    except (ValueError, AttributeError):
        return []
    live = secret.get("data") or {}
    wanted = set(applied) if keys is None else keys & set(applied)
    return sorted(k for k in wanted if live.get(k) != applied[k])


def _readers(snapshot: Snapshot, secret: str) -> list[str]:
    return sorted(
        f"{kind}/{w.name_of(o)}" for kind, o in n.workloads(snapshot) if secret in secret_keys(o)
    )


def drifted_credentials(snapshot: Snapshot) -> list[Finding]:
    failures: dict[str, list[n.Call]] = {}
    for call in n.calls(snapshot):
        if call.failed and call.kind == "auth":
            failures.setdefault(call.host, []).append(call)
    findings: dict[str, Finding] = {}
    for host, failing in sorted(failures.items()):
        service = snapshot.get("Service", host)
        servers = n.selected_workloads(snapshot, n.selector_of(service)) if service else []
        clients = {
            owner
            for c in failing
            if (pod := n.caller_pod(snapshot, c)) is not None
            and (owner := w.workload_of(snapshot, pod)) is not None
        }
        sides = [("server", k, o) for k, o in servers] + [
            ("client", k, o)
            for k, name in sorted(clients)
            if (o := snapshot.get(k, name)) is not None
        ]
        for side, kind, workload in sides:
            for secret_name, keys in sorted(secret_keys(workload).items()):
                secret = snapshot.get("Secret", secret_name)
                if secret is None or secret_name in findings:
                    continue
                drifted = drifted_keys(secret, keys)
                if not drifted:
                    continue
                readers = _readers(snapshot, secret_name)
                findings[secret_name] = Finding(
                    analyzer=NAME,
                    mechanism="secret-drift-auth",
                    category=Category.AUTHENTICATION,
                    resource=w.key(snapshot, "Secret", secret_name),
                    symptoms=sorted(
                        {
                            w.key(snapshot, "Service", host),
                            w.key(snapshot, kind, w.name_of(workload)),
                            *(w.key(snapshot, k, name) for k, name in clients),
                        },
                        key=str,
                    ),
                    summary=(
                        f"{host} refuses its callers' credentials, and secret/{secret_name} "
                        f"(read by {side} {kind.lower()}/{w.name_of(workload)}) no longer holds "
                        f"its last-applied {', '.join(drifted)}"
                    ),
                    evidence=[
                        *(w.evidence("log", w.log_ref(c.caller), c.line) for c in failing[:2]),
                        *(
                            w.evidence(
                                "spec",
                                f"secret/{secret_name}",
                                f"{k}: {(secret.get('data') or {}).get(k, '(missing)')} "
                                "differs from the last-applied digest",
                            )
                            for k in drifted
                        ),
                    ],
                    severity=3,
                    confidence=0.9,
                    facts={
                        "keys": drifted,
                        "readers": readers,
                        "side": side,
                        "service": host,
                    },
                )
    return list(findings.values())


ANALYZERS = [drifted_credentials]
