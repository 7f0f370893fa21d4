"""The kubelet's probes: startup, readiness and liveness, as the image model answers them.

A probe's result comes from what the container serves (``containers.probe_result``): a
readiness probe that fails keeps the container un-Ready and is tried again every period; a
startup or liveness probe that fails kills the run once its failure threshold has passed (an
``Unhealthy`` event per failed try, then ``Killing``), and the kubelet restarts it as after
any crash. Readiness and liveness wait for a startup probe to pass. Split from
``lab.controllers.kubelet``, which starts the probes of each run it starts.
"""

from __future__ import annotations

from typing import Any

from lab.controllers.containers import ContainerRun, PodRun, probe_result
from lab.controllers.kubelet_ops import KubeletOps


class Probes:
    """The probes of the kubelet's runs; timers go through the kubelet, so a run that
    restarts or goes drops its probes with its other timers."""

    def __init__(self, kubelet: KubeletOps) -> None:
        self.kubelet = kubelet

    def schedule(self, run: PodRun, container: ContainerRun) -> None:
        """Start the probes of a container that just started (an init container has none)."""
        readiness = container.spec.get("readinessProbe")
        if container.init and not container.sidecar:
            return
        startup = container.spec.get("startupProbe")
        if startup is not None and not probe_result(container, startup)[0]:
            # Readiness and liveness wait for the startup probe to pass; one that never
            # passes kills the run after its failure threshold, as a liveness probe does.
            self.kubelet.later(
                run,
                container,
                _probe_deadline(startup),
                lambda: self._kill(run, container, "startupProbe"),
                urgent=True,
            )
            return
        if readiness is None:
            container.ready = True
        else:
            delay = float(readiness.get("initialDelaySeconds", 0)) + 1.0
            self.kubelet.later(run, container, delay, lambda: self._readiness(run, container))
        liveness = container.spec.get("livenessProbe")
        if liveness is not None:
            ok, _ = probe_result(container, liveness)
            if not ok:
                # The run is doomed from its start: a settle never ends before the kill.
                self.kubelet.later(
                    run,
                    container,
                    _probe_deadline(liveness),
                    lambda: self._kill(run, container, "livenessProbe"),
                    urgent=True,
                )

    def _readiness(self, run: PodRun, container: ContainerRun) -> None:
        probe = container.spec.get("readinessProbe") or {}
        ok, message = probe_result(container, probe)
        container.ready = ok
        if not ok:
            self.kubelet.event(
                run,
                "Warning",
                "Unhealthy",
                f"Readiness probe failed: {message.replace('{ip}', run.ip)}",
                container,
            )
            self.kubelet.later(
                run,
                container,
                float(probe.get("periodSeconds", 10)),
                lambda: self._readiness(run, container),
                steady=True,
            )

    def _kill(self, run: PodRun, container: ContainerRun, field: str) -> None:
        probe = container.spec.get(field) or {}
        word = "Startup" if field == "startupProbe" else "Liveness"
        _, message = probe_result(container, probe)
        for _ in range(max(int(probe.get("failureThreshold", 3)), 1)):  # one per failed try
            self.kubelet.event(
                run,
                "Warning",
                "Unhealthy",
                f"{word} probe failed: {message.replace('{ip}', run.ip)}",
                container,
            )
        self.kubelet.event(
            run,
            "Normal",
            "Killing",
            f"Container {container.name} failed {word.lower()} probe, will be restarted",
            container,
        )
        self.kubelet.log(container, "INFO", "received SIGTERM, shutting down")
        self.kubelet.terminate(run, container, "Error", 137)


def _probe_deadline(probe: dict[str, Any]) -> float:
    """Seconds from a run's start until a probe that always fails has failed enough to kill."""
    return float(probe.get("initialDelaySeconds", 0)) + float(probe.get("periodSeconds", 10)) * int(
        probe.get("failureThreshold", 3)
    )
