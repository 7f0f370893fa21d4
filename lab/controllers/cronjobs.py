"""batch/v1 CronJobs: the controller that creates a Job each time a schedule comes due on the
lab clock, named ``{cronjob}-{minutes since the epoch}`` as the real controller names them; it
honours ``suspend``, ``concurrencyPolicy`` and the history limits, and reports ``active``,
``lastScheduleTime`` and ``lastSuccessfulTime``.
"""

from __future__ import annotations

import copy
from typing import Any

from lab.cluster.resources import by_kind
from lab.controllers.context import ControllerContext, owner_reference
from lab.controllers.cron_schedule import Schedule
from lab.controllers.jobs import CRONJOB_KEY, JOB_KEY, SCHEDULED, job_finished
from lab.controllers.workloads import owned


def job_from_template(
    cronjob: dict[str, Any], name: str, *, annotations: dict[str, str] | None = None
) -> dict[str, Any]:
    """The Job a CronJob's template makes (also what ``kubectl create job --from`` builds)."""
    template = copy.deepcopy((cronjob.get("spec") or {}).get("jobTemplate") or {})
    meta = template.get("metadata") or {}
    spec = template.get("spec") or {}
    for generated in ("selector",):
        spec.pop(generated, None)
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
    if labels:
        for key in (
            "batch.kubernetes.io/controller-uid",
            "controller-uid",
            "batch.kubernetes.io/job-name",
            "job-name",
        ):
            labels.pop(key, None)
    return {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {
            "name": name,
            "namespace": cronjob["metadata"]["namespace"],
            "labels": dict(meta.get("labels") or {}),
            "annotations": {**(meta.get("annotations") or {}), **(annotations or {})},
            "ownerReferences": [owner_reference(cronjob)],
        },
        "spec": spec,
    }


class CronJobController:
    COMPONENT = "cronjob-controller"

    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self._schedules: dict[tuple[str, str | None], Schedule] = {}
        self._woken: dict[str, float] = {}

    def reconcile(self) -> None:
        for cronjob in self.ctx.store.iter_all(CRONJOB_KEY):
            self._sync(cronjob)

    def _schedule(self, spec: dict[str, Any]) -> Schedule | None:
        key = (str(spec.get("schedule", "")), spec.get("timeZone"))
        if key not in self._schedules:
            try:
                self._schedules[key] = Schedule(*key)
            except ValueError:
                return None
        return self._schedules[key]

    def _sync(self, cronjob: dict[str, Any]) -> None:
        meta, spec = cronjob["metadata"], cronjob.get("spec") or {}
        status = dict(cronjob.get("status") or {})
        namespace = meta["namespace"]
        jobs = owned(self.ctx, JOB_KEY, cronjob)
        active = [j for j in jobs if not job_finished(j)]
        schedule = self._schedule(spec)
        now = self.ctx.clock.now()
        if schedule is not None and not spec.get("suspend"):
            since = self.ctx.clock.parse(
                status.get("lastScheduleTime") or meta.get("creationTimestamp")
            )
            due = schedule.next_after(since)
            latest = None
            while due is not None and due <= now:  # only the most recent missed run starts
                latest = due
                due = schedule.next_after(due)
            if latest is not None:
                created = self._run(cronjob, latest, active)
                if created is not None:
                    active.append(created)
                status["lastScheduleTime"] = self.ctx.clock.timestamp(latest)
            if due is not None and self._woken.get(meta["uid"]) != due:
                self._woken[meta["uid"]] = due
                # The next schedule is a wait: a write does not move the clock to it.
                self.ctx.clock.call_later(due - now, lambda: None, steady=True)
        finished = [j for j in jobs if job_finished(j)]
        succeeded = [j for j in finished if job_finished(j) == "Complete"]
        if succeeded:
            last = max((j.get("status") or {}).get("completionTime") or "" for j in succeeded)
            if last and last > (status.get("lastSuccessfulTime") or ""):
                status["lastSuccessfulTime"] = last
        self._trim(cronjob, succeeded, int(spec.get("successfulJobsHistoryLimit", 3)))
        self._trim(
            cronjob,
            [j for j in finished if job_finished(j) == "Failed"],
            int(spec.get("failedJobsHistoryLimit", 1)),
        )
        refs = [
            {
                "apiVersion": "batch/v1",
                "kind": "Job",
                "name": j["metadata"]["name"],
                "namespace": namespace,
                "uid": j["metadata"]["uid"],
                "resourceVersion": j["metadata"]["resourceVersion"],
            }
            for j in sorted(active, key=lambda j: j["metadata"]["name"])
            if self.ctx.store.get(JOB_KEY, namespace, j["metadata"]["name"]) is not None
        ]
        if refs:
            status["active"] = [
                {k: v for k, v in r.items() if k != "resourceVersion"} for r in refs
            ]
        else:
            status.pop("active", None)
        fresh = self.ctx.store.get(CRONJOB_KEY, namespace, meta["name"])
        if fresh is not None:
            self.ctx.write_status(CRONJOB_KEY, fresh, status)

    def _run(
        self, cronjob: dict[str, Any], scheduled: float, active: list[dict[str, Any]]
    ) -> dict[str, Any] | None:
        meta, spec = cronjob["metadata"], cronjob.get("spec") or {}
        policy = spec.get("concurrencyPolicy", "Allow")
        if active and policy == "Forbid":
            self.ctx.events.record(
                cronjob,
                "Normal",
                "JobAlreadyActive",
                "Not starting job because prior execution is running and concurrency policy is "
                "Forbid",
                component=self.COMPONENT,
            )
            return None
        if policy == "Replace":
            for job in active:
                self.ctx.api.delete(
                    by_kind("Job"),
                    meta["namespace"],
                    job["metadata"]["name"],
                    options={"propagationPolicy": "Background"},
                )
                self.ctx.events.record(
                    cronjob,
                    "Normal",
                    "SuccessfulDelete",
                    f"Deleted job {job['metadata']['name']}",
                    component=self.COMPONENT,
                )
            active.clear()
        name = f"{meta['name']}-{int(scheduled // 60)}"
        if self.ctx.store.get(JOB_KEY, meta["namespace"], name) is not None:
            return None
        job = job_from_template(
            cronjob,
            name,
            annotations={SCHEDULED: self.ctx.clock.timestamp(scheduled)},
        )
        created = self.ctx.api.create(by_kind("Job"), meta["namespace"], job)
        self.ctx.events.record(
            cronjob, "Normal", "SuccessfulCreate", f"Created job {name}", component=self.COMPONENT
        )
        return created

    def _trim(self, cronjob: dict[str, Any], jobs: list[dict[str, Any]], keep: int) -> None:
        jobs = sorted(jobs, key=lambda j: j["metadata"].get("creationTimestamp", ""))
        for job in jobs[: max(len(jobs) - keep, 0)]:
            self.ctx.api.delete(
                by_kind("Job"),
                job["metadata"]["namespace"],
                job["metadata"]["name"],
                options={"propagationPolicy": "Background"},
            )
            self.ctx.events.record(
                cronjob,
                "Normal",
                "SuccessfulDelete",
                f"Deleted job {job['metadata']['name']}",
                component=self.COMPONENT,
            )
