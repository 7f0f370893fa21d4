"""The kubelet's image pulls: ``Pulling``, ``Pulled``, or ``ErrImagePull`` and its back-off.

An image the catalog knows is pulled once per node (``imagePullPolicy: Always`` pulls it
again for every start); one it does not know fails to pull with the registry's error and is
retried with a back-off of 10 s doubling to 5 min (``ImagePullBackOff``). Once pulled, the
kubelet starts the container. Split from ``lab.controllers.kubelet``, which pulls before
every start.
"""

from __future__ import annotations

from lab.controllers.containers import ContainerRun, PodRun
from lab.controllers.crash_loop import MAX_BACKOFF
from lab.controllers.kubelet_ops import KubeletOps


class ImagePulls:
    """Which images each node has pulled, and the pulls under way."""

    def __init__(self, kubelet: KubeletOps) -> None:
        self.kubelet = kubelet
        self._pulled: set[tuple[str, str]] = set()

    def reset(self) -> None:
        """Forget every pulled image (the lab was reset)."""
        self._pulled.clear()

    def pull(self, run: PodRun, container: ContainerRun) -> None:
        """Pull the container's image (or find it on the node), then have the kubelet start it."""
        policy = container.spec.get("imagePullPolicy", "IfNotPresent")
        if (run.node, container.image) in self._pulled and policy != "Always":
            self.kubelet.event(
                run,
                "Normal",
                "Pulled",
                f'Container image "{container.image}" already present on machine',
                container,
            )
            self.kubelet.start(run, container)
            return
        self.kubelet.event(
            run, "Normal", "Pulling", f'Pulling image "{container.image}"', container
        )
        self.kubelet.later(run, container, 0.5, lambda: self._pulled_or_failed(run, container))

    def _pulled_or_failed(self, run: PodRun, container: ContainerRun) -> None:
        spec, _ = self.kubelet.ctx.images.lookup(container.image)
        if spec is not None:
            self._pulled.add((run.node, container.image))
            self.kubelet.event(
                run,
                "Normal",
                "Pulled",
                f'Successfully pulled image "{container.image}" in 512ms (512ms '
                "including waiting). Image size: 18874368 bytes.",
                container,
            )
            self.kubelet.start(run, container)
            return
        container.pull_failures += 1
        error = self.kubelet.ctx.images.pull_error(container.image)
        container.state, container.reason, container.message = "waiting", "ErrImagePull", error
        self.kubelet.event(
            run,
            "Warning",
            "Failed",
            f'Failed to pull image "{container.image}": {error}',
            container,
        )
        self.kubelet.event(run, "Warning", "Failed", "Error: ErrImagePull", container)

        def back_off() -> None:
            container.reason = "ImagePullBackOff"
            container.message = f'Back-off pulling image "{container.image}"'
            self.kubelet.event(
                run, "Normal", "BackOff", f'Back-off pulling image "{container.image}"', container
            )
            self.kubelet.event(run, "Warning", "Failed", "Error: ImagePullBackOff", container)
            delay = min(10.0 * 2 ** (container.pull_failures - 1), MAX_BACKOFF)
            self.kubelet.later(
                run, container, delay, lambda: self.pull(run, container), steady=True
            )

        self.kubelet.later(run, container, 1.0, back_off)
