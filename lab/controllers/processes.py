"""Containers the lab runs as real child processes (the Stratus image): ``stratus serve`` in a
pod is the real program, started by the lab's kubelet.

The kubelet decides (when to start, restart, back off); this module acts: it gives each such
pod a loopback address of its own (``127.x.y.z``, so several pods listen on the same container
port), writes its volumes as files (``pod_files``), builds its command line and environment
(``process_spec``), starts the process on the lab's event loop, turns its stdout and stderr into
the container's log, probes it for real (``process_probes``), and reports its exit. A pod that
is deleted, a container whose run the kubelet ended, and the lab stopping all send SIGTERM,
wait the pod's ``terminationGracePeriodSeconds`` and then SIGKILL the process group: the lab
never leaves a child behind (and kills any left at interpreter exit).
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import os
import random
import shutil
import signal
import sys
import tempfile
import time
import weakref
from collections.abc import Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from lab.cluster.rbac import ISSUER
from lab.controllers import pod_files, process_probes, process_spec
from lab.controllers.containers import ContainerRun, PodRun
from lab.controllers.context import ControllerContext
from lab.images import ImageSpec

# Where the image's code is installed: the repository the lab runs from.
INSTALL_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_GRACE = 30.0
LINE_LIMIT = 1 << 20  # a longer line is cut, as a runtime's log driver would split it
PUMP_DRAIN = 2.0  # seconds to read what an ended process left in its pipes
FILE_SYNC_EVERY = 1.0  # seconds between rewrites of unchanged objects' files (token rotation)

_ADDRESSES: set[str] = set()  # loopback addresses in use by any lab of this interpreter
_HOSTS: weakref.WeakSet[ProcessHost] = weakref.WeakSet()


class KubeletHooks(Protocol):
    """What the kubelet hears from the processes it started."""

    def process_exited(
        self, run: PodRun, container: ContainerRun, generation: int, code: int
    ) -> None: ...

    def process_ready(
        self, run: PodRun, container: ContainerRun, generation: int, ready: bool
    ) -> None: ...

    def process_event(
        self, run: PodRun, container: ContainerRun, event_type: str, reason: str, message: str
    ) -> None: ...


@dataclass(frozen=True)
class HostConfig:
    api: process_spec.Address
    ca_pem: str | None
    state_dir: Path | None  # None: a temporary folder, made when a pod first needs it


@dataclass
class Child:
    run: PodRun
    container: ContainerRun
    generation: int
    grace: float
    process: asyncio.subprocess.Process | None = None
    spawned: asyncio.Event = field(default_factory=asyncio.Event)
    stopping: bool = False
    tasks: list[asyncio.Task[Any]] = field(default_factory=list)


def allocate_loopback(rng: random.Random | None = None) -> str:
    """A loopback address no pod of this interpreter holds (Linux answers all of 127/8)."""
    chooser = rng or random.SystemRandom()
    while True:
        address = (
            f"127.{chooser.randint(1, 254)}.{chooser.randint(0, 255)}.{chooser.randint(2, 254)}"
        )
        if address not in _ADDRESSES:
            _ADDRESSES.add(address)
            return address


class ProcessHost:
    def __init__(self, ctx: ControllerContext, hooks: KubeletHooks) -> None:
        self.ctx = ctx
        self.hooks = hooks
        self.config: HostConfig | None = None
        self.children: dict[tuple[str, str], Child] = {}
        self.files: dict[str, pod_files.PodFiles] = {}
        self.addresses: dict[str, str] = {}  # pod uid -> its loopback address
        self._synced_at = (-1, 0.0)  # (resourceVersion, time) of the last file sync
        self._tasks: set[asyncio.Task[Any]] = set()
        self.closed = False  # the lab is stopping: nothing starts any more
        self._temporary: Path | None = None  # the state folder the lab made (removed at stop)
        _HOSTS.add(self)

    def configure(
        self, *, api: process_spec.Address, ca_pem: str | None, state_dir: Path | None = None
    ) -> None:
        """Where in-cluster clients reach the lab, its CA, and where pods' files go."""
        self.config = HostConfig(api, ca_pem, state_dir)

    def _state_dir(self) -> Path:
        assert self.config is not None
        if self.config.state_dir is not None:
            self.config.state_dir.mkdir(parents=True, exist_ok=True)
            return self.config.state_dir
        if self._temporary is None:
            self._temporary = Path(tempfile.mkdtemp(prefix="stratus-lab-pods-"))
        return self._temporary

    def address(self, uid: str) -> str:
        if uid not in self.addresses:
            self.addresses[uid] = allocate_loopback()
        return self.addresses[uid]

    @staticmethod
    def runs_processes(image: ImageSpec | None) -> bool:
        return image is not None and bool(image.process)

    # ------------------------------------------------------------ start

    def start(
        self, run: PodRun, container: ContainerRun, pod: dict[str, Any], image: ImageSpec
    ) -> str:
        """Start the container's process; returns why it cannot start ('' when it did)."""
        if self.config is None:
            return "the lab's kubelet cannot run processes: the lab is not serving yet"
        if self.closed:
            return "the lab is stopping"
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return "the lab's kubelet cannot run processes outside the lab's event loop"
        files = self._files(run.uid)
        try:
            files.sync(
                self.ctx.store, pod, issue_token=self._issue_token, ca_pem=self.config.ca_pem
            )
        except OSError as error:
            return f"cannot write the pod's volumes under {files.root}: {error}"
        mapped = pod_files.mounts(container.spec, files.dirs)
        env = process_spec.environment(
            image_env=self._image_env(run, files),
            pod=pod,
            container=container.spec,
            resolved=container.declared_env,
            services=self.ctx.store.list_objects("services", run.namespace),
            api=self.config.api,
            mapped=mapped,
        )
        try:
            words = process_spec.command_line(image, container.spec, env)
            argv = process_spec.arguments(
                process_spec.host_argv(image, words, sys.executable), mapped
            )
        except process_spec.ProgramNotFound as missing:
            return f'exec: "{missing.program}": executable file not found in $PATH'
        working = str(container.spec.get("workingDir") or "")
        cwd = Path(pod_files.rewrite(working, mapped)) if working else files.root / "rootfs"
        cwd.mkdir(parents=True, exist_ok=True)
        grace = process_probes.seconds(
            (pod.get("spec") or {}).get("terminationGracePeriodSeconds"), DEFAULT_GRACE
        )
        child = Child(run, container, container.generation, grace)
        old = self.children.get((run.uid, container.name))
        if old is not None:
            self.stop(old)
        self.children[(run.uid, container.name)] = child
        self._spawn(child, loop, self._run(child, argv, env, cwd))
        return ""

    def _spawn(
        self, child: Child, loop: asyncio.AbstractEventLoop, work: Coroutine[Any, Any, Any]
    ) -> None:
        task = loop.create_task(work)
        child.tasks.append(task)
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    def _files(self, uid: str) -> pod_files.PodFiles:
        assert self.config is not None
        if uid not in self.files:
            state = self._state_dir()
            self.files[uid] = pod_files.PodFiles(state / "pods" / uid, state / "volumes")
        return self.files[uid]

    def _image_env(self, run: PodRun, files: pod_files.PodFiles) -> dict[str, str]:
        home = files.root / "home"
        home.mkdir(parents=True, exist_ok=True)
        return {
            "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "HOME": str(home),
            "HOSTNAME": run.name,
            "LANG": "C.UTF-8",
            # The image's Python finds its code where the lab's own does, unbuffered so the
            # log shows each line as it is written.
            "PYTHONPATH": str(INSTALL_ROOT),
            "PYTHONUNBUFFERED": "1",
        }

    def _issue_token(self, namespace: str, account: str, seconds: int, audience: str) -> str:
        stored = self.ctx.store.get("serviceaccounts", namespace, account)
        if stored is None:
            return ""
        token, _ = self.ctx.api.access.authn.issue(
            namespace,
            stored,
            expiration_seconds=seconds,
            audiences=[audience or ISSUER],  # no audience: the API server's own, as kubelets ask
        )
        return token

    # ------------------------------------------------------------ run

    async def _run(self, child: Child, argv: list[str], env: dict[str, str], cwd: Path) -> None:
        try:
            process = await asyncio.create_subprocess_exec(
                *argv,
                stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE,
                env=env,
                cwd=cwd,
                start_new_session=True,  # its own group: SIGKILL takes whatever it started
                limit=LINE_LIMIT,
            )
        except OSError as error:
            child.spawned.set()
            self._forget(child)
            self._log(child, f"failed to start: {error}")
            self.hooks.process_exited(child.run, child.container, child.generation, 128)
            return
        child.process = process
        child.spawned.set()
        self._spawn(child, asyncio.get_running_loop(), self._probe(child))
        probes = child.tasks[-1]
        assert process.stdout is not None and process.stderr is not None
        pumps = asyncio.gather(self._pump(child, process.stdout), self._pump(child, process.stderr))
        code = await process.wait()
        probes.cancel()
        # The container ends with its first process, as a runtime ends it: whatever it
        # started goes too (and can no longer hold the log open).
        _signal_group(process.pid, signal.SIGKILL)
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(pumps, PUMP_DRAIN)
        self._forget(child)
        # A signal's death shows as 128 + the signal, as a runtime reports it.
        self.hooks.process_exited(
            child.run, child.container, child.generation, 128 - code if code < 0 else code
        )

    def _forget(self, child: Child) -> None:
        key = (child.run.uid, child.container.name)
        if self.children.get(key) is child:
            del self.children[key]

    async def _pump(self, child: Child, stream: asyncio.StreamReader) -> None:
        while True:
            try:
                line = await stream.readline()
            except ValueError:  # a line over the limit: what was read of it is dropped
                continue
            if not line:
                return
            self._log(child, line.decode("utf-8", errors="replace").rstrip("\r\n"))

    def _log(self, child: Child, text: str) -> None:
        if child.container.generation == child.generation:
            child.container.add_log(text, self.ctx.clock.now())

    # ------------------------------------------------------------ probes

    async def _probe(self, child: Child) -> None:
        spec = child.container.spec
        startup = spec.get("startupProbe")
        if startup is not None and not await self._watch(child, startup, "Startup", initial=None):
            return
        readiness = spec.get("readinessProbe")
        if readiness is None:
            self.hooks.process_ready(child.run, child.container, child.generation, True)
        watches = [self._watch(child, readiness, "Readiness", initial=None)] if readiness else []
        liveness = spec.get("livenessProbe")
        if liveness is not None:
            watches.append(self._watch(child, liveness, "Liveness", initial=True))
        await asyncio.gather(*watches)

    async def _watch(
        self, child: Child, probe: dict[str, Any], word: str, *, initial: bool | None
    ) -> bool:
        """Probe until the probe's verdict ends this watch: a passed startup probe (True), a
        failed startup or liveness probe (False, after killing the run). A readiness probe
        runs for the process's life and moves the container's readiness."""
        timing = process_probes.ProbeTiming.of(probe)
        counter = process_probes.ProbeCounter(timing, verdict=initial)
        await asyncio.sleep(timing.initial_delay)
        while not child.stopping:
            ok, message = await process_probes.attempt(probe, child.container.spec, child.run.ip)
            if child.stopping:
                break
            if not ok:
                self.hooks.process_event(
                    child.run,
                    child.container,
                    "Warning",
                    "Unhealthy",
                    f"{word} probe failed: {message}",
                )
            verdict = counter.record(ok)
            if word == "Startup" and verdict is True:
                return True
            if word == "Readiness" and verdict is not None:
                self.hooks.process_ready(child.run, child.container, child.generation, verdict)
            if word != "Readiness" and verdict is False:
                self.hooks.process_event(
                    child.run,
                    child.container,
                    "Normal",
                    "Killing",
                    f"Container {child.container.name} failed {word.lower()} probe, will be "
                    "restarted",
                )
                grace = probe.get("terminationGracePeriodSeconds")
                self.stop(child, None if grace is None else process_probes.seconds(grace, 0.0))
                return False
            await asyncio.sleep(timing.period)
        return False

    # ------------------------------------------------------------ stop

    def stop(self, child: Child, grace: float | None = None) -> None:
        """SIGTERM now, SIGKILL after the grace period (the pod's, unless given)."""
        if child.stopping:
            return
        child.stopping = True
        loop = asyncio.get_running_loop()
        self._spawn(child, loop, self._terminate(child, child.grace if grace is None else grace))

    def stop_container(self, uid: str, name: str, grace: float) -> None:
        """SIGTERM the process of one container of a pod now, SIGKILL after ``grace``."""
        child = self.children.get((uid, name))
        if child is not None:
            self.stop(child, grace)

    async def _terminate(self, child: Child, grace: float) -> None:
        await child.spawned.wait()
        process = child.process
        if process is None or process.returncode is not None:
            return
        _signal_group(process.pid, signal.SIGTERM)
        try:
            await asyncio.wait_for(process.wait(), grace)
        except TimeoutError:
            _signal_group(process.pid, signal.SIGKILL)
            await process.wait()

    def sync(self, runs: dict[str, PodRun]) -> None:
        """After a reconcile: end the processes of runs the kubelet ended (pod deleted, image
        changed, lab reset), keep live pods' files in step with their objects, drop the files
        and addresses of pods that are gone."""
        grace = self.ctx.api.pod_grace
        for child in list(self.children.values()):
            if runs.get(child.run.uid) is not child.run:  # the pod is gone
                self.stop(child, grace.get(child.run.uid))
            elif child.container.generation != child.generation:
                self.stop(child)
        for uid in [u for u in grace if u not in runs]:
            del grace[uid]
        busy = {uid for uid, _ in self.children}
        for uid in [u for u in self.addresses if u not in runs and u not in busy]:
            _ADDRESSES.discard(self.addresses.pop(uid))
        for uid in [u for u in self.files if u not in runs and u not in busy]:
            self.files.pop(uid).remove()
        self._sync_files(runs)

    def _sync_files(self, runs: dict[str, PodRun]) -> None:
        if self.config is None or not self.files:
            return
        version, at = self._synced_at
        now = time.monotonic()
        if version == self.ctx.store.resource_version and now - at < FILE_SYNC_EVERY:
            return
        self._synced_at = (self.ctx.store.resource_version, now)
        for uid, files in self.files.items():
            run = runs.get(uid)
            pod = self.ctx.store.get("pods", run.namespace, run.name) if run else None
            if pod is None or pod["metadata"]["uid"] != uid:
                continue
            try:
                files.sync(
                    self.ctx.store, pod, issue_token=self._issue_token, ca_pem=self.config.ca_pem
                )
            except OSError as error:
                # The files keep their last content; the kubelet says why, and goes on.
                self.ctx.events.record(
                    pod,
                    "Warning",
                    "FailedMount",
                    f"MountVolume.SetUp failed: cannot update the files under {files.root}: "
                    f"{error.strerror or error}",
                    component="kubelet",
                    host=(pod.get("spec") or {}).get("nodeName"),
                )

    def longest_grace(self) -> float:
        return max((c.grace for c in list(self.children.values())), default=0.0)

    async def shutdown(self) -> None:
        """The lab stops: every process gets its SIGTERM and grace period, then SIGKILL."""
        self.closed = True
        for child in list(self.children.values()):
            self.stop(child)
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=self.longest_grace() + 5.0)
        self.kill_all()
        if self._tasks:  # SIGKILLed: their readers and waiters end at once
            await asyncio.wait(set(self._tasks), timeout=5.0)
        leftover = set(self._tasks)
        for task in leftover:
            task.cancel()
        await asyncio.gather(*leftover, return_exceptions=True)
        if self._temporary is not None:
            shutil.rmtree(self._temporary, ignore_errors=True)
            self._temporary = None
        for address in self.addresses.values():
            _ADDRESSES.discard(address)
        self.addresses.clear()

    def kill_all(self) -> None:
        """SIGKILL every process still alive (synchronous: also at interpreter exit)."""
        for child in list(self.children.values()):
            if child.process is not None and child.process.returncode is None:
                _signal_group(child.process.pid, signal.SIGKILL)

    def pids(self) -> list[int]:
        return [c.process.pid for c in self.children.values() if c.process is not None]


def _signal_group(pid: int, sig: signal.Signals) -> None:
    with contextlib.suppress(ProcessLookupError, PermissionError):
        os.killpg(pid, sig)


@atexit.register
def _kill_leftovers() -> None:
    for host in list(_HOSTS):
        host.kill_all()
