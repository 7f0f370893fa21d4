"""The simulated cluster: storage, API, clock and controllers wired together.

``Cluster`` is what the HTTP server serves. In instant mode every write is followed by a
settle (the cluster runs to steady state in virtual time before the next request is served),
so tests see a converged cluster without sleeping. In realtime mode a ticker drives the
controllers from the wall clock, for the demo.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
import json
import time
from importlib import resources as pkg_resources
from pathlib import Path
from typing import Any, Protocol

import yaml

from lab.cluster.api import ApiService
from lab.cluster.clock import INSTANT, Clock
from lab.cluster.errors import ApiError
from lab.cluster.resources import by_kind
from lab.cluster.store import ObjectStore
from lab.cluster.update_rules import UpdateRules
from lab.controllers import port_answers
from lab.controllers.apiserver_endpoints import ApiServerEndpoints
from lab.controllers.attach_sessions import AttachSession
from lab.controllers.cluster_services import HorizontalPodAutoscalerController, NodeController
from lab.controllers.containers import ContainerRun, PodRun
from lab.controllers.context import ControllerContext, EventRecorder
from lab.controllers.cronjobs import CronJobController
from lab.controllers.default_storage_class import DefaultStorageClass
from lab.controllers.deployment import DeploymentController
from lab.controllers.disruption import DisruptionController, evict
from lab.controllers.exec_sessions import ExecSessions, Session
from lab.controllers.jobs import BatchAdmission, JobController
from lab.controllers.kubelet import Kubelet
from lab.controllers.limit_ranges import LimitRangeAdmission
from lab.controllers.port_answers import PortTarget
from lab.controllers.replicasets import (
    DaemonSetController,
    ReplicaSetController,
    ReplicationControllerController,
    StatefulSetController,
)
from lab.controllers.revisions import ControllerRevisionController
from lab.controllers.role_aggregation import ClusterRoleAggregator
from lab.controllers.scheduling import Scheduler, VolumeBinder
from lab.controllers.service_accounts import ServiceAccountAdmission, ServiceAccountController
from lab.controllers.services import (
    ClusterIPAllocator,
    EndpointsController,
    QuotaAdmission,
    QuotaController,
)
from lab.controllers.system_namespaces import SystemNamespaces
from lab.controllers.taint_manager import TaintManager
from lab.controllers.traffic import TrafficSimulator
from lab.controllers.volume_expansion import VolumeExpander
from lab.controllers.volumes import PersistentVolumeController
from lab.images import ImageCatalog


class Controller(Protocol):
    def reconcile(self) -> None: ...


LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"


def with_last_applied(doc: dict[str, Any]) -> dict[str, Any]:
    """The manifest as ``kubectl apply`` creates it: with its own JSON in the last-applied
    annotation (clients diff against it, and it is what a later patch drifts from)."""
    metadata = dict(doc.get("metadata") or {})
    annotations = {
        k: v for k, v in (metadata.get("annotations") or {}).items() if k != LAST_APPLIED
    }
    applied = {
        **doc,
        "metadata": {**metadata, "annotations": annotations}
        if annotations
        else {k: v for k, v in metadata.items() if k != "annotations"},
    }
    text = json.dumps(applied, sort_keys=True, separators=(",", ":")) + "\n"
    return {**doc, "metadata": {**metadata, "annotations": {**annotations, LAST_APPLIED: text}}}


APPS_DIR = Path(str(pkg_resources.files("lab"))) / "apps"
MAX_ROUNDS = 60
SETTLE_HORIZON = 120.0
URGENT_REACH = 3600.0  # a bound on how far urgent timers may carry one settle
EVENT_TTL = 3600.0  # the API server's --event-ttl default
TRAFFIC_WINDOW = 10.0
TRAFFIC_STEP = 1.0  # instant mode: the least a settle that writes new log lines moves the clock


def available_apps() -> list[str]:
    return sorted(p.name for p in APPS_DIR.iterdir() if p.is_dir() and p.name != "base")


# libyaml's loader when PyYAML was built with it: parsing the apps was half of a reset.
_LOADER: type[yaml.SafeLoader] = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# Parsed manifest files by path, kept while the file's mtime and size stay the same: every
# lab reset installs the same apps again, and callers get copies they may change.
_PARSED: dict[Path, tuple[tuple[int, int], list[dict[str, Any]]]] = {}


def _parsed(file: Path) -> list[dict[str, Any]]:
    stat = file.stat()
    key = (stat.st_mtime_ns, stat.st_size)
    cached = _PARSED.get(file)
    if cached is None or cached[0] != key:
        documents = [d for d in yaml.load_all(file.read_text(), Loader=_LOADER) if d]
        cached = _PARSED[file] = (key, documents)
    return copy.deepcopy(cached[1])


def load_manifests(path: Path) -> list[dict[str, Any]]:
    documents: list[dict[str, Any]] = []
    for file in sorted(path.glob("*.yaml")):
        if file.name == "images.yaml":
            continue
        documents.extend(_parsed(file))
    return documents


def default_catalog() -> ImageCatalog:
    catalog = ImageCatalog()
    for images in sorted(APPS_DIR.glob("*/images.yaml")):
        catalog.merge_file(images)
    return catalog


class Cluster:
    def __init__(self, *, mode: str = INSTANT, images: ImageCatalog | None = None) -> None:
        self.clock = Clock(mode)
        self.store = ObjectStore(self.clock)
        self.api = ApiService(self.store, self.clock)
        self.images = images or default_catalog()
        self.events = EventRecorder(self.store, self.clock)
        self.ctx = ControllerContext(self.store, self.api, self.clock, self.events, self.images)
        self.exec_sessions = ExecSessions(
            self.store,
            self.images,
            self.port_target,
            self.ctx.layers,
            container_run=self.container_run,
            clock=self.clock,
        )
        self.kubelet = Kubelet(self.ctx)
        self.kubelet.on_change = self.after_write
        self.kubelet.pages = self._page_status
        self.scheduler = Scheduler(self.ctx)
        self.traffic = TrafficSimulator(self.ctx, self.kubelet)
        self.apiserver_endpoints = ApiServerEndpoints(self.ctx)
        self.controllers: list[Controller] = [
            SystemNamespaces(self.ctx),
            ClusterRoleAggregator(self.ctx),
            self.apiserver_endpoints,
            ServiceAccountController(self.ctx),
            NodeController(self.ctx),
            DeploymentController(self.ctx),
            ReplicaSetController(self.ctx),
            ReplicationControllerController(self.ctx),
            StatefulSetController(self.ctx),
            DaemonSetController(self.ctx),
            JobController(self.ctx),
            CronJobController(self.ctx),
            DisruptionController(self.ctx),
            ControllerRevisionController(self.ctx),
            PersistentVolumeController(self.ctx),
            VolumeBinder(self.ctx),
            self.scheduler,
            self.kubelet,
            EndpointsController(self.ctx),
            QuotaController(self.ctx),
            HorizontalPodAutoscalerController(self.ctx),
            VolumeExpander(self.ctx),
            TaintManager(self.ctx),
        ]
        self.api.admission_hooks.extend(
            [
                ClusterIPAllocator(self.ctx),
                ServiceAccountAdmission(self.ctx),
                LimitRangeAdmission(self.ctx),  # defaults first, as the quota counts them
                DefaultStorageClass(self.ctx),  # before the quota, which counts per class
                QuotaAdmission(self.ctx),
                UpdateRules(self.store),
            ]
        )
        self.api.admission_hooks.append(BatchAdmission())
        self.installed_apps: list[str] = []
        self._traffic_at = 0.0  # the clock when the last traffic window was logged
        self._settle_pending = False
        self._bootstrap()

    # ------------------------------------------------------------ Backend protocol

    def now(self) -> float:
        return self.clock.now()

    def read_log(
        self,
        namespace: str,
        pod: str,
        container: str | None,
        *,
        previous: bool,
        tail_lines: int | None,
    ) -> str:
        return self.kubelet.read_log(
            namespace, pod, container, previous=previous, tail_lines=tail_lines
        )

    def log_source(
        self, namespace: str, pod: str, container: str | None, *, previous: bool
    ) -> ContainerRun:
        return self.kubelet.log_source(namespace, pod, container, previous=previous)

    def open_exec(
        self, pod: dict[str, Any], container: str | None, argv: list[str], *, tty: bool
    ) -> Session:
        """A command to run in one of the pod's containers (``kubectl exec``)."""
        return self.exec_sessions.open(pod, container, argv, tty=tty)

    def container_running(self, pod: dict[str, Any], container: str | None) -> str | None:
        """The container a stream would reach when it is not running (None: it runs)."""
        spec = pod.get("spec") or {}
        name = container or str(((spec.get("containers") or [{}])[0]).get("name", ""))
        run = self.kubelet.runs.get(pod["metadata"].get("uid", ""))
        found = run.find(name) if run is not None else None
        return None if found is not None and found.state == "running" else name

    def open_attach(
        self, pod: dict[str, Any], container: str | None, *, stdin: bool
    ) -> AttachSession:
        """The running container's output from now on (``kubectl attach``)."""
        meta = pod["metadata"]
        run = self.kubelet.log_source(meta["namespace"], meta["name"], container, previous=False)
        return AttachSession(run, reads_stdin=stdin)

    def port_target(self, pod: dict[str, Any], port: int) -> PortTarget:
        """Where ``port-forward`` to one of the pod's ports goes."""
        uid = pod["metadata"].get("uid", "")
        run = self.kubelet.runs.get(uid)
        real = None
        if run is not None and any(
            self.kubelet.processes.runs_processes(self.images.lookup(c.spec.get("image", ""))[0])
            for c in run.main
        ):
            real = self.kubelet.processes.address(uid)
        found = port_answers.target(
            run, port, real, lambda container: self.exec_sessions.container_files(pod, container)
        )
        if found.wire == "redis":
            found = dataclasses.replace(
                found, data=self.exec_sessions.server_data.setdefault(uid, {})
            )
        return found

    def _page_status(
        self, run: PodRun, container: ContainerRun, port: int, path: str
    ) -> int | None:
        """What the container's server answers ``GET path`` on ``port`` from its files (an
        HTTP probe of nginx or httpd), read from the pod as it is now."""
        pod = self.store.get("pods", run.namespace, run.name)
        if pod is None or pod["metadata"].get("uid") != run.uid or container.state != "running":
            return None
        found = port_answers.target(
            run, port, None, lambda spec: self.exec_sessions.container_files(pod, spec)
        )
        return port_answers.page_status(found, path)

    def container_run(self, uid: str, container: str) -> ContainerRun | None:
        """A container's current run, whose environment and usage ``exec`` sees."""
        run = self.kubelet.runs.get(uid)
        return run.find(container) if run is not None else None

    def evict(self, namespace: str, pod: str, *, dry_run: bool = False) -> None:
        """The eviction subresource: refused with 429 when a disruption budget forbids it."""
        evict(self.ctx, namespace, pod, dry_run=dry_run)

    def after_write(self) -> None:
        """Let the controllers react to a write before the next request is served."""
        if self._settle_pending:
            return
        self._settle_pending = True
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._settle_after_write()
            return
        loop.call_soon(self._settle_after_write)

    def _settle_after_write(self) -> None:
        self._settle_pending = False
        if self.clock.mode == INSTANT:
            self.settle()
        else:
            self.reconcile()

    # ------------------------------------------------------------ driving

    def reconcile(self) -> int:
        """Run every controller until none changes anything; returns the rounds it took."""
        for rounds in range(1, MAX_ROUNDS + 1):
            before = self.store.resource_version
            for controller in self.controllers:
                controller.reconcile()
            if self.store.resource_version == before:
                return rounds
        return MAX_ROUNDS

    def settle(self, horizon: float | None = None) -> dict[str, Any]:
        """Instant mode: run to steady state, jumping the clock from timer to timer.

        Without a horizon the clock only moves as far as settling needs: to each timer that
        moves something along (a pull, a start, an exit, a first probe), up to
        ``SETTLE_HORIZON`` ahead, never for a steady wait (a crash loop's next restart, a pull
        retry, a failing probe's next try) alone. With a horizon, time passes: every timer
        due within it runs and the clock ends the horizon ahead. Either way a settle never
        ends inside a transient run (one its liveness probe will kill): a crash loop is always
        left in its back-off, so what a check reads does not depend on when it looked."""
        started = time.perf_counter()
        begin = self.clock.now()
        rounds = self.reconcile()
        timers = 0
        if self.clock.mode == INSTANT:
            if horizon is not None:
                end = begin + max(horizon, 0.0)
                timers, rounds = self._run_timers(
                    end, timers, rounds, needed_only=False, urgent=False
                )
                self.clock.advance_to(end)
                timers += self.clock.run_due()
                rounds += self.reconcile()
            limit = self.clock.now() + SETTLE_HORIZON
            timers, rounds = self._run_timers(limit, timers, rounds, needed_only=True, urgent=True)
            if self.clock.now() <= self._traffic_at:
                # Nothing moved the clock since the last window's log lines: let the traffic
                # take a moment, so lines written after a change are newer than those before
                # it (as on a cluster, where a client reading logs can tell them apart).
                self.clock.advance_to(self._traffic_at + TRAFFIC_STEP)
                timers += self.clock.run_due()
                rounds += self.reconcile()
            self._traffic_at = self.clock.now()
            self.traffic.tick(TRAFFIC_WINDOW)
        return {
            "mode": self.clock.mode,
            "virtual_seconds": round(self.clock.now() - begin, 3),
            "timers": timers,
            "rounds": rounds,
            "elapsed_ms": round((time.perf_counter() - started) * 1000, 3),
            "resource_version": self.store.resource_version,
        }

    def _run_timers(
        self, limit: float, timers: int, rounds: int, *, needed_only: bool, urgent: bool
    ) -> tuple[int, int]:
        """Jump from timer to timer up to ``limit``; then (``urgent``) on to each urgent timer
        (the end of a transient run), with ``SETTLE_HORIZON`` more for what follows it, within
        ``URGENT_REACH`` of where this began."""
        reach = self.clock.now() + URGENT_REACH
        while True:
            due = self.clock.next_due(needed_only=needed_only)
            if due is None or due > limit:
                pending = self.clock.next_urgent() if urgent else None
                if pending is None or pending > reach:
                    return timers, rounds
                due, limit = pending, max(limit, pending + SETTLE_HORIZON)
            self.clock.advance_to(due)
            timers += self.clock.run_due()
            rounds += self.reconcile()

    def pass_time(self, seconds: float) -> dict[str, Any]:
        """Let ``seconds`` of cluster time pass (instant mode: at once; timers due within run),
        then drop events older than the API server's event TTL, as a real one does. Used by
        a fault's ``wait`` step."""
        target = self.clock.now() + seconds
        result = self.settle(horizon=seconds)
        if self.clock.mode == INSTANT and self.clock.now() < target:
            self.clock.advance_to(target)
            self.reconcile()
        self.events.expire(self.clock.now() - EVENT_TTL)
        return result

    async def run_realtime(self, tick: float = 0.1, traffic_every: float = 1.0) -> None:
        """The demo's heartbeat: due timers, controllers, and a traffic tick every second."""
        last_traffic = time.monotonic()
        while True:
            self.clock.run_due()
            self.reconcile()
            if time.monotonic() - last_traffic >= traffic_every:
                self.traffic.tick(time.monotonic() - last_traffic)
                last_traffic = time.monotonic()
            await asyncio.sleep(tick)

    # ------------------------------------------------------------ apps

    def _bootstrap(self) -> None:
        for doc in load_manifests(APPS_DIR / "base"):
            self._create(doc)
        self.settle()  # kube-system's add-ons are running before the first request

    def _create(self, doc: dict[str, Any], *, applied: bool = False) -> None:
        rt = by_kind(doc["kind"])
        namespace = doc.get("metadata", {}).get("namespace", "") if rt.namespaced else ""
        if self.store.get(rt.key, namespace, doc["metadata"]["name"]) is not None:
            return
        if applied:
            doc = with_last_applied(doc)
        self.api.create(rt, namespace, doc)

    def install_app(self, app: str) -> list[str]:
        """Deploy a sample app's manifests (idempotent); returns its namespaces."""
        path = APPS_DIR / app
        if app == "base" or not path.is_dir():
            raise ApiError(
                404, "NotFound", f'unknown app "{app}"; available: {", ".join(available_apps())}'
            )
        documents = load_manifests(path)
        namespaces = sorted({d["metadata"]["name"] for d in documents if d["kind"] == "Namespace"})
        for doc in sorted(documents, key=lambda d: d["kind"] != "Namespace"):
            self._create(doc, applied=True)  # as `kubectl apply -f` deploys them
        if app not in self.installed_apps:
            self.installed_apps.append(app)
        self.settle()
        return namespaces

    def reset(self) -> None:
        """Back to a fresh cluster with the same apps installed."""
        apps = list(self.installed_apps)
        self.store.clear()
        self.clock.clear()
        self.kubelet.reset()
        self.ctx.layers.clear()
        self.traffic.reset()
        self.events.clear()
        self.scheduler.forget()
        self.installed_apps = []
        self._traffic_at = 0.0
        self._bootstrap()
        for app in apps:
            self.install_app(app)
