"""When no catalog action fixes a finding: what a person should do, and why Stratus cannot.

An escalation that only says "a person has to" sends someone to re-read the namespace. The
finding already knows the mechanism, the object, the container and what it read; this turns
that into one instruction and one reason, by mechanism (never by an app's names). It has no
``REMEDIES``: it is asked only when the remedies found nothing.
"""

from __future__ import annotations

from agents.model import Finding

# Why Stratus cannot, by what is missing.
NO_KNOWN_GOOD = (
    "nothing records a value that worked (no earlier revision or last-applied configuration), "
    "and Stratus does not guess one"
)
NO_PROBE_ACTION = "the catalog has no action that edits a probe, and no earlier revision has one"
IMMUTABLE_JOB = (
    "a Job's pod template cannot be changed, and the catalog does not re-create Jobs "
    "(deleting one loses its run)"
)


def manual(finding: Finding) -> str | None:
    """One sentence: what to do, then why Stratus cannot; None when there is nothing specific."""
    facts = finding.facts
    if facts.get("person"):
        # The analyzer that found it knows best what a person should do about it.
        return str(facts["person"])
    kind, name = facts.get("workload_kind"), facts.get("workload")
    if not kind or not name:
        return None
    target = f"{str(kind).lower()}/{name}"
    container = facts.get("container")
    where = f"container {container} of {target}" if container else target
    cause = finding.summary.split(": ", 1)[-1]
    if kind == "Job":
        return (
            f"re-create {target} with the fault fixed ({cause}): save it with kubectl get "
            f"{target} -o yaml, fix {where} in the copy, delete the Job and create it from the "
            f"copy; Stratus cannot: {IMMUTABLE_JOB}"
        )
    if finding.mechanism == "init-container-stuck":
        return (
            f"find what init container {container} of {target} waits for (its log is in the "
            f"evidence) and bring that up, or remove the init container from {target}; "
            f"Stratus cannot: {NO_KNOWN_GOOD}"
        )
    if finding.mechanism == "missing-config-ref":
        return (
            f"create what {where} reads and is missing ({facts.get('message') or cause}) with "
            f"the values the app expects, or remove the reference from {target}; Stratus "
            "cannot: the catalog does not create ConfigMaps or Secrets, and nothing records "
            "what they held"
        )
    if finding.mechanism in ("probe-wrong-port", "probe-wrong-path"):
        probe = facts.get("probe", "probe")
        serves = facts.get("serves")
        hint = f" (it serves {', '.join(str(p) for p in serves)})" if serves else ""
        return (
            f"point the {probe} of {where} at what the container serves{hint} with "
            f"kubectl edit {target}; Stratus cannot: {NO_PROBE_ACTION}"
        )
    fix = f"fix {where}: {cause}"
    if kind == "CronJob":
        jobs = ", ".join(f"job/{j}" for j in facts.get("jobs") or [])
        fix = f"fix {where} in its job template: {cause}"
        if jobs:
            fix += f", then delete {jobs} so its stuck pods go"
    return f"{fix}; Stratus cannot: {NO_KNOWN_GOOD}"
