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
from lab.controllers import cgroup_files, container_env, exec_files, exec_tools
from lab.controllers.containers import ContainerRun, resolve_environment
from lab.controllers.exec_files import Layer
from lab.controllers.exec_network import ClusterNetwork
from lab.controllers.exec_shell import Io, Shell, Stdin
from lab.controllers.port_answers import PortTarget
from lab.images import ImageCatalog

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
        container_run: Callable[[str, str], ContainerRun | None] | None = None,
        clock: Clock | None = None,
    ) -> None:
        self.store = store
        self.images = images
        self.port_target = port_target
        # (pod uid, container) -> its current run: the environment exec inherits, the usage
        # its cgroup files show
        self.container_run = container_run
        self.clock = clock
        self._layers: dict[tuple[str, str], Layer] = {}  # (pod uid, container) -> own layer
        self._empty_dirs: dict[str, dict[str, Layer]] = {}  # pod uid -> emptyDir layers
        self._count = 0

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
        self._forget_gone_pods()
        own = self._layers.get((uid, name))
        if own is None:
            ip = (pod.get("status") or {}).get("podIP") or ""
            own = self._layers[(uid, name)] = exec_files.image_layer(pod["metadata"]["name"], ip)
        files = exec_files.container_files(
            self.store, pod, chosen, own, self._empty_dirs.setdefault(uid, {})
        )
        image, _ = self.images.lookup(str(chosen.get("image", "")))
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
        repository = str(chosen.get("image", "")).split(":", 1)[0].rsplit("/", 1)[-1]
        if repository in ("busybox", "alpine"):  # busybox has wget, not curl
            tools.pop("curl", None)
        shell = Shell(files, env, binaries, tools=tools)
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

    def _not_found(self, uid: str, program: str) -> str:
        exec_id = hashlib.sha256(f"{uid}/{self._count}".encode()).hexdigest()
        return (
            "error executing command in container: failed to exec in "
            f'container: failed to start exec "{exec_id}": OCI runtime exec failed: exec '
            f'failed: unable to start container process: exec: "{program}": executable file '
            "not found in $PATH: unknown"
        )

    def _forget_gone_pods(self) -> None:
        live = {p["metadata"].get("uid") for p in self.store.iter_all("pods")}
        for key in [k for k in self._layers if k[0] not in live]:
            del self._layers[key]
        for uid in [u for u in self._empty_dirs if u not in live]:
            del self._empty_dirs[uid]
