"""Remedies for workloads and pods: from a finding to catalog actions, least risky first.

The order is the same for every mechanism: roll back the rollout that introduced the broken
field (one reversible step that restores a template that ran before), then set that one field
back to a value known to have worked — the previous revision's, else the last-applied
configuration's — and only then a guess (such as doubling a memory limit). A value nobody has
seen work is never proposed for a setting that picks behaviour (a provider, a user name).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from agents.analyzers import _workloads as w
from agents.model import Candidate, Finding, Step
from agents.snapshot import Snapshot

ROLLBACK = 0.9  # restores a template that ran before, as one reversible write
KNOWN_GOOD = 0.7  # one field back to a value that worked
GUESS = 0.4  # a value nobody has seen work, but the usual fix
EVIDENCE = 4


def _candidate(
    finding: Finding, steps: list[Step], *, intent: str, why: str, score: float
) -> Candidate:
    return Candidate(
        steps=steps,
        intent=intent,
        why=why,
        evidence=finding.evidence[:EVIDENCE],
        mechanism=finding.mechanism,
        score=round(score * finding.confidence, 4),
    )


def _workload(finding: Finding) -> tuple[str, str]:
    return str(finding.facts["workload_kind"]), str(finding.facts["workload"])


def rollback(finding: Finding) -> list[Candidate]:
    """Roll back the workload to the revision before the change that explains the failure."""
    revision = finding.facts.get("rollback_to")
    kind, name = _workload(finding)
    if revision is None or kind not in w.WORKLOAD_KINDS:
        return []
    changed = "; ".join(finding.facts.get("changed", [])[:3])
    skipped = [str(s) for s in finding.facts.get("skipped") or []]
    # Why the newer revisions are passed over, so a person sees it went back far enough.
    passed_over = (
        f"; it skips {len(skipped)} newer revision(s) seen failing: " + "; ".join(skipped)
        if skipped
        else ""
    )
    return [
        _candidate(
            finding,
            [Step(action="rollout-undo", kind=kind, name=name, params={"to_revision": revision})],
            intent=f"Roll back {kind.lower()}/{name} to revision {revision}"
            + (f" (the newer {_revisions(skipped)} seen failing)" if skipped else "")
            + f", before the change that broke it ({changed})",
            why="undoes the rollout that introduced the fault; it restores the newest template "
            "not seen failing, in one reversible write" + passed_over,
            score=ROLLBACK,
        )
    ]


def _revisions(skipped: list[str]) -> str:
    """ "revisions 3 and 2 were" from the skipped lines ("revision 3: …")."""
    numbers = [line.split(":", 1)[0].removeprefix("revision ") for line in skipped]
    if len(numbers) == 1:
        return f"revision {numbers[0]} was"
    return f"revisions {', '.join(numbers[:-1])} and {numbers[-1]} were"


def known_good_container(
    finding: Finding, snapshot: Snapshot
) -> tuple[w.Obj | None, w.Obj | None, str]:
    """(current container, the container as it last worked, where that comes from)."""
    kind, name = _workload(finding)
    workload = snapshot.get(kind, name)
    container = str(finding.facts.get("container", ""))
    init = bool(finding.facts.get("init"))
    if workload is None:
        return None, None, ""
    current = w.container_named(w.template_of(workload), container, init=init)
    revision = finding.facts.get("rollback_to")
    if revision is not None:
        earlier = w.revisions(snapshot, workload).get(int(revision))
        if earlier is not None:
            good = w.container_named(w.template_of(earlier), container, init=init)
            return current, good, f"revision {revision}"
    return (
        current,
        w.applied_container(workload, container, init=init),
        "the last-applied configuration",
    )


def _step(finding: Finding, action: str, params: dict[str, Any]) -> Step:
    kind, name = _workload(finding)
    return Step(action=action, kind=kind, name=name, params=params)


# ------------------------------------------------------------------ one field back


def restore_image(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    current, good, source = known_good_container(finding, snapshot)
    if not current or not good or good.get("image") == current.get("image"):
        return []
    image = str(good["image"])
    return [
        _candidate(
            finding,
            [_step(finding, "set-image", {"image": image, "container": current["name"]})],
            intent=f"Set container {current['name']}'s image back to {image} (from {source})",
            why=f"only the image changes, back to the one {source} ran",
            score=KNOWN_GOOD,
        )
    ]


def restore_command(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    current, good, source = known_good_container(finding, snapshot)
    if not current or good is None:
        return []
    command, args = good.get("command"), good.get("args")
    if command == current.get("command") and args == current.get("args"):
        return []
    shown = " ".join(command) if command else "the image's own entrypoint"
    return [
        _candidate(
            finding,
            [
                _step(
                    finding,
                    "set-command",
                    {"command": command, "args": args, "container": current["name"]},
                )
            ],
            intent=f"Set container {current['name']}'s command back to {shown} (from {source})",
            why=f"only the command changes, back to what {source} ran",
            score=KNOWN_GOOD,
        )
    ]


def _literal_env(container: w.Obj | None, variable: str) -> str | None:
    for entry in (container or {}).get("env") or []:
        if entry.get("name") == variable and "valueFrom" not in entry:
            return str(entry.get("value", ""))
    return None


def restore_env(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    """Put a variable back to the literal value it had when it worked (a value taken from a
    Secret or ConfigMap cannot be written by set-env; rolling back restores those)."""
    current, good, source = known_good_container(finding, snapshot)
    variables = (
        [str(finding.facts["variable"])]
        if "variable" in finding.facts
        else _changed_env(current, good)
    )
    found = []
    for variable in variables:
        value = _literal_env(good, variable)
        if current is None or value is None or value == _literal_env(current, variable):
            continue
        found.append(
            _candidate(
                finding,
                [
                    _step(
                        finding,
                        "set-env",
                        {"variable": variable, "value": value, "container": current["name"]},
                    )
                ],
                intent=f"Set {variable} of container {current['name']} back to the value "
                f"in {source}",
                why=f"only {variable} changes, back to what {source} had",
                score=KNOWN_GOOD,
            )
        )
    return found


def _changed_env(current: w.Obj | None, good: w.Obj | None) -> list[str]:
    before = {e.get("name"): e for e in (good or {}).get("env") or []}
    after = {e.get("name"): e for e in (current or {}).get("env") or []}
    return sorted(str(n) for n in set(before) | set(after) if before.get(n) != after.get(n))


def restore_memory(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    current, good, source = known_good_container(finding, snapshot)
    if current is None:
        return []
    limit = ((current.get("resources") or {}).get("limits") or {}).get("memory")
    good_limit = (((good or {}).get("resources") or {}).get("limits") or {}).get("memory")
    if good_limit and (limit is None or w.quantity(good_limit) > w.quantity(limit)):
        value, score, why = str(good_limit), KNOWN_GOOD, f"the limit {source} ran with"
    elif limit:
        value, score, why = _doubled(str(limit)), GUESS, "twice the limit it is killed at"
    else:
        return []
    return [
        _candidate(
            finding,
            [
                _step(
                    finding,
                    "set-resources",
                    {"limits": {"memory": value}, "container": current["name"]},
                )
            ],
            intent=f"Raise container {current['name']}'s memory limit from {limit} to {value}",
            why=f"only the memory limit changes, to {why}",
            score=score,
        )
    ]


def _doubled(limit: str) -> str:
    mebibytes = max(int(w.quantity(limit) * 2 / 2**20), 64)
    return f"{mebibytes}Mi"


def restore_requests(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    current, good, source = known_good_container(finding, snapshot)
    if current is None or good is None:
        return []
    too_large = finding.facts.get("requests") or {}
    good_requests = (good.get("resources") or {}).get("requests") or {}
    wanted = {r: good_requests.get(r) for r in too_large}
    if wanted == dict(too_large):
        return []
    shown = ", ".join(f"{k}={v or '(none)'}" for k, v in wanted.items())
    return [
        _candidate(
            finding,
            [_step(finding, "set-resources", {"requests": wanted, "container": current["name"]})],
            intent=f"Set container {current['name']}'s requests back to {shown} (from {source})",
            why=f"only the requests change, back to what {source} asked for",
            score=KNOWN_GOOD,
        )
    ]


def restore_node_selector(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    kind, name = _workload(finding)
    workload = snapshot.get(kind, name)
    if workload is None:
        return []
    current = (w.template_of(workload).get("spec") or {}).get("nodeSelector")
    revision = finding.facts.get("rollback_to")
    earlier = w.revisions(snapshot, workload).get(int(revision)) if revision is not None else None
    source_obj = earlier if earlier is not None else w.last_applied(workload)
    if source_obj is None:
        return []
    good = (w.template_of(source_obj).get("spec") or {}).get("nodeSelector") or None
    if good == current:
        return []
    source = f"revision {revision}" if earlier is not None else "the last-applied configuration"
    shown = ",".join(f"{k}={v}" for k, v in (good or {}).items()) or "none"
    return [
        _candidate(
            finding,
            [_step(finding, "set-node-selector", {"node_selector": good})],
            intent=f"Set the nodeSelector of {kind.lower()}/{name} back to {shown} (from {source})",
            why=f"only the nodeSelector changes, back to what {source} had",
            score=KNOWN_GOOD,
        )
    ]


# ------------------------------------------------------------------ other objects


def restore_config_value(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    configmap, cm_key = str(finding.facts["configmap"]), str(finding.facts["key"])
    obj = snapshot.get("ConfigMap", configmap)
    applied = ((w.last_applied(obj) or {}).get("data") or {}) if obj else {}
    value = applied.get(cm_key)
    if obj is None or value is None or value == (obj.get("data") or {}).get(cm_key):
        return []
    step = Step(
        action="patch-configmap-key",
        kind="ConfigMap",
        name=configmap,
        params={"key": cm_key, "value": str(value)},
    )
    return [
        _candidate(
            finding,
            [step],
            intent=f"Set key {cm_key} of configmap/{configmap} back to its last-applied value "
            f"{value!r}",
            why="only the rejected key changes, back to the value last applied; the crashing "
            "pods read it when they restart",
            score=KNOWN_GOOD + 0.1,
        )
    ]


def scale_back(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    kind, name = _workload(finding)
    replicas = int(finding.facts["replicas"])
    return [
        _candidate(
            finding,
            [Step(action="scale", kind=kind, name=name, params={"replicas": replicas})],
            intent=f"Scale {kind.lower()}/{name} back to {replicas} replica(s)",
            why="its callers fail without it; scaling is undone by scaling back",
            score=ROLLBACK,
        ),
        *_scale_back_last_template(finding, snapshot, replicas),
    ]


def _scale_back_last_template(
    finding: Finding, snapshot: Snapshot, replicas: int
) -> list[Candidate]:
    """Scaling back runs the current template, which a rollout may have changed while the
    Deployment ran nothing: a fault that hides behind the scale-down. Ranked after the plain
    scale, this is what is left when scaling back alone made things worse — the template of
    the revision before that change, and the replicas, as one attempt."""
    kind, name = _workload(finding)
    workload = snapshot.get(kind, name)
    change = w.latest_change(snapshot, workload) if workload and kind == "Deployment" else None
    if change is None:
        return []
    changed = "; ".join(change.lines[:3])
    return [
        _candidate(
            finding,
            [
                Step(
                    action="rollout-undo",
                    kind=kind,
                    name=name,
                    params={"to_revision": change.previous},
                ),
                Step(action="scale", kind=kind, name=name, params={"replicas": replicas}),
            ],
            intent=f"Roll back {kind.lower()}/{name} to revision {change.previous} ({changed}) "
            f"and scale it back to {replicas} replica(s)",
            why=f"revision {change.revision} changed the pods' template and may never have run "
            "with replicas; if scaling back alone makes things worse, the template that ran "
            "before it is the known-good one",
            score=KNOWN_GOOD,
        )
    ]


def widen_hpa(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    params: dict[str, Any] = {
        k: finding.facts[k] for k in ("min_replicas", "max_replicas") if k in finding.facts
    }
    return [
        _candidate(
            finding,
            [
                Step(
                    action="patch-hpa",
                    kind="HorizontalPodAutoscaler",
                    name=finding.resource.name,
                    params=params,
                )
            ],
            intent=f"Let horizontalpodautoscaler/{finding.resource.name} scale to "
            f"{params['max_replicas']} replicas",
            why="only the autoscaler's bounds change, to what its target was applied with",
            score=KNOWN_GOOD,
        )
    ]


def name_closest_service(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    """Point a variable that names an unknown host at the one Service a typo away from it."""
    suggested, variable = finding.facts.get("suggested"), finding.facts.get("variable")
    current, _good, _source = known_good_container(finding, snapshot)
    if not suggested or not variable or current is None:
        return []
    if _literal_env(current, str(variable)) == suggested:
        return []
    return [
        _candidate(
            finding,
            [
                _step(
                    finding,
                    "set-env",
                    {"variable": variable, "value": suggested, "container": current["name"]},
                )
            ],
            intent=f"Set {variable} of container {current['name']} to {suggested} "
            f"(service/{finding.facts.get('service')}; {finding.facts.get('host')} resolves "
            "to nothing)",
            why="only that variable changes, to the one existing Service a typo away from the "
            "name that does not resolve; no revision is known to have had it right",
            score=GUESS,
        )
    ]


def lower_hpa_floor(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
    """Put the autoscaler's bounds back and its target to the replicas it was applied with:
    lowering the floor alone leaves the extra replicas running (they are within bounds)."""
    params: dict[str, Any] = {
        k: finding.facts[k] for k in ("min_replicas", "max_replicas") if k in finding.facts
    }
    kind, name = str(finding.facts["target_kind"]), str(finding.facts["target"])
    replicas = int(finding.facts["replicas"])
    return [
        _candidate(
            finding,
            [
                Step(
                    action="patch-hpa",
                    kind="HorizontalPodAutoscaler",
                    name=finding.resource.name,
                    params=params,
                ),
                Step(action="scale", kind=kind, name=name, params={"replicas": replicas}),
            ],
            intent=f"Set horizontalpodautoscaler/{finding.resource.name}'s minimum back to "
            f"{params['min_replicas']} and scale {kind.lower()}/{name} back to {replicas}",
            why="the bounds and the replica count go back to what they were applied with; both "
            "writes are undone by writing the old numbers",
            score=KNOWN_GOOD,
        )
    ]


def _then(
    *remedies: Callable[[Finding, Snapshot], list[Candidate]],
) -> Callable[[Finding, Snapshot], list[Candidate]]:
    """A rollback first, then each field remedy in turn."""

    def remedy(finding: Finding, snapshot: Snapshot) -> list[Candidate]:
        found = rollback(finding)
        for more in remedies:
            found += more(finding, snapshot)
        return for_jobs(finding, found)

    return remedy


def for_jobs(finding: Finding, found: list[Candidate]) -> list[Candidate]:
    """A CronJob's fix is its template *and* the stuck runs made from the old one (a Job's
    template is immutable, so its pods would keep failing): delete those Jobs in the same
    attempt; the next schedule runs the fixed template. A bare Job has no fix in the catalog
    (it cannot be edited, and deleting it loses the run): nothing to propose."""
    kind = finding.facts.get("workload_kind")
    if kind == "Job":
        return []
    if kind != "CronJob":
        return found
    jobs = [str(j) for j in finding.facts.get("jobs") or []]
    extended = []
    for candidate in found:
        room = 4 - len(candidate.steps)
        if len(jobs) > room:
            continue  # one attempt cannot hold them all; a person deletes the rest
        extended.append(
            candidate.model_copy(
                update={
                    "steps": [
                        *candidate.steps,
                        *(Step(action="delete-job", kind="Job", name=j) for j in jobs),
                    ],
                    "intent": candidate.intent
                    + (
                        f", then delete the stuck run(s) {', '.join(f'job/{j}' for j in jobs)}"
                        if jobs
                        else ""
                    ),
                }
            )
        )
    return extended


REMEDIES = {
    "oom-killed": _then(restore_memory),
    "missing-env": _then(restore_env),
    "rejected-env-value": _then(restore_env),
    "rejected-config-value": restore_config_value,
    "command-not-found": _then(restore_command, restore_image),
    "crash-after-image-change": _then(restore_image),
    "crash-loop": _then(),
    "image-pull-failed": _then(restore_image),
    "init-container-failing": _then(),
    "init-container-stuck": _then(),
    "missing-config-ref": _then(),
    "unschedulable-node-selector": _then(restore_node_selector),
    "insufficient-capacity": _then(restore_requests),
    "untolerated-taint": _then(),
    "probe-wrong-port": _then(),
    "probe-wrong-path": _then(),
    "rollout-broke-calls": _then(restore_env, restore_image, restore_command),
    "env-names-unknown-host": _then(restore_env, name_closest_service),
    "scaled-to-zero": scale_back,
    "hpa-caps-replicas": widen_hpa,
    "hpa-floor-raised": lower_hpa_floor,
}
