"""What the kubelet's parts call back on it: the ``KubeletOps`` Protocol.

The kubelet (``lab.controllers.kubelet``) hands each part of its work — a graceful pod
termination, the probes, the image pulls — itself, typed as this Protocol, so that those
modules need not import the kubelet (which imports them: the import goes one way). It lists
only what they call, with the kubelet's own signatures.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from lab.controllers.containers import ContainerRun, PodRun
from lab.controllers.context import ControllerContext
from lab.controllers.processes import ProcessHost


class KubeletOps(Protocol):
    """The kubelet (``kubelet.Kubelet``), as its parts see it."""

    ctx: ControllerContext
    processes: ProcessHost

    def event(
        self,
        run: PodRun,
        event_type: str,
        reason: str,
        message: str,
        container: ContainerRun | None = None,
    ) -> None: ...

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
    ) -> None: ...

    def log(self, container: ContainerRun, level: str, text: str, *, raw: bool = False) -> None: ...

    def start(self, run: PodRun, container: ContainerRun) -> None: ...

    def terminate(self, run: PodRun, container: ContainerRun, reason: str, code: int) -> None: ...

    def changed(self, run: PodRun) -> None: ...
