"""batch/v1: the Job and CronJob controllers, and what the API server adds to both on create.

A Job runs pods to completion: ``parallelism`` at a time until ``completions`` succeeded (or,
with no ``completions``, until one succeeded and none is left running), recreating failed
pods with the real controller's back-off (10 s doubling, at most 6 min) until more than
``backoffLimit`` have failed. Under ``restartPolicy: OnFailure`` the kubelet restarts the
container in place, and its restarts count as failures. A finished Job has the conditions a
1.32 server writes (``SuccessCriteriaMet`` + ``Complete``, or ``FailureTarget`` + ``Failed``).

A CronJob creates a Job for each time its schedule comes due on the lab clock (standard
five-field cron syntax, ranges, lists, steps and the ``@hourly``-style macros), named
``{cronjob}-{minutes since the epoch}`` as the real controller names them, honours
``suspend``, ``concurrencyPolicy`` and the history limits, and reports ``active``,
``lastScheduleTime`` and ``lastSuccessfulTime``.
"""

from __future__ import annotations

import copy
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from lab.cluster import admission
from lab.cluster.errors import invalid
from lab.cluster.resources import ResourceType, by_kind
from lab.controllers.context import ControllerContext, owner_reference
from lab.controllers.workloads import create_pod, owned

JOB_KEY = "jobs.batch"
CRONJOB_KEY = "cronjobs.batch"
SCHEDULED = "batch.kubernetes.io/cronjob-scheduled-timestamp"
BACKOFF_BASE = 10.0
BACKOFF_MAX = 360.0
_MACROS = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
_MONTHS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_DAYS = ("sun", "mon", "tue", "wed", "thu", "fri", "sat")
_RANGES = ((0, 59), (0, 23), (1, 31), (1, 12), (0, 6))
_NAMES = {
    3: {m: i + 1 for i, m in enumerate(_MONTHS)},
    4: {d: i for i, d in enumerate(_DAYS)},
}


# ---------------------------------------------------------------- cron schedules


class Schedule:
    """A parsed five-field cron schedule; :meth:`next_after` finds the next minute it fires."""

    def __init__(self, text: str, zone: str | None = None) -> None:
        spec = _MACROS.get(text.strip(), text.strip())
        fields = spec.split()
        if len(fields) != 5:
            raise ValueError(f"expected exactly 5 fields, found {len(fields)}: {text}")
        self.sets = [_parse_field(f, i) for i, f in enumerate(fields)]
        # Vixie cron: when both day fields are restricted, either one matching is enough.
        self.dom_star, self.dow_star = fields[2] in ("*", "?"), fields[4] in ("*", "?")
        try:
            self.zone = ZoneInfo(zone) if zone else UTC
        except (ZoneInfoNotFoundError, ValueError) as exc:
            raise ValueError(f"unknown time zone {zone}") from exc

    def _matches(self, moment: datetime) -> bool:
        minute, hour, dom, month, dow = self.sets
        if moment.minute not in minute or moment.hour not in hour or moment.month not in month:
            return False
        in_dom, in_dow = moment.day in dom, (moment.isoweekday() % 7) in dow
        if self.dom_star or self.dow_star:
            return in_dom and in_dow
        return in_dom or in_dow

    def next_after(self, after: float) -> float | None:
        """The first firing strictly after ``after`` (epoch seconds), within about a year."""
        moment = datetime.fromtimestamp(after, self.zone).replace(second=0, microsecond=0)
        moment += timedelta(minutes=1)
        for _ in range(366 * 24 * 60):
            if moment.month not in self.sets[3]:
                moment = (moment.replace(day=1, hour=0, minute=0) + timedelta(days=32)).replace(
                    day=1
                )
                continue
            if moment.hour not in self.sets[1] or not self._day_ok(moment):
                moment = moment.replace(minute=0) + timedelta(hours=1)
                continue
            if self._matches(moment):
                return moment.timestamp()
            moment += timedelta(minutes=1)
        return None

    def _day_ok(self, moment: datetime) -> bool:
        dom, dow = self.sets[2], self.sets[4]
        in_dom, in_dow = moment.day in dom, (moment.isoweekday() % 7) in dow
        if self.dom_star or self.dow_star:
            return in_dom and in_dow
        return in_dom or in_dow


def _parse_field(text: str, index: int) -> frozenset[int]:
    low, high = _RANGES[index]
    values: set[int] = set()
    for item in text.lower().split(","):
        step, part = 1, item
        if "/" in item:
            part, step_text = item.split("/", 1)
            step = int(step_text)
            if step <= 0:
                raise ValueError(f"step must be positive: {text}")
        if part in ("*", "?"):
            start, end = low, high
        elif "-" in part:
            a, b = part.split("-", 1)
            start, end = _value(a, index), _value(b, index)
        else:
            start = _value(part, index)
            end = high if step != 1 else start
        if index == 4 and end == 7:
            end = 6 if start <= 6 else 0
            values.add(0)
        if not (low <= start <= high and low <= end <= high and start <= end):
            raise ValueError(f"value out of range ({low}-{high}): {text}")
        values.update(range(start, end + 1, step))
    return frozenset(values)


def _value(text: str, index: int) -> int:
    named = _NAMES.get(index, {}).get(text)
    if named is not None:
        return named
    number = int(text)
    return 0 if index == 4 and number == 7 else number


# ---------------------------------------------------------------- admission


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


# ---------------------------------------------------------------- the CronJob controller


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
