"""The kubelet's side of a graceful pod deletion: preStop, SIGTERM, SIGKILL, then delete.

When a pod it runs is stamped with a ``deletionTimestamp`` (``lab.cluster.graceful_delete``),
the kubelet stops every running container as a real one does:

1. at once, for every running container: the event ``Killing`` / ``Stopping container
   <name>`` and its ``lifecycle.preStop`` hook (``exec``, ``httpGet`` or ``sleep``), which the
   grace period bounds; a failing hook is a ``FailedPreStopHook`` warning worded
   ``PreStopHook failed`` (the kubelet keeps the hook's output out of events, so no secret
   leaks) and the stop goes on;
2. SIGTERM when the hook is done. An image's server (nginx, redis, the hotel's services)
   shuts down at once and exits 0; a shell or ``sleep`` running as PID 1 has no handler, so
   the signal does nothing (unless the script ``trap``s it) and the container is SIGKILLed
   when the grace period ends, never less than 2 s after its SIGTERM: exit code 137. A
   container that runs a real process gets real signals;
3. when no container runs any more, the pod is deleted for good (grace period 0).

A second DELETE that shortens the grace moves the kills forward (``shorten``). Native sidecars
(init containers with ``restartPolicy: Always``) hear ``Killing`` and run their hooks with the
others, but get SIGTERM only once every other container has stopped, one at a time in the
reverse of their order in the spec, within what is left of the same grace period: a log
shipper or proxy outlives the application it serves, as on a 1.29+ kubelet.

Nothing restarts during this, whatever the restart policy; exec still reaches a container
until it has stopped. The times come from the image model (``programs.plan``), so the
instant clock jumps over them and the realtime clock waits them out.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from lab.cluster.clock import cancel
from lab.cluster.errors import ApiError
from lab.cluster.resources import by_kind
from lab.controllers.containers import ContainerRun, PodRun
from lab.controllers.context import ControllerContext
from lab.controllers.kubelet_ops import KubeletOps
from lab.controllers.programs import command_line, plan
from lab.images import ImageSpec

SHUTDOWN_SECONDS = 0.1  # a server's own shutdown after SIGTERM
SIGKILL_EXIT = 137
MINIMUM_GRACE = 2.0  # the kubelet never gives a container less than this after its hook


@dataclass(frozen=True)
class Hook:
    """What a preStop hook does: how long it takes (None: until it is killed) and, when it
    fails, the kubelet's message."""

    seconds: float | None
    failure: str = ""


def pre_stop(run: PodRun, container: ContainerRun) -> Hook:
    """The container's preStop hook, as the image model runs it (pure)."""
    handler = ((container.spec.get("lifecycle") or {}).get("preStop")) or {}
    who = f'Container "{container.name}" in Pod "{run.name}_{run.namespace}({run.uid})"'
    if "exec" in handler:
        command = [str(c) for c in (handler["exec"] or {}).get("command") or []]
        spec = container.behaviour
        if spec is None:
            return Hook(0.0)
        done = plan(spec, {"command": command}, container.env, run.name)
        if done.serve:  # the server's own binary (``nginx -s quit``): a control command
            return Hook(SHUTDOWN_SECONDS)
        if done.exit_code is None:
            return Hook(None)
        if done.exit_code == 0:
            return Hook(done.after)
        said = "\n".join(
            done.output + ([f"exec {done.missing}: not found"] if done.missing else [])
        )
        said = f"{said}\n" if said else ""
        return Hook(
            done.after,
            f"Exec lifecycle hook ({command}) for {who} failed - error: command "
            f"'{' '.join(command)}' exited with {done.exit_code}: {said}, message: {said!r}",
        )
    if "httpGet" in handler:
        action = handler["httpGet"] or {}
        port, path = action.get("port"), action.get("path", "/")
        if isinstance(port, str):
            port = next(
                (
                    p.get("containerPort")
                    for p in container.spec.get("ports") or []
                    if p.get("name") == port
                ),
                None,
            )
        if isinstance(port, int) and port in container.listens:
            return Hook(0.0)
        return Hook(
            0.0,
            f"HTTP lifecycle hook ({path}) for {who} failed - error: Get "
            f'"http://{run.ip}:{port}{path}": dial tcp {run.ip}:{port}: connect: '
            "connection refused",
        )
    if "sleep" in handler:
        seconds = (handler["sleep"] or {}).get("seconds", 0)
        return Hook(float(seconds) if isinstance(seconds, int | float) else 0.0)
    return Hook(0.0)


def stop_order(run: PodRun) -> list[ContainerRun]:
    """The running containers a drain sends SIGTERM now (pure): every one but the native
    sidecars; once those have stopped, the last running sidecar in spec order."""
    running = [c for c in run.all() if c.state == "running"]
    others = [c for c in running if not c.sidecar]
    if others:
        return [c for c in others if c.name not in run.stopping]
    sidecars = [c for c in running if c.sidecar]
    if not sidecars or any(c.name in run.stopping for c in sidecars):
        return []  # one sidecar at a time: the next when this one has stopped
    return [sidecars[-1]]


def grace_deadline(metadata: dict[str, Any], now: float, parse: Callable[[object], float]) -> float:
    """When the grace period of a pod stamped for deletion ends. The kubelet counts
    ``deletionGracePeriodSeconds`` from when it sees the deletion (a shortening DELETE too,
    as the kubelet restarts its kill with the shorter grace): ``deletionTimestamp`` has whole
    seconds only, so going by it cut up to a second off (a 3 s grace was killed after 2.3 s).
    The timestamp is the fallback for an object without the field."""
    grace = metadata.get("deletionGracePeriodSeconds")
    if isinstance(grace, int) and not isinstance(grace, bool) and grace >= 0:
        return now + grace
    return parse(metadata.get("deletionTimestamp"))


def on_sigterm(
    spec: ImageSpec | None, container: dict[str, Any], env: dict[str, str]
) -> int | None:
    """The exit code a running container ends with on SIGTERM, or None when it ignores the
    signal (pure)."""
    if spec is None:
        return 0
    if plan(spec, container, env, "").serve:
        return 0
    argv = command_line(spec, container)
    if any("trap" in word and "TERM" in word for word in argv):
        return 143
    return None


class PodTermination:
    def __init__(self, kubelet: KubeletOps) -> None:
        self.kubelet = kubelet

    @property
    def ctx(self) -> ControllerContext:
        return self.kubelet.ctx

    def begin(self, run: PodRun, pod: dict[str, Any]) -> None:
        """The pod was stamped for deletion: stop what runs, then delete it."""
        run.terminating = True
        run.drain_deadline = self._deadline(pod)
        for container in run.all():
            for timer in container.timers:
                cancel(timer)
            container.timers = []
        now = self.ctx.clock.now()
        left = max(run.drain_deadline - now, 0.0)
        for container in run.all():  # every container hears Killing and runs its hook at once
            if container.state == "running":
                self.kubelet.event(
                    run, "Normal", "Killing", f"Stopping container {container.name}", container
                )
                hook = pre_stop(run, container)
                if hook.failure:  # the details stay out of the event, so no secret leaks
                    self.kubelet.event(
                        run, "Warning", "FailedPreStopHook", "PreStopHook failed", container
                    )
                seconds = left if hook.seconds is None else min(hook.seconds, left)
                run.hooks_done[container.name] = now + seconds
        for container in stop_order(run):
            self._signal(run, container)
        # Deleting from a timer keeps the store unchanged while the kubelet walks it.
        self.kubelet.later(run, run.all()[0], 0.0, lambda: self.stopped(run))

    def shorten(self, run: PodRun, pod: dict[str, Any]) -> None:
        """A second DELETE shortened the grace period: what has been sent SIGTERM is killed
        by the new deadline (the new grace from now, at least ``MINIMUM_GRACE``; a grace that
        would end after the first one's changes nothing), what waits for its turn
        gets the new deadline when its turn comes."""
        deadline = self._deadline(pod)
        if deadline >= run.drain_deadline:
            return
        run.drain_deadline = deadline
        now = self.ctx.clock.now()
        for container in run.all():
            if container.state != "running":
                continue
            if container.name in run.hooks_done:
                run.hooks_done[container.name] = min(run.hooks_done[container.name], deadline)
            if container.name in run.stopping:
                for timer in container.timers:
                    cancel(timer)
                container.timers = []
                run.stopping.discard(container.name)
                run.hooks_done[container.name] = min(run.hooks_done.get(container.name, now), now)
                self._signal(run, container)

    def _deadline(self, pod: dict[str, Any]) -> float:
        clock = self.ctx.clock
        return grace_deadline(pod["metadata"], clock.now(), clock.parse)

    def _signal(self, run: PodRun, container: ContainerRun) -> None:
        """SIGTERM once the container's hook is done; SIGKILL when the grace that is left
        then (never under ``MINIMUM_GRACE``, as the kubelet has it) runs out."""
        run.stopping.add(container.name)
        now = self.ctx.clock.now()
        wait = max(run.hooks_done.get(container.name, now) - now, 0.0)
        grace = max(run.drain_deadline - now - wait, MINIMUM_GRACE)
        kubelet = self.kubelet
        spec = container.behaviour
        if spec is not None and kubelet.processes.runs_processes(spec):
            # A real process: real signals.
            def signal() -> None:
                kubelet.processes.stop_container(run.uid, container.name, grace)

            kubelet.later(run, container, wait, signal)
            return
        natural = self._natural_end(run, container)
        if natural is not None and natural[0] < wait + grace:  # it ends before the kill
            when, own_code = natural
            own_reason = "Completed" if own_code == 0 else "Error"
            kubelet.later(
                run, container, when, lambda: self._end(run, container, own_reason, own_code)
            )
            return
        code = on_sigterm(spec, container.spec, container.env)
        if code is not None and grace > SHUTDOWN_SECONDS:
            if spec is not None and not spec.raw_logs:
                kubelet.log(container, "INFO", "received SIGTERM, shutting down")
            reason = "Completed" if code == 0 else "Error"
            kubelet.later(
                run,
                container,
                wait + SHUTDOWN_SECONDS,
                lambda: self._end(run, container, reason, code),
            )
            return
        kubelet.later(
            run, container, wait + grace, lambda: self._end(run, container, "Error", SIGKILL_EXIT)
        )

    def _natural_end(self, run: PodRun, container: ContainerRun) -> tuple[float, int] | None:
        """Seconds until a script that ends by itself ends (``sleep 5``), and its code."""
        spec = container.behaviour
        if spec is None:
            return None
        done = plan(spec, container.spec, container.env, run.name)
        if done.serve or done.exit_code is None:
            return None
        started = container.started_at or self.ctx.clock.now()
        return max(started + done.after - self.ctx.clock.now(), 0.0), done.exit_code

    def _end(self, run: PodRun, container: ContainerRun, reason: str, code: int) -> None:
        if container.state == "running":
            self.kubelet.terminate(run, container, reason, code)

    def stopped(self, run: PodRun) -> None:
        """A container of a terminating pod stopped: stop the next (a sidecar once the others
        are done); when it was the last, delete the pod."""
        if run.deleted:
            return
        for container in stop_order(run):
            self._signal(run, container)
        if any(c.state == "running" for c in run.all()):
            return
        run.deleted = True
        self.kubelet.changed(run)  # the last status, with every container terminated
        with contextlib.suppress(ApiError):  # already gone (its namespace went first)
            self.ctx.api.delete(
                by_kind("Pod"),
                run.namespace,
                run.name,
                options={"gracePeriodSeconds": 0, "preconditions": {"uid": run.uid}},
            )
        self.kubelet.changed(run)
