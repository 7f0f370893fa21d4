"""Synthetic request traffic through the sample apps' call graphs.

Each running container whose image calls other services sends requests to them. A call fails
when the service does not exist, has no ready endpoints, points its targetPort at a port the
backing container does not listen on, is blocked by a NetworkPolicy, rejects the caller's
credentials, or itself depends on something failing. Failures show up as ERROR lines in the
*callers'* logs — symptoms cascade as in real incidents — and in per-service counters.

Each answer also has a status code and a latency: a server takes its image's base latency
(stretched by CPU throttling, ``usage.throttle_factor``) plus what its own calls take; a
dropped packet costs the caller its timeout (504), a refused connection or a Service
without endpoints fails fast (503), rejected credentials answer 401, and a server whose
dependency fails answers 500. These land in per-pod request metrics (``request_metrics``),
which ``lab/metrics`` exposes as each app's ``/metrics`` would.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lab.cluster.resources import by_kind
from lab.controllers import usage
from lab.controllers.containers import ContainerRun, PodRun
from lab.controllers.context import ControllerContext
from lab.controllers.kubelet import Kubelet
from lab.controllers.request_metrics import PodRequests, service_label
from lab.controllers.services import dns_allowed, network_policy_allows
from lab.images import Call

CLIENT_TIMEOUT = 1.0  # seconds a caller waits for an answer that never comes
FAST_FAILURE = 0.001  # seconds to learn that nobody listens


@dataclass
class ServiceCounters:
    requests: float = 0.0
    errors: float = 0.0
    error_rate: float = 0.0
    last_error: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {
            "requests": int(self.requests),
            "errors": int(self.errors),
            "error_rate": round(self.error_rate, 4),
            "last_error": self.last_error,
        }


@dataclass
class _Outcome:
    ok: float  # fraction of requests that succeed
    error: str = ""
    code: str = "200"  # the status the failing fraction sees
    latency: float = 0.0  # mean seconds until the caller has its answer


@dataclass
class _Backend:
    """One endpoint a Service request may land on, and how it fares there."""

    run: PodRun
    outcome: _Outcome
    served: bool  # the request reached the server process (it counts it)


def _failed(error: str, code: str, latency: float = FAST_FAILURE) -> _Outcome:
    return _Outcome(0.0, error, code, latency)


ENTRY_ANNOTATION = "lab.stratus.dev/external-traffic"


def is_entry(service: dict[str, Any]) -> bool:
    """Whether clients outside the cluster call this Service."""
    annotations = (service.get("metadata") or {}).get("annotations") or {}
    if annotations.get(ENTRY_ANNOTATION) in ("true", "false"):
        return bool(annotations[ENTRY_ANNOTATION] == "true")
    return (service.get("spec") or {}).get("type") in ("NodePort", "LoadBalancer")


@dataclass
class _Window:
    requests: float = 0.0
    errors: float = 0.0
    last_error: str = ""

    def add(self, requests: float, outcome: _Outcome) -> None:
        self.requests += requests
        self.errors += requests * (1.0 - outcome.ok)
        if outcome.error and outcome.ok < 1.0:
            self.last_error = outcome.error


@dataclass
class TrafficSimulator:
    ctx: ControllerContext
    kubelet: Kubelet
    counters: dict[tuple[str, str], ServiceCounters] = field(default_factory=dict)
    pods: dict[str, PodRequests] = field(default_factory=dict)  # by pod uid

    def reset(self) -> None:
        self.counters.clear()
        self.pods.clear()

    def _running(self, run: PodRun) -> list[ContainerRun]:
        return [
            c
            for c in run.main
            if c.state == "running" and not c.exiting and c.behaviour is not None
        ]

    def tick(self, seconds: float) -> None:
        """One window of traffic: outside clients call the entry Services (type NodePort or
        LoadBalancer, or annotated ``lab.stratus.dev/external-traffic: "true"``), every running
        container calls what its image calls, and each Service's counters add what it was
        asked in this window. A Service nobody called in the window fails nothing."""
        serve_memo: dict[str, _Outcome] = {}
        runs_by_ip = {run.ip: run for run in self.kubelet.runs.values()}
        window: dict[tuple[str, str], _Window] = {}
        self._sync_pods()
        for service in self.ctx.store.iter_all("services"):
            if not (service.get("spec") or {}).get("selector") or not is_entry(service):
                continue  # endpoints kept by hand, or nobody outside calls it
            namespace = service["metadata"]["namespace"]
            name = service["metadata"]["name"]
            outcome, rps, backends = self._service_outcome(
                None, namespace, name, None, runs_by_ip, serve_memo, set()
            )
            if rps > 0:
                window.setdefault((namespace, name), _Window()).add(rps * seconds, outcome)
                self._count_served(name, backends, rps * seconds)
        for run in self.kubelet.runs.values():
            for container in self._running(run):
                self._log_calls(run, container, runs_by_ip, serve_memo, window, seconds)
        for key, counters in self.counters.items():
            if key not in window:
                counters.error_rate = 0.0
        for key, seen in window.items():
            counters = self.counters.setdefault(key, ServiceCounters())
            counters.requests += seen.requests
            counters.errors += seen.errors
            counters.error_rate = seen.errors / seen.requests if seen.requests else 0.0
            if seen.last_error:
                counters.last_error = seen.last_error

    def _log_calls(
        self,
        run: PodRun,
        container: ContainerRun,
        runs_by_ip: dict[str, PodRun],
        memo: dict[str, _Outcome],
        window: dict[tuple[str, str], _Window],
        seconds: float,
    ) -> None:
        assert container.behaviour is not None
        caller = self.ctx.store.get("pods", run.namespace, run.name)
        metrics = self.pods.get(run.uid)
        for call in [c.resolved(container.env) for c in container.behaviour.calls]:
            outcome, _, backends = self._service_outcome(
                caller, run.namespace, call.service, call, runs_by_ip, memo, {run.uid}, container
            )
            requests = container.behaviour.rps * seconds
            window.setdefault((run.namespace, call.service), _Window()).add(requests, outcome)
            self._count_served(call.service, backends, requests)
            if metrics is not None:
                metrics.called(call.service, "200", requests * outcome.ok)
                metrics.called(call.service, outcome.code, requests * (1.0 - outcome.ok))
            if outcome.ok < 1.0:
                self.kubelet.append_log(
                    run,
                    container,
                    "ERROR",
                    f"request to {call.service}:{call.port} failed: {outcome.error}",
                )
            else:
                self.kubelet.append_log(
                    run, container, "INFO", f"request to {call.service}:{call.port} ok"
                )

    def _sync_pods(self) -> None:
        """One request-metrics record per pod the kubelet runs, labelled with its Service."""
        services: dict[str, list[dict[str, Any]]] = {}
        for service in sorted(
            self.ctx.store.iter_all("services"), key=lambda s: s["metadata"]["name"]
        ):
            services.setdefault(service["metadata"]["namespace"], []).append(service)
        owners: dict[str, dict[tuple[str, str], str]] = {}
        for rs in self.ctx.store.iter_all(by_kind("ReplicaSet").key):
            for ref in rs["metadata"].get("ownerReferences") or []:
                if ref.get("controller"):
                    owners.setdefault(rs["metadata"]["namespace"], {})[
                        ("ReplicaSet", rs["metadata"]["name"])
                    ] = ref.get("name", "")
        for uid in [uid for uid in self.pods if uid not in self.kubelet.runs]:
            del self.pods[uid]
        for uid, run in self.kubelet.runs.items():
            pod = self.ctx.store.get("pods", run.namespace, run.name)
            if pod is None:
                continue
            label = service_label(
                pod, services.get(run.namespace, []), owners.get(run.namespace, {})
            )
            metrics = self.pods.get(uid)
            if metrics is None:
                self.pods[uid] = PodRequests(run.namespace, run.name, label)
            else:
                metrics.service = label

    def _count_served(self, service: str, backends: list[_Backend], requests: float) -> None:
        """Server side: each backend that got its share of the requests counts its answers."""
        if not backends:
            return
        share = requests / len(backends)
        for backend in backends:
            metrics = self.pods.get(backend.run.uid)
            if not backend.served or metrics is None:
                continue
            series = metrics.served(service)
            outcome = backend.outcome
            series.observe(share * outcome.ok, "200", outcome.latency)
            series.observe(share * (1.0 - outcome.ok), outcome.code, outcome.latency)

    def _service_outcome(
        self,
        caller: dict[str, Any] | None,
        namespace: str,
        service_name: str,
        call: Call | None,
        runs_by_ip: dict[str, PodRun],
        memo: dict[str, _Outcome],
        visiting: set[str],
        caller_container: ContainerRun | None = None,
    ) -> tuple[_Outcome, float, list[_Backend]]:
        """How requests to a service fare, the load it gets when called from outside, and
        how they fare on each backend."""
        service = self.ctx.store.get("services", namespace, service_name)
        port = call.port if call else None
        if caller is not None and not dns_allowed(self.ctx, caller):
            # An egress lockdown that forgot DNS: the name never resolves, after a wait.
            ip = (caller.get("status") or {}).get("podIP", "")
            return (
                _failed(
                    f"dial tcp: lookup {service_name} on 10.96.0.10:53: read udp "
                    f"{ip}:53211->10.96.0.10:53: i/o timeout",
                    "504",
                    CLIENT_TIMEOUT,
                ),
                0.0,
                [],
            )
        if service is None:
            return (
                _failed(f"dial tcp: lookup {service_name} on 10.96.0.10:53: no such host", "503"),
                0.0,
                [],
            )
        if service["spec"].get("clusterIP") == "None":
            return self._headless_outcome(
                caller, service, call, runs_by_ip, memo, visiting, caller_container
            )
        # Callers speak TCP: a UDP or SCTP port in front of a TCP server answers nothing.
        ports = [p for p in service["spec"].get("ports") or [] if p.get("protocol", "TCP") == "TCP"]
        service_port = (
            next((p for p in ports if p.get("port") == port), None)
            if port
            else (ports[0] if ports else None)
        )
        if service_port is None:
            declared: list[dict[str, Any]] = service["spec"].get("ports") or [{}]
            port = port or declared[0].get("port")
            return (
                _failed(
                    f"dial tcp {service['spec'].get('clusterIP')}:{port}: connect: "
                    "connection refused",
                    "503",
                ),
                (10.0 if call is None and port else 0.0),  # outside clients still try it
                [],
            )
        endpoints = self.ctx.store.get("endpoints", namespace, service_name)
        addresses: list[tuple[str, int]] = []
        for subset in (endpoints or {}).get("subsets") or []:
            subset_port = next(
                (
                    p["port"]
                    for p in subset.get("ports") or []
                    if p.get("name", "") == service_port.get("name", "")
                ),
                None,
            )
            if subset_port is None:
                continue
            addresses.extend((a["ip"], subset_port) for a in subset.get("addresses") or [])
        runs = [(runs_by_ip.get(ip), target) for ip, target in addresses]
        live = [(run, target) for run, target in runs if run is not None]
        rps = max(
            (c.behaviour.rps for run, _ in live for c in self._running(run) if c.behaviour),
            default=10.0,
        )
        if not live:
            return (
                _failed(
                    f"no healthy upstream: service {service_name} has no ready endpoints", "503"
                ),
                rps,
                [],
            )
        backends = [
            self._backend_outcome(
                caller, run, target, call, caller_container, runs_by_ip, memo, visiting
            )
            for run, target in live
        ]
        ok = sum(b.outcome.ok for b in backends) / len(backends)
        error = next((b.outcome.error for b in backends if b.outcome.error), "")
        code = next((b.outcome.code for b in backends if b.outcome.ok < 1.0), "200")
        latency = sum(b.outcome.latency for b in backends) / len(backends)
        return _Outcome(ok, error, code, latency), rps, backends

    def _headless_outcome(
        self,
        caller: dict[str, Any] | None,
        service: dict[str, Any],
        call: Call | None,
        runs_by_ip: dict[str, PodRun],
        memo: dict[str, _Outcome],
        visiting: set[str],
        caller_container: ContainerRun | None,
    ) -> tuple[_Outcome, float, list[_Backend]]:
        """A headless Service (``clusterIP: None``) is only a DNS name: it resolves to the
        ready pods' addresses — to nothing at all when none is ready — and the client connects
        to each pod on the port it dialed, since no proxy maps ``port`` to ``targetPort``."""
        namespace, name = service["metadata"]["namespace"], service["metadata"]["name"]
        declared: list[dict[str, Any]] = service["spec"].get("ports") or [{}]
        port = call.port if call else declared[0].get("port")
        endpoints = self.ctx.store.get("endpoints", namespace, name)
        ips = [
            a["ip"]
            for subset in (endpoints or {}).get("subsets") or []
            for a in subset.get("addresses") or []
        ]
        live = [run for ip in dict.fromkeys(ips) if (run := runs_by_ip.get(ip)) is not None]
        if not live or port is None:
            return (
                _failed(f"dial tcp: lookup {name} on 10.96.0.10:53: no such host", "503"),
                10.0 if call is None else 0.0,
                [],
            )
        backends = [
            self._backend_outcome(
                caller, run, int(port), call, caller_container, runs_by_ip, memo, visiting
            )
            for run in live
        ]
        rps = max(
            (c.behaviour.rps for run in live for c in self._running(run) if c.behaviour),
            default=10.0,
        )
        ok = sum(b.outcome.ok for b in backends) / len(backends)
        error = next((b.outcome.error for b in backends if b.outcome.error), "")
        code = next((b.outcome.code for b in backends if b.outcome.ok < 1.0), "200")
        latency = sum(b.outcome.latency for b in backends) / len(backends)
        return _Outcome(ok, error, code, latency), rps, backends

    def _backend_outcome(
        self,
        caller: dict[str, Any] | None,
        run: PodRun,
        target_port: int,
        call: Call | None,
        caller_container: ContainerRun | None,
        runs_by_ip: dict[str, PodRun],
        memo: dict[str, _Outcome],
        visiting: set[str],
    ) -> _Backend:
        address = f"{run.ip}:{target_port}"
        server = next(
            (c for c in self._running(run) if c.behaviour and target_port in c.listens),
            None,
        )
        if server is None:
            return _Backend(
                run, _failed(f"dial tcp {address}: connect: connection refused", "503"), False
            )
        callee = self.ctx.store.get("pods", run.namespace, run.name)
        if (
            callee is not None
            and caller is not None
            and not network_policy_allows(self.ctx, caller, callee, target_port)
        ):
            # The packets are dropped: the caller waits out its timeout.
            return _Backend(
                run, _failed(f"dial tcp {address}: i/o timeout", "504", CLIENT_TIMEOUT), False
            )
        assert server.behaviour is not None
        auth = server.behaviour.auth
        if auth is not None and call is not None and caller_container is not None:
            presented = (
                caller_container.env.get(call.user_env or ""),
                caller_container.env.get(call.password_env or ""),
            )
            expected = (server.env.get(auth.user_env), server.env.get(auth.password_env))
            if presented != expected:
                return _Backend(
                    run,
                    _failed(
                        "server returned error on SASL authentication step: Authentication failed.",
                        "401",
                        self._own_latency(server),
                    ),
                    True,
                )
        return _Backend(run, self._serve(run, server, runs_by_ip, memo, visiting), True)

    @staticmethod
    def _own_latency(server: ContainerRun) -> float:
        base = (server.behaviour.latency_ms if server.behaviour else 0.0) / 1000.0
        return base * usage.throttle_factor(server)

    def _serve(
        self,
        run: PodRun,
        server: ContainerRun,
        runs_by_ip: dict[str, PodRun],
        memo: dict[str, _Outcome],
        visiting: set[str],
    ) -> _Outcome:
        """Whether a backend can answer: all of its own dependencies must answer too; it
        takes its own time plus theirs (it calls them one after the other)."""
        key = f"{run.uid}/{server.name}"
        if key in memo:
            return memo[key]
        if key in visiting:
            return _Outcome(1.0)
        assert server.behaviour is not None
        caller = self.ctx.store.get("pods", run.namespace, run.name)
        ok = 1.0
        error = ""
        latency = self._own_latency(server)
        for call in [c.resolved(server.env) for c in server.behaviour.calls]:
            outcome, _, _ = self._service_outcome(
                caller,
                run.namespace,
                call.service,
                call,
                runs_by_ip,
                memo,
                visiting | {key},
                server,
            )
            ok *= outcome.ok
            latency += outcome.latency
            if outcome.ok < 1.0 and not error:
                error = f"upstream {call.service} failed: {outcome.error}"
        memo[key] = _Outcome(ok, error, "500" if ok < 1.0 else "200", latency)
        return memo[key]

    def report(self, namespace: str) -> dict[str, Any]:
        return {
            name: counters.to_dict()
            for (ns, name), counters in sorted(self.counters.items())
            if ns == namespace
        }
