"""A container's shell script over time: its lines reach the log at the second they are
printed, and a ``while`` loop stopped between passes (``container_scripts.Continuation``)
goes on at its next pass's second, against the container's files as they are then.

On the realtime clock the kubelet plans a script with a horizon of 0 s, so every pass runs
at its own second (``while [ ! -f /work/key ]; do sleep 1; done`` notices the file ``kubectl
cp`` puts there within a second, ``kubectl logs -f`` sees a ``date`` loop tick). On the
instant clock the first :data:`container_scripts.LOOP_SECONDS` run at the start, as settling
needs an answer at once, and every line is there at once; the passes after them are steady
timers, run when time is let pass (a settle with a horizon). Split from
``lab.controllers.kubelet``, which hands each script it starts here.
"""

from __future__ import annotations

from collections.abc import Callable

from lab.cluster.clock import REALTIME
from lab.controllers.container_scripts import LOOP_SECONDS, Continuation
from lab.controllers.containers import ContainerRun, PodRun
from lab.controllers.kubelet_ops import KubeletOps


class ScriptRuns:
    """The kubelet's running scripts; their timers go through the kubelet, so a run that
    restarts or goes drops what is left of its script with its other timers."""

    def __init__(self, kubelet: KubeletOps) -> None:
        self.kubelet = kubelet

    def horizon(self) -> float:
        """How far a script's loops run when it starts (see the module docstring)."""
        return 0.0 if self.kubelet.ctx.clock.mode == REALTIME else LOOP_SECONDS

    def output(
        self, run: PodRun, container: ContainerRun, lines: list[str], at: list[float]
    ) -> None:
        """Log each line at its second of the run (at once on the instant clock)."""
        clock = self.kubelet.ctx.clock
        timed = clock.mode == REALTIME
        for index, line in enumerate(lines):
            due = self._since_start(container, at[index]) if timed and at else 0.0
            if due <= 0:
                container.add_log(line, clock.now())
            else:
                self.kubelet.later(run, container, due, _logger(container, line, clock.now))

    def go_on(self, run: PodRun, container: ContainerRun, script: Continuation) -> None:
        """Take the script up again at its next pass's second."""
        delay = max(self._since_start(container, script.at), 0.0)
        self.kubelet.later(
            run, container, delay, lambda: self._step(run, container, script), steady=True
        )

    def _since_start(self, container: ContainerRun, second: float) -> float:
        """How long from now until ``second`` of the container's run."""
        started = container.started_at if container.started_at is not None else 0.0
        return started + second - self.kubelet.ctx.clock.now()

    def _step(self, run: PodRun, container: ContainerRun, script: Continuation) -> None:
        outcome = script.step()
        self.output(run, container, outcome.output, outcome.output_at)
        container.listens, container.http = outcome.listens, outcome.http
        if outcome.resume is not None:
            self.go_on(run, container, outcome.resume)
            return
        if outcome.exit_code is None:
            return  # runs on (a server, ``sleep infinity``, a loop taken as endless)
        code = outcome.exit_code
        reason = "Completed" if code == 0 else "Error"
        delay = max(self._since_start(container, outcome.after), 0.0)
        container.exiting = code != 0
        self.kubelet.later(
            run, container, delay, lambda: self.kubelet.terminate(run, container, reason, code)
        )


def _logger(container: ContainerRun, line: str, now: Callable[[], float]) -> Callable[[], None]:
    return lambda: container.add_log(line, now())
