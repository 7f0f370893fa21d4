"""A one-off Job that failed for good: its back-off limit or deadline is spent.

Nothing in the catalog can run it again (a Job's template is immutable, and re-creating one is
a person's call: it may have half-run), so the finding exists to name the Job and why its pods
failed — the escalation then says to re-create it with the fault fixed. A CronJob's failed run
is left alone: the CronJob runs again at its next schedule, and a run stuck now is the pods
analyzer's. Pod failures are read as the pods analyzer reads them (exit reason, last words).
"""

from __future__ import annotations

from agents.analyzers import _workloads as w
from agents.analyzers.pods import _crash_cause, _failures
from agents.model import Category, Evidence, Finding
from agents.snapshot import Snapshot

ANALYZER = "jobs"
_FAILED_REASONS = {"BackoffLimitExceeded", "DeadlineExceeded"}


def _failed(job: w.Obj) -> w.Obj | None:
    """The Job's Failed condition, when it failed for good."""
    for condition in (job.get("status") or {}).get("conditions") or []:
        if (
            condition.get("type") == "Failed"
            and condition.get("status") == "True"
            and condition.get("reason") in _FAILED_REASONS
        ):
            return dict(condition)
    return None


def failed_jobs(snapshot: Snapshot) -> list[Finding]:
    findings = []
    for job in snapshot.of("Job"):
        condition = _failed(job)
        if condition is None or w.controller_of(job) is not None:
            continue  # still running, or made by a CronJob that will run again
        name = w.name_of(job)
        evidence: list[Evidence] = [
            w.evidence(
                "status",
                f"job/{name}",
                f"Failed: {condition.get('reason')}: {condition.get('message') or ''}",
            )
        ]
        container, why = "", "failed"
        for pod in w.pods_of(snapshot, "Job", name):
            for failure in _failures(pod):
                current, previous = w.logs_of(snapshot, w.name_of(pod), failure.container)
                lines = (previous or current).splitlines()[-10:]
                cause = _crash_cause(failure, lines, None)
                container, why = failure.container, cause.summary
                evidence += [
                    w.evidence("log", f"pod/{w.name_of(pod)}", line) for line in lines[-2:]
                ]
                break
            if container:
                break
        who = f"container {container} " if container else "its pods "
        findings.append(
            Finding(
                analyzer=ANALYZER,
                mechanism="job-failed",
                category=Category.BAD_DEPLOY,
                resource=w.key(snapshot, "Job", name),
                summary=f"job/{name}: {who}{why}; the Job gave up ({condition.get('reason')})",
                evidence=evidence,
                severity=1,
                confidence=0.6,
                facts={"workload_kind": "Job", "workload": name, "container": container},
            )
        )
    return findings


ANALYZERS = [failed_jobs]
