"""Synthetic request traffic through the sample apps' call graphs.

Each running container whose image calls other services sends requests to them. A call fails
when the service does not exist, has no ready endpoints, points its targetPort at a port the
backing container does not listen on, is blocked by a NetworkPolicy, rejects the caller's
credentials, or itself depends on something failing. Failures show up as ERROR lines in the
*callers'* logs — symptoms cascade as in real incidents — and in per-service counters.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from lab.controllers.containers import ContainerRun, PodRun
from lab.controllers.context import ControllerContext
from lab.controllers.kubelet import Kubelet
from lab.controllers.services import network_policy_allows
from lab.images import Call


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


@dataclass
class TrafficSimulator:
    ctx: ControllerContext
    kubelet: Kubelet
    counters: dict[tuple[str, str], ServiceCounters] = field(default_factory=dict)

    def reset(self) -> None:
        self.counters.clear()

    def _running(self, run: PodRun) -> list[ContainerRun]:
        return [
            c
            for c in run.main
            if c.state == "running" and not c.exiting and c.behaviour is not None
        ]

    def tick(self, seconds: float) -> None:
        serve_memo: dict[str, _Outcome] = {}
        runs_by_ip = {run.ip: run for run in self.kubelet.runs.values()}
        for service in self.ctx.store.iter_all("services"):
            if not (service.get("spec") or {}).get("selector"):
                continue  # endpoints kept by hand (the API server's own Service): not pods
            namespace = service["metadata"]["namespace"]
            name = service["metadata"]["name"]
            outcome, rps = self._service_outcome(
                None, namespace, name, None, runs_by_ip, serve_memo, set()
            )
            if rps <= 0:
                continue
            counters = self.counters.setdefault((namespace, name), ServiceCounters())
            counters.requests += rps * seconds
            counters.errors += rps * seconds * (1.0 - outcome.ok)
            counters.error_rate = 1.0 - outcome.ok
            if outcome.error:
                counters.last_error = outcome.error
        for run in self.kubelet.runs.values():
            for container in self._running(run):
                self._log_calls(run, container, runs_by_ip, serve_memo)

    def _log_calls(
        self,
        run: PodRun,
        container: ContainerRun,
        runs_by_ip: dict[str, PodRun],
        memo: dict[str, _Outcome],
    ) -> None:
        assert container.behaviour is not None
        caller = self.ctx.store.get("pods", run.namespace, run.name)
        for call in container.behaviour.calls:
            outcome, _ = self._service_outcome(
                caller, run.namespace, call.service, call, runs_by_ip, memo, {run.uid}, container
            )
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
    ) -> tuple[_Outcome, float]:
        """How requests to a service fare (and the load it gets when called from outside)."""
        service = self.ctx.store.get("services", namespace, service_name)
        port = call.port if call else None
        if service is None:
            return _Outcome(
                0.0, f"dial tcp: lookup {service_name} on 10.96.0.10:53: no such host"
            ), 0.0
        ports = service["spec"].get("ports") or []
        service_port = (
            next((p for p in ports if p.get("port") == port), None)
            if port
            else (ports[0] if ports else None)
        )
        if service_port is None:
            return _Outcome(
                0.0,
                f"dial tcp {service['spec'].get('clusterIP')}:{port}: connect: connection refused",
            ), 0.0
        endpoints = self.ctx.store.get("endpoints", namespace, service_name)
        backends: list[tuple[str, int]] = []
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
            backends.extend((a["ip"], subset_port) for a in subset.get("addresses") or [])
        runs = [(runs_by_ip.get(ip), target) for ip, target in backends]
        live = [(run, target) for run, target in runs if run is not None]
        rps = max(
            (c.behaviour.rps for run, _ in live for c in self._running(run) if c.behaviour),
            default=10.0,
        )
        if not live:
            return _Outcome(
                0.0, f"no healthy upstream: service {service_name} has no ready endpoints"
            ), rps
        total = 0.0
        error = ""
        for run, target in live:
            outcome = self._backend_outcome(
                caller, run, target, call, caller_container, runs_by_ip, memo, visiting
            )
            total += outcome.ok
            error = error or outcome.error
        return _Outcome(total / len(live), error), rps

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
    ) -> _Outcome:
        address = f"{run.ip}:{target_port}"
        server = next(
            (c for c in self._running(run) if c.behaviour and target_port in c.listens),
            None,
        )
        if server is None:
            return _Outcome(0.0, f"dial tcp {address}: connect: connection refused")
        callee = self.ctx.store.get("pods", run.namespace, run.name)
        if (
            callee is not None
            and caller is not None
            and not network_policy_allows(self.ctx, caller, callee, target_port)
        ):
            return _Outcome(0.0, f"dial tcp {address}: i/o timeout")
        auth = server.behaviour.auth if server.behaviour else None
        if auth is not None and call is not None and caller_container is not None:
            presented = (
                caller_container.env.get(call.user_env or ""),
                caller_container.env.get(call.password_env or ""),
            )
            expected = (server.env.get(auth.user_env), server.env.get(auth.password_env))
            if presented != expected:
                return _Outcome(
                    0.0, "server returned error on SASL authentication step: Authentication failed."
                )
        return self._serve(run, server, runs_by_ip, memo, visiting)

    def _serve(
        self,
        run: PodRun,
        server: ContainerRun,
        runs_by_ip: dict[str, PodRun],
        memo: dict[str, _Outcome],
        visiting: set[str],
    ) -> _Outcome:
        """Whether a backend can answer: all of its own dependencies must answer too."""
        key = f"{run.uid}/{server.name}"
        if key in memo:
            return memo[key]
        if key in visiting:
            return _Outcome(1.0)
        assert server.behaviour is not None
        caller = self.ctx.store.get("pods", run.namespace, run.name)
        ok = 1.0
        error = ""
        for call in server.behaviour.calls:
            outcome, _ = self._service_outcome(
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
            if outcome.ok < 1.0 and not error:
                error = f"upstream {call.service} failed: {outcome.error}"
        memo[key] = _Outcome(ok, error)
        return memo[key]

    def report(self, namespace: str) -> dict[str, Any]:
        return {
            name: counters.to_dict()
            for (ns, name), counters in sorted(self.counters.items())
            if ns == namespace
        }
