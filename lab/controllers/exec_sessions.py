"""One command run inside a container (``kubectl exec``, the Python client's ``stream``):
what the container runtime would start, and how it ends.

The session runs the command in a worker thread and reports output and the end through
callbacks the protocol layer gives it. Its outcome is what the kubelet reports on the error
channel: success, a non-zero exit code, or the runtime's own failure when the image has no such
program (``exec: "sh": executable file not found in $PATH``). The files a command writes stay
with the container (and an emptyDir's with the pod) for the next command, until the pod goes.
"""

from __future__ import annotations

import hashlib
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lab.cluster.clock import Clock
from lab.cluster.store import ObjectStore
from lab.controllers import (
    cgroup_files,
    container_env,
    exec_files,
    exec_image_tools,
    exec_tools,
    image_filesystems,
)
from lab.controllers.containers import ContainerRun, resolve_environment
from lab.controllers.exec_files import ContainerFiles, Layer, WritableLayers
from lab.controllers.exec_network import DNS_SERVER, ClusterNetwork
from lab.controllers.exec_shell import Io, Shell, Stdin
from lab.controllers.port_answers import PortTarget
from lab.images import ImageCatalog, split_image

SHELLS = frozenset({"sh", "ash", "bash", "dash"})
STDOUT, STDERR = 1, 2


@dataclass(frozen=True)
class Outcome:
    """How the command ended: an exit code, or the runtime's refusal to start it."""

    exit_code: int = 0
    runtime_error: str = ""


@dataclass
class Session:
    shell: Shell
    argv: list[str]
    tty: bool
    refusal: str = ""
    stdin: Stdin = field(default_factory=Stdin)

    def start(self, output: Callable[[int, bytes], None], done: Callable[[Outcome], None]) -> None:
        """Run in a worker thread; ``output`` and ``done`` are called from that thread."""

        def write(channel: int) -> Callable[[bytes], None]:
            def emit(data: bytes) -> None:
                if data and not self.shell.stopped.is_set():
                    if self.tty:  # a terminal turns newlines into CR LF, and has one stream
                        data = data.replace(b"\r\n", b"\n").replace(b"\n", b"\r\n")
                    output(STDOUT if self.tty else channel, data)

            return emit

        def run() -> None:
            if self.refusal:
                done(Outcome(runtime_error=self.refusal))
                return
            try:
                code = self.shell.run_argv(self.argv, Io(self.stdin, write(STDOUT), write(STDERR)))
            except Exception as exc:  # a bug in an applet must still end the stream
                write(STDERR)(f"{self.argv[0]}: {exc}\n".encode())
                code = 1
            done(Outcome(exit_code=code))

        threading.Thread(target=run, name=f"exec {self.argv[0]}", daemon=True).start()

    def stop(self) -> None:
        self.shell.stopped.set()
        self.stdin.close()


class ExecSessions:
    """The commands run in a cluster's containers, and what they leave behind."""

    def __init__(
        self,
        store: ObjectStore,
        images: ImageCatalog,
        port_target: Callable[[dict[str, Any], int], PortTarget] | None = None,
        layers: WritableLayers | None = None,
        *,
        container_run: Callable[[str, str], ContainerRun | None] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.store = store
        self.images = images
        self.port_target = port_target
        # Shared with the kubelet, whose containers' commands write there too; a container's
        # own layer starts as its image's files.
        self.layers = layers if layers is not None else WritableLayers()
        self.layers.stock = self._image_layer
        # What the modeled servers hold (pod uid -> redis keys), for redis-cli's set and get.
        self.server_data: dict[str, dict[str, str]] = {}
        # (pod uid, container) -> its current run: the environment exec inherits, the usage
        # its cgroup files show
        self.container_run = container_run
        self.clock = clock
        self._count = 0

    def container_files(self, pod: dict[str, Any], container: dict[str, Any]) -> ContainerFiles:
        """What one container of the pod sees: its own layer (kept until the pod goes), its
        mounts and the pod's emptyDirs. The modeled HTTP servers read their pages here."""
        self._forget_gone_pods()
        return self.layers.files(self.store, pod, container)

    def _image_layer(self, pod: dict[str, Any], container: dict[str, Any]) -> Layer:
        """A new container's own layer: its image's stock files and the kubelet's."""
        reference = str(container.get("image", ""))
        image, _ = self.images.lookup(reference)
        stock = image_filesystems.tree(
            image.filesystem if image is not None else None,
            image.version_of(split_image(reference)[1]) if image is not None else "",
        )
        return exec_files.image_layer(pod, stock, self._dns_ip())

    def open(
        self, pod: dict[str, Any], container: str | None, argv: list[str], *, tty: bool
    ) -> Session:
        spec = pod.get("spec") or {}
        containers = (spec.get("containers") or []) + (spec.get("initContainers") or [])
        chosen = next(
            (c for c in containers if c.get("name") == container),
            (spec.get("containers") or [{}])[0],
        )
        uid = pod["metadata"].get("uid", "")
        name = str(chosen.get("name", ""))
        files = self.container_files(pod, chosen)
        reference = str(chosen.get("image", ""))
        image, _ = self.images.lookup(reference)
        current = self.container_run(uid, name) if self.container_run is not None else None
        if current is not None and current.ever_started:
            env = dict(current.env)
        else:  # no run to inherit from: what a start now would get
            configured, _ = resolve_environment(
                self.store, pod, chosen, (pod.get("status") or {}).get("podIP") or ""
            )
            env = container_env.build(self.store, self.images, pod, chosen, configured)
        now = self.clock.now() if self.clock is not None else 0.0
        files.mounts.append(
            (cgroup_files.MOUNT, cgroup_files.cgroup_layer(chosen, current, now), False)
        )
        if tty:
            env["TERM"] = "xterm"
        binaries = set(image.binaries) if image is not None else set()
        tools = dict(exec_tools.TOOLS)
        repository = reference.split(":", 1)[0].rsplit("/", 1)[-1]
        if repository in ("busybox", "alpine"):  # busybox has wget, not curl
            tools.pop("curl", None)
        if image is not None:  # nginx -v, redis-cli, psql …: only where the image ships them
            tools.update(
                exec_image_tools.tools_for(
                    image, split_image(reference)[1], self.server_data, tty=tty
                )
            )
        shell = Shell(files, env, binaries, tools=tools)
        stock = image_filesystems.tree(image.filesystem if image is not None else None)
        shell.cwd = str(chosen.get("workingDir") or stock.workdir)
        if self.port_target is not None:
            shell.network = ClusterNetwork(
                self.store, self.port_target, pod["metadata"]["namespace"], pod
            )
        program = argv[0].rsplit("/", 1)[-1] if argv else ""
        has_shell = image is not None and image.shell
        known = program in SHELLS or program in tools
        runnable = (has_shell and known) or program in binaries
        self._count += 1
        refusal = "" if runnable and argv else self._not_found(uid, argv[0] if argv else "")
        if runnable and not known:  # the image's own binary: it starts, and says nothing
            argv = ["true"]
        return Session(shell, argv or ["true"], tty, refusal)

    def _dns_ip(self) -> str:
        service = self.store.get("services", "kube-system", "kube-dns") or {}
        return str((service.get("spec") or {}).get("clusterIP") or DNS_SERVER)

    def _not_found(self, uid: str, program: str) -> str:
        exec_id = hashlib.sha256(f"{uid}/{self._count}".encode()).hexdigest()
        return (
            "error executing command in container: failed to exec in "
            f'container: failed to start exec "{exec_id}": OCI runtime exec failed: exec '
            f'failed: unable to start container process: exec: "{program}": executable file '
            "not found in $PATH: unknown"
        )

    def _forget_gone_pods(self) -> None:
        live = {str(p["metadata"].get("uid")) for p in self.store.iter_all("pods")}
        self.layers.forget_gone(live)
        for uid in [u for u in self.server_data if u not in live]:
            del self.server_data[uid]
