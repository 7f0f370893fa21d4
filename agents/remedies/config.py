"""Remedies for configuration that drifted from what was last applied: put the key back and
restart the workloads that read it (a container reads its environment when it starts).

One candidate, one transaction: the restore and the restarts are undone together. Restarts
are low risk and are not collateral damage (replicas, images and selectors stay as they are).
"""

from __future__ import annotations

from agents.model import Candidate, Finding, Step
from agents.snapshot import Snapshot

MAX_STEPS = 4


def _restarts(readers: list[str], room: int) -> list[Step]:
    steps = []
    for reader in readers[:room]:
        kind, _, name = reader.partition("/")
        steps.append(Step(action="rollout-restart", kind=kind, name=name))
    return steps


def restore_configmap_key(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    key = str(finding.facts.get("key") or "")
    if not key:
        return []
    name = finding.resource.name
    readers = list(finding.facts.get("readers") or [])
    return [
        Candidate(
            steps=[
                Step(
                    action="restore-configmap-key",
                    kind="ConfigMap",
                    name=name,
                    params={"key": key},
                ),
                *_restarts(readers, MAX_STEPS - 1),
            ],
            intent=(
                f"Restore key {key} of configmap/{name} to its last-applied value "
                f"{finding.facts.get('applied')!r} and restart its readers "
                f"({', '.join(readers[: MAX_STEPS - 1]) or 'none'})"
            ),
            why="undoes the drift the app rejects, back to the value last applied; reversible",
            evidence=finding.evidence,
            mechanism=finding.mechanism,
            score=0.9,
        )
    ]


def restore_secret_keys(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    keys = list(finding.facts.get("keys") or [])[:2]
    if not keys:
        return []
    name = finding.resource.name
    readers = list(finding.facts.get("readers") or [])
    return [
        Candidate(
            steps=[
                *(
                    Step(action="restore-secret-key", kind="Secret", name=name, params={"key": k})
                    for k in keys
                ),
                *_restarts(readers, MAX_STEPS - len(keys)),
            ],
            intent=(
                f"Restore {', '.join(keys)} of secret/{name} to the last-applied value and "
                f"restart {', '.join(readers[: MAX_STEPS - len(keys)]) or 'nothing'} to read it"
            ),
            why=(
                "puts back the credential both sides agreed on (compared by digest; the value "
                "is never shown); reversible"
            ),
            evidence=finding.evidence,
            mechanism=finding.mechanism,
            score=0.85,
        )
    ]


REMEDIES = {
    "configmap-rejected-value": restore_configmap_key,
    "secret-drift-auth": restore_secret_keys,
}
