"""The lab's own HTTP endpoints under ``/lab/v1`` (not part of the Kubernetes API).

They let the CLI and the tests drive the sandbox: settle the cluster, install apps, inject
faults and scenarios, check oracles, read traffic counters, configure RBAC denials, read the
audit log of writes and reset.
"""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

from aiohttp import web

from lab import oracle, scenarios
from lab.cluster.api import Denial
from lab.cluster.errors import ApiError
from lab.cluster_sim import Cluster, available_apps

JSON = "application/json"


def _ok(body: Any, status: int = 200) -> web.Response:
    return web.Response(text=json.dumps(body), status=status, content_type=JSON)


def _fail(status: int, message: str) -> web.Response:
    return _ok({"error": message}, status)


async def _json_body(request: web.Request) -> dict[str, Any]:
    raw = await request.read()
    if not raw.strip():
        return {}
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise web.HTTPBadRequest(
            text=json.dumps({"error": f"invalid JSON: {exc}"}), content_type=JSON
        ) from exc
    if not isinstance(body, dict):
        raise web.HTTPBadRequest(
            text=json.dumps({"error": "expected a JSON object"}), content_type=JSON
        )
    return body


class LabControl:
    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.baselines: dict[str, dict[str, Any]] = {}
        self.injected: dict[str, scenarios.Scenario] = {}  # as injected (maybe from a client)

    async def info(self, request: web.Request) -> web.Response:
        return _ok(
            {
                "mode": self.cluster.clock.mode,
                "now": self.cluster.clock.timestamp(),
                "apps": self.cluster.installed_apps,
                "available_apps": available_apps(),
                "resource_version": self.cluster.store.resource_version,
            }
        )

    async def settle(self, request: web.Request) -> web.Response:
        body = await _json_body(request)
        horizon = body.get("horizon")
        return _ok(self.cluster.settle(None if horizon is None else float(horizon)))

    async def install(self, request: web.Request) -> web.Response:
        try:
            namespaces = self.cluster.install_app(request.match_info["app"])
        except ApiError as error:
            return _fail(error.code, error.message)
        return _ok({"app": request.match_info["app"], "namespaces": namespaces})

    async def reset(self, request: web.Request) -> web.Response:
        self.cluster.reset()
        self.baselines.clear()
        self.injected.clear()
        return _ok({"apps": self.cluster.installed_apps})

    async def traffic(self, request: web.Request) -> web.Response:
        return _ok(self.cluster.traffic.report(request.match_info["namespace"]))

    async def list_scenarios(self, request: web.Request) -> web.Response:
        try:
            found = scenarios.list_scenarios()
        except scenarios.ScenarioError as error:
            return _fail(500, str(error))
        return _ok(
            [
                {
                    "name": s.name,
                    "app": s.app,
                    "namespace": s.namespace,
                    "description": s.description,
                    "faults": [f.fault for f in s.faults],
                    "category": s.root_cause.category if s.root_cause else "none",
                }
                for s in found
            ]
        )

    async def list_faults(self, request: web.Request) -> web.Response:
        return _ok(
            [
                {
                    "name": f.name,
                    "description": f.description,
                    "category": f.category,
                    "params": {k: asdict_param(v) for k, v in f.params.items()},
                }
                for f in scenarios.list_faults()
            ]
        )

    async def inject_scenario(self, request: web.Request) -> web.Response:
        body = await _json_body(request)
        try:
            if body.get("scenario"):  # a scenario from the client's own directory
                scenario, faults = scenarios.from_request(body)
                if scenario.name != request.match_info["name"]:
                    return _fail(400, "the scenario in the body does not match the path")
            else:
                scenario = scenarios.load_scenario(request.match_info["name"])
                faults = {u.fault: scenarios.load_fault(u.fault) for u in scenario.faults}
            if scenario.app not in self.cluster.installed_apps:
                self.cluster.install_app(scenario.app)
            self.cluster.settle()
            self.baselines[scenario.name] = oracle.baseline(self.cluster.store, scenario.namespace)
            applied: list[str] = []
            self.injected[scenario.name] = scenario
            for use in scenario.faults:
                applied += scenarios.apply_fault(
                    self.cluster.api,
                    faults[use.fault],
                    scenario.namespace,
                    use.params,
                    self.cluster.clock.timestamp(),
                    self.cluster.settle,
                    self.cluster.pass_time,
                )
        except scenarios.ScenarioError as error:
            return _fail(400, str(error))
        self.cluster.settle()
        return _ok({"scenario": scenario.name, "namespace": scenario.namespace, "applied": applied})

    async def inject_fault(self, request: web.Request) -> web.Response:
        body = await _json_body(request)
        namespace = body.get("namespace")
        if not namespace:
            return _fail(400, "a fault needs a namespace")
        try:
            if body.get("fault"):  # a fault from the client's own directory
                try:
                    fault = scenarios.Fault.model_validate(body["fault"])
                except ValueError as exc:
                    raise scenarios.ScenarioError(f"invalid fault in the request: {exc}") from exc
            else:
                fault = scenarios.load_fault(request.match_info["name"])
            applied = scenarios.apply_fault(
                self.cluster.api,
                fault,
                namespace,
                dict(body.get("params") or {}),
                self.cluster.clock.timestamp(),
                self.cluster.settle,
                self.cluster.pass_time,
            )
        except scenarios.ScenarioError as error:
            return _fail(400, str(error))
        self.cluster.settle()
        return _ok({"fault": fault.name, "namespace": namespace, "applied": applied})

    async def check(self, request: web.Request) -> web.Response:
        name = request.match_info["name"]
        try:
            scenario = self.injected.get(name) or scenarios.load_scenario(name)
        except scenarios.ScenarioError as error:
            return _fail(404, str(error))
        before = self.baselines.get(scenario.name)
        if before is None:
            return _fail(
                409,
                f"scenario {scenario.name} was not injected into this lab; run "
                f"'stratus lab inject {scenario.name}' first",
            )
        self.cluster.settle()
        try:
            verdict = oracle.evaluate(
                self.cluster.store,
                self.cluster.traffic.report(scenario.namespace),
                scenario,
                before,
            )
        except oracle.OracleError as error:
            return _fail(422, f"scenario {scenario.name}: {error}")
        return _ok(verdict.to_dict())

    async def set_denials(self, request: web.Request) -> web.Response:
        body = await _json_body(request)
        try:
            denials = [Denial(**d) for d in body.get("denials") or []]
        except TypeError as exc:
            return _fail(400, f"invalid denial: {exc}")
        self.cluster.api.denials = denials
        return _ok({"denials": [asdict(d) for d in denials]})

    async def audit(self, request: web.Request) -> web.Response:
        """The lab's audit log of writes (``lab.cluster.audit``), oldest first."""
        return _ok({"kind": "EventList", "items": self.cluster.api.audit.events()})


def asdict_param(param: scenarios.Param) -> dict[str, Any]:
    return param.model_dump()


def control_routes(cluster: Cluster) -> list[web.RouteDef]:
    control = LabControl(cluster)
    return [
        web.get("/lab/v1/info", control.info),
        web.post("/lab/v1/settle", control.settle),
        web.post("/lab/v1/reset", control.reset),
        web.post("/lab/v1/apps/{app}", control.install),
        web.get("/lab/v1/namespaces/{namespace}/traffic", control.traffic),
        web.get("/lab/v1/scenarios", control.list_scenarios),
        web.get("/lab/v1/faults", control.list_faults),
        web.post("/lab/v1/scenarios/{name}/inject", control.inject_scenario),
        web.post("/lab/v1/faults/{name}/inject", control.inject_fault),
        web.get("/lab/v1/scenarios/{name}/check", control.check),
        web.put("/lab/v1/rbac/denials", control.set_denials),
        web.get("/lab/v1/audit", control.audit),
    ]
