"""batch/v1: the Job controller, and what the API server adds to Jobs and CronJobs on create.

A Job runs pods to completion: ``parallelism`` at a time until ``completions`` succeeded (or,
with no ``completions``, until one succeeded and none is left running), recreating failed
pods with the real controller's back-off (10 s doubling, at most 6 min) until more than
``backoffLimit`` have failed. Under ``restartPolicy: OnFailure`` the kubelet restarts the
container in place, and its restarts count as failures. A finished Job has the conditions a
1.32 server writes (``SuccessCriteriaMet`` + ``Complete``, or ``FailureTarget`` + ``Failed``).

CronJobs have their own controller (``cronjobs.py``) and schedules (``cron_schedule.py``).
"""

from __future__ import annotations

import uuid
from typing import Any

from lab.cluster import admission
from lab.cluster.errors import invalid
from lab.cluster.resources import ResourceType, by_kind
from lab.controllers.context import ControllerContext
from lab.controllers.cron_schedule import Schedule
from lab.controllers.workloads import create_pod, owned

JOB_KEY = "jobs.batch"
CRONJOB_KEY = "cronjobs.batch"
SCHEDULED = "batch.kubernetes.io/cronjob-scheduled-timestamp"
BACKOFF_BASE = 10.0
BACKOFF_MAX = 360.0


def _job_template_defaults(job_spec: dict[str, Any], name: str, uid: str) -> None:
    job_spec.setdefault("parallelism", 1)
    if "completions" not in job_spec and job_spec["parallelism"] == 1:
        job_spec["completions"] = 1
    job_spec.setdefault("backoffLimit", 6)
    job_spec.setdefault("completionMode", "NonIndexed")
    job_spec.setdefault("suspend", False)
    job_spec.setdefault("podReplacementPolicy", "TerminatingOrFailed")
    template = job_spec.setdefault("template", {})
    template.setdefault("metadata", {})
    admission.default_pod_spec(template.setdefault("spec", {}))
    if uid and not job_spec.get("manualSelector"):
        identity = {
            "batch.kubernetes.io/controller-uid": uid,
            "batch.kubernetes.io/job-name": name,
            "controller-uid": uid,
            "job-name": name,
        }
        labels = template["metadata"].setdefault("labels", {})
        labels.update(identity)
        job_spec["selector"] = {"matchLabels": {"batch.kubernetes.io/controller-uid": uid}}


def _validate_job_spec(kind: str, name: str, spec: dict[str, Any], prefix: str) -> None:
    policy = ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy")
    if policy not in ("OnFailure", "Never"):
        raise invalid(
            kind,
            name,
            [
                (
                    f"{prefix}template.spec.restartPolicy",
                    f'Unsupported value: "{policy}": supported values: "OnFailure", "Never"',
                )
            ],
            "batch",
        )
    for field in ("parallelism", "completions", "backoffLimit", "activeDeadlineSeconds"):
        value = spec.get(field)
        if value is not None and (not isinstance(value, int) or value < 0):
            raise invalid(
                kind,
                name,
                [
                    (
                        f"{prefix}{field}",
                        f"Invalid value: {value}: must be greater than or equal to 0",
                    )
                ],
                "batch",
            )


class BatchAdmission:
    """Admission hook: Job and CronJob defaults (selector, job labels, limits) and checks."""

    def __call__(
        self, operation: str, rt: ResourceType, obj: dict[str, Any], old: dict[str, Any] | None
    ) -> None:
        if rt.group != "batch" or not isinstance(obj.get("spec"), dict):
            return
        meta, spec = obj["metadata"], obj["spec"]
        name = meta.get("name", "")
        if rt.plural == "jobs":
            if operation == "create":
                meta["uid"] = meta.get("uid") or str(uuid.uuid4())
                _job_template_defaults(spec, name, meta["uid"])
            elif old is not None:
                old_spec = old.get("spec") or {}
                for immutable in ("selector", "template", "completions", "completionMode"):
                    if immutable in old_spec and spec.get(immutable) != old_spec[immutable]:
                        _job_template_defaults(spec, name, "")
                        if spec.get(immutable) != old_spec[immutable]:
                            raise invalid(
                                "Job",
                                name,
                                [(f"spec.{immutable}", "Invalid value: field is immutable")],
                                "batch",
                            )
            _validate_job_spec("Job", name, spec, "spec.")
        elif rt.plural == "cronjobs":
            spec.setdefault("concurrencyPolicy", "Allow")
            spec.setdefault("suspend", False)
            spec.setdefault("successfulJobsHistoryLimit", 3)
            spec.setdefault("failedJobsHistoryLimit", 1)
            job_template = spec.setdefault("jobTemplate", {})
            job_template.setdefault("metadata", {})
            _job_template_defaults(job_template.setdefault("spec", {}), name, "")
            try:
                Schedule(str(spec.get("schedule", "")), spec.get("timeZone"))
            except ValueError as exc:
                raise invalid(
                    "CronJob",
                    name,
                    [("spec.schedule", f'Invalid value: "{spec.get("schedule", "")}": {exc}')],
                    "batch",
                ) from exc
            _validate_job_spec("CronJob", name, job_template["spec"], "spec.jobTemplate.spec.")


# ---------------------------------------------------------------- the Job controller


def _phase(pod: dict[str, Any]) -> str:
    return str((pod.get("status") or {}).get("phase") or "Pending")


def _restarts(pod: dict[str, Any]) -> int:
    statuses = (pod.get("status") or {}).get("containerStatuses") or []
    return sum(int(s.get("restartCount", 0)) for s in statuses)


def job_finished(job: dict[str, Any]) -> str | None:
    """``Complete`` or ``Failed`` when the job has finished, else None."""
    for cond in (job.get("status") or {}).get("conditions") or []:
        if cond.get("type") in ("Complete", "Failed") and cond.get("status") == "True":
            return str(cond["type"])
    return None


class JobController:
    COMPONENT = "job-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self._not_before: dict[str, float] = {}

    def reconcile(self) -> None:
        for job in self.ctx.store.iter_all(JOB_KEY):
            self._sync(job)

    def _sync(self, job: dict[str, Any]) -> None:
        spec, status = job.get("spec") or {}, dict(job.get("status") or {})
        uid = job["metadata"]["uid"]
        now = self.ctx.clock.now()
        finished = job_finished(job)
        if finished:
            self._expire(job, now)
            return
        pods = owned(self.ctx, "pods", job)
        active = [p for p in pods if _phase(p) not in ("Succeeded", "Failed")]
        succeeded = sum(1 for p in pods if _phase(p) == "Succeeded")
        failed = sum(1 for p in pods if _phase(p) == "Failed")
        if (spec.get("template", {}).get("spec") or {}).get("restartPolicy") == "OnFailure":
            failed += sum(_restarts(p) for p in active)
        completions = spec.get("completions")
        parallelism = int(spec.get("parallelism", 1))
        stamp = self.ctx.clock.timestamp()
        if not status.get("startTime") and not spec.get("suspend"):
            status["startTime"] = stamp
        deadline = spec.get("activeDeadlineSeconds")
        outcome: tuple[str, str, str] | None = None
        if failed > int(spec.get("backoffLimit", 6)):
            outcome = (
                "Failed",
                "BackoffLimitExceeded",
                "Job has reached the specified backoff limit",
            )
        elif deadline is not None and now - self.ctx.clock.parse(status.get("startTime")) >= int(
            deadline
        ):
            outcome = (
                "Failed",
                "DeadlineExceeded",
                "Job was active longer than specified deadline",
            )
        elif (completions is not None and succeeded >= int(completions)) or (
            completions is None and succeeded > 0 and not active
        ):
            outcome = (
                "Complete",
                "CompletionsReached",
                "Reached expected number of succeeded pods",
            )
        if outcome is not None or spec.get("suspend"):
            for pod in active:
                self.ctx.api.delete(
                    by_kind("Pod"), pod["metadata"]["namespace"], pod["metadata"]["name"]
                )
            active = []
        elif deadline is not None:
            self._wake(uid + "/deadline", self.ctx.clock.parse(status["startTime"]) + int(deadline))
        if outcome is None and not spec.get("suspend"):
            remaining = (int(completions) - succeeded) if completions is not None else parallelism
            if completions is None and succeeded > 0:
                remaining = 0
            wanted = max(min(parallelism, remaining) - len(active), 0)
            if wanted and failed:
                # The real controller backs off before replacing failed pods.
                not_before = self._not_before.setdefault(
                    f"{uid}/{failed}",
                    now + min(BACKOFF_BASE * 2 ** (failed - 1), BACKOFF_MAX),
                )
                if now < not_before:
                    self._wake(f"{uid}/{failed}", not_before)
                    wanted = 0
            for _ in range(wanted):
                created = create_pod(
                    self.ctx,
                    job,
                    spec["template"],
                    generate_name=f"{job['metadata']['name']}-",
                    component=self.COMPONENT,
                )
                if created is not None:
                    active.append(created)
        ready = sum(
            1
            for p in active
            if any(
                c.get("type") == "Ready" and c.get("status") == "True"
                for c in (p.get("status") or {}).get("conditions") or []
            )
        )
        status.update(active=len(active), succeeded=succeeded, failed=failed, ready=ready)
        status.setdefault("uncountedTerminatedPods", {})
        for counter in ("active", "succeeded", "failed"):
            if not status[counter]:
                del status[counter]
        if spec.get("suspend"):
            status["conditions"] = [
                _condition("Suspended", "JobSuspended", "Job suspended", stamp, status)
            ]
        elif outcome is not None:
            final, reason, message = outcome
            interim = "SuccessCriteriaMet" if final == "Complete" else "FailureTarget"
            status["conditions"] = [
                _condition(interim, reason, message, stamp, status),
                _condition(final, reason, message, stamp, status),
            ]
            if final == "Complete":
                status["completionTime"] = stamp
            self.ctx.events.record(
                job,
                "Normal" if final == "Complete" else "Warning",
                "Completed" if final == "Complete" else reason,
                "Job completed" if final == "Complete" else message,
                component=self.COMPONENT,
            )
        fresh = self.ctx.store.get(JOB_KEY, job["metadata"]["namespace"], job["metadata"]["name"])
        if fresh is not None:
            self.ctx.write_status(JOB_KEY, fresh, status)

    def _expire(self, job: dict[str, Any], now: float) -> None:
        """The TTL-after-finished controller."""
        ttl = (job.get("spec") or {}).get("ttlSecondsAfterFinished")
        if ttl is None:
            return
        conditions = (job.get("status") or {}).get("conditions") or []
        finished_at = max(
            (self.ctx.clock.parse(c.get("lastTransitionTime")) for c in conditions), default=now
        )
        if now >= finished_at + int(ttl):
            meta = job["metadata"]
            self.ctx.api.delete(
                by_kind("Job"),
                meta["namespace"],
                meta["name"],
                options={"propagationPolicy": "Background"},
            )
        else:
            self._wake(job["metadata"]["uid"] + "/ttl", finished_at + int(ttl))

    def _wake(self, key: str, at: float) -> None:
        if self._not_before.get("wake:" + key) != at:
            self._not_before["wake:" + key] = at
            self.ctx.clock.call_later(at - self.ctx.clock.now(), lambda: None)


def _condition(
    kind: str, reason: str, message: str, stamp: str, status: dict[str, Any]
) -> dict[str, Any]:
    old = next((c for c in status.get("conditions") or [] if c.get("type") == kind), None)
    return {
        "type": kind,
        "status": "True",
        "reason": reason,
        "message": message,
        "lastProbeTime": old["lastProbeTime"] if old else stamp,
        "lastTransitionTime": old["lastTransitionTime"] if old else stamp,
    }
