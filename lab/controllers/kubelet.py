"""The simulated kubelet: pulls images, starts containers, crashes them, probes them.

Every container runs according to its image's catalog entry: unknown images fail to pull and
back off, a wrong command exits, a missing environment variable or a bad config value crashes
with a realistic log line, memory above the limit is OOMKilled (at once, or when a leaky
release's working set reaches it), and probes on ports the image
does not listen on fail. Restarts back off exponentially (10 s doubling to 5 min) and every step
emits the event a real kubelet emits.

This module owns a run's lifecycle (admit, prepare, start, terminate, restart) and the
timers, events and logs of its containers; its parts are beside it, each handed the kubelet
as ``kubelet_ops.KubeletOps``: the image pulls (``image_pulls``), the probes
(``kubelet_probes``), a graceful deletion (``pod_termination``). How a start fails and how
long a crash loop waits are pure (``crash_loop``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from lab.cluster.clock import cancel
from lab.controllers import container_env, crash_loop, pod_logs, usage
from lab.controllers.containers import (
    ContainerRun,
    PodRun,
    missing_volume,
    new_container_id,
    pod_status,
    resolve_environment,
)
from lab.controllers.context import ControllerContext
from lab.controllers.image_pulls import ImagePulls
from lab.controllers.kubelet_probes import Probes
from lab.controllers.pod_termination import PodTermination
from lab.controllers.processes import ProcessHost
from lab.controllers.programs import command_line, plan
from lab.controllers.script_runs import ScriptRuns

COMPONENT = "kubelet"


class Kubelet:
    def __init__(self, ctx: ControllerContext) -> None:
        self.ctx = ctx
        self.runs: dict[str, PodRun] = {}
        self._ip_counter: dict[str, int] = {}
        # Containers of images that run for real (Stratus) are child processes of the lab.
        self.processes = ProcessHost(ctx, self)
        self.on_change: Callable[[], None] | None = None  # set by the cluster: reconcile soon
        self.termination = PodTermination(self)
        self.probes = Probes(self)
        self.pulls = ImagePulls(self)
        self.scripts = ScriptRuns(self)
        # Set by the cluster: what a container's server answers from its files (HTTP probes).
        self.pages: Callable[[PodRun, ContainerRun, int, str], int | None] | None = None

    # ------------------------------------------------------------ reconcile

    def reconcile(self) -> None:
        live: set[str] = set()
        for pod in self.ctx.store.iter_all("pods"):
            uid = pod["metadata"]["uid"]
            node = (pod.get("spec") or {}).get("nodeName")
            if not node:
                continue
            live.add(uid)
            if uid not in self.runs:
                self._admit(pod, node)
            elif not self.runs[uid].terminating:
                self._sync_images(self.runs[uid], pod)
                self._sync_readiness_gates(self.runs[uid], pod)
            run = self.runs[uid]
            if pod["metadata"].get("deletionTimestamp"):
                if not run.terminating:
                    self.termination.begin(run, pod)
                else:  # a second DELETE may have shortened the grace
                    self.termination.shorten(run, pod)
        for uid in [u for u in self.runs if u not in live]:
            for container in self.runs.pop(uid).all():
                container.generation += 1
        self.processes.sync(self.runs)

    def reset(self) -> None:
        self.runs.clear()
        self.processes.sync(self.runs)
        self.pulls.reset()
        self._ip_counter.clear()

    def _admit(self, pod: dict[str, Any], node: str) -> None:
        node_obj = self.ctx.store.get("nodes", "", node) or {}
        host_ip = next(
            (
                a["address"]
                for a in (node_obj.get("status") or {}).get("addresses") or []
                if a.get("type") == "InternalIP"
            ),
            "10.0.0.1",
        )
        cidr = (node_obj.get("spec") or {}).get("podCIDR") or "10.244.0.0/24"
        spec = pod.get("spec") or {}
        if any(
            self.processes.runs_processes(self.ctx.images.lookup(c.get("image", ""))[0])
            for c in (spec.get("containers") or []) + (spec.get("initContainers") or [])
            if isinstance(c, dict)
        ):
            # A pod whose processes really listen gets an address of its own on this machine
            # (even with hostNetwork: the simulated node's address is nowhere to bind).
            ip = self.processes.address(pod["metadata"]["uid"])
        elif spec.get("hostNetwork"):  # the node's own address
            ip = host_ip
        else:
            counter = self._ip_counter.get(node, 1) + 1
            self._ip_counter[node] = counter
            ip = f"{cidr.rsplit('.', 1)[0]}.{counter % 250 + 2}"
        run = PodRun(
            uid=pod["metadata"]["uid"],
            namespace=pod["metadata"]["namespace"],
            name=pod["metadata"]["name"],
            node=node,
            ip=ip,
            host_ip=host_ip,
            started=self.ctx.clock.now(),
            init=[
                ContainerRun(c["name"], c.get("image", ""), c, init=True)
                for c in spec.get("initContainers") or []
            ],
            main=[
                ContainerRun(c["name"], c.get("image", ""), c) for c in spec.get("containers") or []
            ],
            restart_policy=str(spec.get("restartPolicy") or "Always"),
        )
        if self.pages is not None:
            for container in run.all():
                container.pages = functools.partial(self.pages, run, container)
        self.runs[run.uid] = run
        self._advance(run)

    def _sync_images(self, run: PodRun, pod: dict[str, Any]) -> None:
        """An image changed in the pod's spec: the kubelet kills that container and starts
        it again from the new image (restart count +1 when it had been running)."""
        spec = pod.get("spec") or {}
        wanted = {
            c.get("name"): c
            for c in (spec.get("containers") or []) + (spec.get("initContainers") or [])
            if isinstance(c, dict)
        }
        for container in run.all():
            new_spec = wanted.get(container.name)
            if new_spec is None or new_spec.get("image", "") == container.image:
                continue
            if container.init and container.completed:
                container.image, container.spec = new_spec.get("image", ""), new_spec
                continue
            was_running = container.state == "running"
            if was_running:
                self.event(
                    run,
                    "Normal",
                    "Killing",
                    f"Container {container.name} definition changed, will be restarted",
                    container,
                )
                container.last_terminated = {
                    "exitCode": 0,
                    "reason": "Completed",
                    "startedAt": self.ctx.clock.timestamp(container.started_at),
                    "finishedAt": self.ctx.clock.timestamp(),
                    "containerID": container.container_id,
                }
                container.rotate_logs()
                container.restart_count += 1
            for timer in container.timers:
                cancel(timer)
            container.timers = []
            container.generation += 1
            container.image, container.spec = new_spec.get("image", ""), new_spec
            container.crashes = container.pull_failures = 0
            container.completed = container.exiting = container.ready = False
            container.listens, container.http = [], {}
            container.state, container.reason, container.message = (
                "waiting",
                "ContainerCreating",
                "",
            )
            if container.init or run.initialized():
                self._prepare(run, container)
        self._flush(run)

    def _environment(self, run: PodRun, container: ContainerRun) -> tuple[dict[str, str], str]:
        pod = self._pod(run)
        if pod is None:
            return container.declared_env, ""
        return resolve_environment(self.ctx.store, pod, container.spec, run.ip)

    def _sync_readiness_gates(self, run: PodRun, pod: dict[str, Any]) -> None:
        """A controller's write of a readiness gate's condition moves the pod's Ready, as
        the kubelet's status sync sees it (nothing of the containers changed)."""
        if not (pod.get("spec") or {}).get("readinessGates"):
            return
        ready = _ready_of(pod_status(run, pod, self.ctx.clock))
        if ready != _ready_of(pod.get("status") or {}):
            self._flush(run)

    def _pod(self, run: PodRun) -> dict[str, Any] | None:
        pod = self.ctx.store.get("pods", run.namespace, run.name)
        if pod is None or pod["metadata"]["uid"] != run.uid:
            return None
        return pod

    def _flush(self, run: PodRun) -> None:
        pod = self._pod(run)
        if pod is not None:
            self.ctx.write_status("pods", pod, pod_status(run, pod, self.ctx.clock))

    # The parts call these back (``kubelet_ops.KubeletOps``): hence public names.

    def event(
        self,
        run: PodRun,
        event_type: str,
        reason: str,
        message: str,
        container: ContainerRun | None = None,
    ) -> None:
        pod = self._pod(run)
        if pod is None:
            return
        path = None
        if container is not None:
            group = "initContainers" if container.init else "containers"
            path = f"spec.{group}{{{container.name}}}"
        self.ctx.events.record(
            pod, event_type, reason, message, component=COMPONENT, host=run.node, field_path=path
        )

    def later(
        self,
        run: PodRun,
        container: ContainerRun,
        delay: float,
        action: Callable[[], None],
        *,
        steady: bool = False,
        wake: Callable[[], bool] | None = None,
        urgent: bool = False,
    ) -> None:
        generation = container.generation

        def fire() -> None:
            if self.runs.get(run.uid) is run and container.generation == generation:
                action()
                self._flush(run)

        container.timers.append(
            self.ctx.clock.call_later(delay, fire, steady=steady, wake=wake, urgent=urgent)
        )

    def log(self, container: ContainerRun, level: str, text: str, *, raw: bool = False) -> None:
        line = text if raw else f"{self.ctx.clock.micro_timestamp()} {level} {text}"
        container.add_log(line, self.ctx.clock.now())

    # ------------------------------------------------------------ lifecycle

    def _advance(self, run: PodRun) -> None:
        """Start the next init container, or every main container once init is done."""
        if run.terminating:
            return
        pending_init = next((c for c in run.init if not c.init_done), None)
        if pending_init is not None:
            if (
                pending_init.state == "waiting"
                and not pending_init.ever_started
                and not pending_init.timers
            ):
                self._prepare(run, pending_init)
        else:
            for container in run.main:
                if not container.ever_started and not container.timers:
                    self._prepare(run, container)
        self._flush(run)

    def _prepare(self, run: PodRun, container: ContainerRun) -> None:
        pod = self._pod(run)
        if pod is None:
            return
        volume_problem = missing_volume(self.ctx.store, pod)
        if volume_problem:
            container.state, container.reason, container.message = (
                "waiting",
                "ContainerCreating",
                "",
            )
            self.event(run, "Warning", "FailedMount", volume_problem)
            self.later(
                run,
                container,
                10.0,
                lambda: self._prepare(run, container),
                steady=True,
                wake=lambda: (
                    self._pod(run) is not None
                    and not missing_volume(self.ctx.store, self._pod(run) or {})
                ),
            )
            return
        env, problem = resolve_environment(self.ctx.store, pod, container.spec, run.ip)
        if problem:
            container.state, container.reason = "waiting", "CreateContainerConfigError"
            container.message = problem
            self.event(run, "Warning", "Failed", f"Error: {problem}", container)
            self.later(
                run,
                container,
                10.0,
                lambda: self._prepare(run, container),
                steady=True,
                wake=lambda: not self._environment(run, container)[1],
            )
            return
        container.declared_env = env
        container.env = container_env.build(
            self.ctx.store, self.ctx.images, pod, container.spec, env
        )
        self.pulls.pull(run, container)

    def start(self, run: PodRun, container: ContainerRun) -> None:
        container.generation += 1
        container.timers = []
        spec, crash = self.ctx.images.lookup(container.image)
        container.behaviour = spec
        container.container_id = new_container_id()
        self.event(run, "Normal", "Created", f"Created container: {container.name}", container)
        self.event(run, "Normal", "Started", f"Started container {container.name}", container)
        container.state, container.reason, container.message = "running", "", ""
        container.started_at = self.ctx.clock.now()
        first_start = not container.ever_started
        container.ever_started = True
        container.ready = False
        if container.sidecar and first_start:
            # Started is enough for a native sidecar: the next container starts beside it.
            self.later(run, container, 0.0, lambda: self._advance(run))
        container.exiting = False
        container.listens, container.http = [], {}
        if spec is None:
            return
        if self.processes.runs_processes(spec):
            self._start_process(run, container)
            return
        pod = self._pod(run)  # a new container gets a new writable layer; volumes stay
        files = (
            self.ctx.layers.files(self.ctx.store, pod, container.spec, fresh=True) if pod else None
        )
        program = plan(
            spec, container.spec, container.env, run.name, files, horizon=self.scripts.horizon()
        )
        if program.missing:
            self.log(container, "ERROR", f"exec {program.missing}: no such file or directory")
            self._exit_later(run, container, 0.2, "Error", 127)
            return
        if not program.serve:  # a shell script or utility: its own output, its own end
            if usage.script_exceeds_limit(container, command_line(spec, container.spec)):
                self._exit_later(run, container, 1.0, "OOMKilled", 137)
                return
            self.scripts.output(run, container, program.output, program.output_at)
            container.listens, container.http = program.listens, program.http
            if program.resume is not None:
                self.scripts.go_on(run, container, program.resume)
            if program.exit_code is not None:
                reason = "Completed" if program.exit_code == 0 else "Error"
                self._exit_later(run, container, program.after, reason, program.exit_code)
                # A run that fails, or ends before the kubelet's next status (1 s), is never
                # reported Ready: a crash loop does not flash Ready between its crashes.
                if program.exit_code != 0 or program.after <= 1.0:
                    return
            self.probes.schedule(run, container)
            return
        raw = spec.raw_logs
        for line in spec.start_log or ([] if raw else [f"starting {container.name}"]):
            self.log(container, "INFO", line, raw=raw)
        if spec.hangs:
            return
        if spec.runs_to_completion:
            self._exit_later(run, container, 1.0, "Completed", 0)
            return
        failure = crash_loop.startup_failure(container, crash)
        if failure is not None:
            delay, reason, code, lines = failure
            for line in lines:
                self.log(container, "FATAL" if code != 137 else "INFO", line, raw=raw)
            self._exit_later(run, container, delay, reason, code)
            return
        container.listens, container.http = program.listens, program.http
        for port in [] if raw else container.listens:
            self.log(container, "INFO", f"listening on :{port}")
        self.probes.schedule(run, container)
        oom_after = usage.seconds_to_oom(container)
        if oom_after is not None:
            # A leak is a steady state: settling does not jump to its end, passing time does.
            self.later(
                run,
                container,
                oom_after,
                lambda: self.terminate(run, container, "OOMKilled", 137),
                steady=True,
            )

    def _start_process(self, run: PodRun, container: ContainerRun) -> None:
        pod = self._pod(run)
        behaviour = container.behaviour
        assert behaviour is not None
        problem = (
            "the pod is gone"
            if pod is None
            else self.processes.start(run, container, pod, behaviour)
        )
        if problem:
            container.message = problem
            self.event(run, "Warning", "Failed", f"Error: {problem}", container)
            self.terminate(run, container, "StartError", 128)

    # What the processes report (``processes.KubeletHooks``); a stale run's news is ignored.

    def _current(self, run: PodRun, container: ContainerRun, generation: int) -> bool:
        return self.runs.get(run.uid) is run and container.generation == generation

    def process_exited(
        self, run: PodRun, container: ContainerRun, generation: int, code: int
    ) -> None:
        if not self._current(run, container, generation):
            return
        self.terminate(run, container, "Completed" if code == 0 else "Error", code)
        self.changed(run)

    def process_ready(
        self, run: PodRun, container: ContainerRun, generation: int, ready: bool
    ) -> None:
        if self._current(run, container, generation) and container.ready != ready:
            container.ready = ready
            self.changed(run)

    def process_event(
        self, run: PodRun, container: ContainerRun, event_type: str, reason: str, message: str
    ) -> None:
        if self.runs.get(run.uid) is run:
            self.event(run, event_type, reason, message, container)

    def changed(self, run: PodRun) -> None:
        self._flush(run)
        if self.on_change is not None:
            self.on_change()

    def _exit_later(
        self, run: PodRun, container: ContainerRun, delay: float, reason: str, code: int
    ) -> None:
        """The run ends after ``delay``; until then it neither serves nor logs."""
        container.exiting = code != 0
        self.later(run, container, delay, lambda: self.terminate(run, container, reason, code))

    def terminate(self, run: PodRun, container: ContainerRun, reason: str, code: int) -> None:
        container.state, container.reason, container.exit_code = "terminated", reason, code
        container.finished_at = self.ctx.clock.now()
        container.ready = False
        container.exiting = False
        if run.terminating:  # the pod is going: nothing starts again
            self.termination.stopped(run)
            return
        policy = run.restart_policy
        if container.sidecar:
            pass  # restarts whatever its exit and the pod's policy, with the crash back-off
        elif container.init:
            if code == 0:
                container.completed = True
                self._advance(run)
                return
            if policy == "Never":  # the pod fails; nothing runs again
                return
        elif policy == "Never" or (policy == "OnFailure" and code == 0):
            container.completed = True  # it stays terminated; the pod ends when all have
            return
        container.crashes += 1
        container.last_terminated = {
            "exitCode": code,
            "reason": reason,
            "startedAt": self.ctx.clock.timestamp(container.started_at),
            "finishedAt": self.ctx.clock.timestamp(),
            "containerID": container.container_id,
        }
        delay = crash_loop.crash_backoff(container.crashes)

        def back_off() -> None:
            container.state, container.reason = "waiting", "CrashLoopBackOff"
            container.message = (
                f"back-off {int(max(delay, 10))}s restarting failed container="
                f"{container.name} pod={run.name}_{run.namespace}({run.uid})"
            )
            self.event(
                run,
                "Warning",
                "BackOff",
                f"Back-off restarting failed container {container.name} in pod "
                f"{run.name}_{run.namespace}({run.uid})",
                container,
            )
            # The first restart follows at once; later ones wait out a steady back-off.
            self.later(
                run,
                container,
                delay,
                lambda: self._restart(run, container),
                steady=container.crashes > 1,
                # A crash loop waits out its back-off, unless what it crashed on was fixed.
                wake=lambda: self._environment(run, container)[0] != container.declared_env,
            )

        self.later(run, container, 0.1, back_off)

    def _restart(self, run: PodRun, container: ContainerRun) -> None:
        container.rotate_logs()
        container.restart_count += 1
        self._prepare(run, container)  # the environment is built again for every start

    # ------------------------------------------------------------ logs

    def append_log(self, run: PodRun, container: ContainerRun, level: str, text: str) -> None:
        self.log(container, level, text)

    def read_log(
        self,
        namespace: str,
        pod_name: str,
        container_name: str | None,
        *,
        previous: bool,
        tail_lines: int | None,
    ) -> str:
        return pod_logs.read_log(
            self.log_source(namespace, pod_name, container_name, previous=previous),
            previous=previous,
            tail_lines=tail_lines,
        )

    def log_source(
        self, namespace: str, pod_name: str, container_name: str | None, *, previous: bool
    ) -> ContainerRun:
        """The container whose log a request reads, or the 400 the kubelet answers."""
        return pod_logs.log_source(
            self.ctx.store, self.runs, namespace, pod_name, container_name, previous=previous
        )


def _ready_of(status: dict[str, Any]) -> tuple[str, str]:
    ready: dict[str, Any] = next(
        (c for c in status.get("conditions") or [] if c.get("type") == "Ready"), {}
    )
    return str(ready.get("status", "")), str(ready.get("message", ""))
