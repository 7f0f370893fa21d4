"""The MCP server: read tools over the planners' bounded read layer, the action catalog, and
write tools that only propose.

Each tool parses its call, authenticates the client (again on every call: a token removed from
the clients file stops working at once), calls the layers below once and renders the result.
There is no approve, reject or force tool, and no tool writes anything except through a
proposal that the policy and, where it asks, a human decide in Slack. Rules — limits,
repeats, schema checks, whose proposal it is — live in ``proposals.intake`` and
``policies.clients``; the wait and its progress notifications are rendering.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

import anyio
from mcp.server.context import CallNext, HandlerResult, ServerRequestContext
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp_types import ListToolsResult

from agents import health
from gateway import render, text
from incidents import continuation
from incidents.repository import IncidentRepository
from incidents.workflow import IncidentWorkflow
from policies.clients import Client, Registry
from proposals import intake
from proposals.intake import Ask, Quota
from proposals.model import Proposal, ProposalState
from proposals.service import ProposalService
from store.errors import StratusError
from tools import schemas
from tools.actions import CATALOG
from tools.k8s import KubeClient
from tools.reads import ClusterReader

T = TypeVar("T")
POLL_SECONDS = 0.5
TURN_POLL_SECONDS = 0.05
MAX_WAIT_SECONDS = 3600.0
READ_TOOLS = (
    "whoami",
    "list_namespaces",
    "workloads",
    "pod_status",
    "events",
    "logs",
    "endpoints",
    "rollout_history",
    "recent_changes",
    "health_score",
    "open_incidents",
    "my_proposals",
    "list_actions",
    "get_proposal",
    "wait_for_decision",
)
WRITE_TOOLS = ("propose_action", "request_undo")


@dataclass
class Gateway:
    """What the tools work with. ``token``: the stdio process's own token (its client), None
    over HTTP, where every request carries its own."""

    service: ProposalService
    kube: KubeClient
    registry: Registry
    token: str | None = None
    read_only: bool = False
    # The incident workflow: a proposal with no open incident opens one, whose attempt is
    # verified and undone when worse (docs/mcp.md). None: it joins open incidents only.
    workflow: IncidentWorkflow | None = None
    # How a client's turn is held (``proposals.intake.TurnConfig``), and the asks waiting
    # for one in this process: at most one per client (``intake.Waiting``).
    turns: intake.TurnConfig = intake.TURNS
    waiting: intake.Waiting = field(default_factory=intake.Waiting)

    @property
    def reader(self) -> ClusterReader:
        return ClusterReader(self.kube)

    def client(self, ctx: Context | None) -> Client:
        return self.client_of(ctx.headers if ctx is not None else None)

    def client_of(self, headers: Any) -> Client:
        token = self.token
        if token is None and headers is not None:
            token = bearer(headers.get("authorization", ""))
        try:
            return self.registry.authenticate(token)
        except StratusError as exc:
            raise ToolError(text.refused(exc)) from exc


def bearer(header: str) -> str | None:
    scheme, _, value = header.partition(" ")
    return value.strip() or None if scheme.lower() == "bearer" else None


async def _run(func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
    """A blocking call of the layers below, in a worker thread; their errors as tool errors."""
    try:
        return await anyio.to_thread.run_sync(functools.partial(func, *args, **kwargs))
    except StratusError as exc:
        raise ToolError(text.refused(exc)) from exc


async def _in_turn(gateway: Gateway, ctx: Context, client: Client, ask: Callable[..., T]) -> T:
    """Run a client's ask in its turn without a worker thread held while it waits: the turn is
    polled here, on the event loop, and ``ask`` runs in a thread once it is held (given it as
    ``held``; it renews it there). One waiting ask per client: another is refused at once
    (``intake.Waiting``), as is one whose wait outlasts the turn's ``wait``."""
    service = gateway.service
    lease = intake.new_turn(client.requester, gateway.turns)
    try:
        with gateway.waiting.one(client.requester):
            deadline = time.monotonic() + gateway.turns.wait
            while not await _run(service.take_turn, lease):
                if time.monotonic() >= deadline:
                    raise intake.one_at_a_time()
                await anyio.sleep(TURN_POLL_SECONDS)
                gateway.client(ctx)  # a token revoked while waiting ends the wait
    except StratusError as exc:
        raise ToolError(text.refused(exc)) from exc
    try:
        return await _run(ask, held=lease)
    finally:
        with anyio.CancelScope(shield=True):
            await _run(service.give_back, lease)


class ListingFor:
    """Middleware: a client with read tools only is not shown the write tools (over HTTP the
    one server answers every client; its calls would be refused anyway)."""

    def __init__(self, gateway: Gateway) -> None:
        self.gateway = gateway

    async def __call__(
        self, ctx: ServerRequestContext[Any, Any], call_next: CallNext
    ) -> HandlerResult:
        result = await call_next(ctx)
        if ctx.method != "tools/list" or not isinstance(result, dict | ListToolsResult):
            return result
        try:
            client = self.gateway.client_of(getattr(ctx.request, "headers", None))
        except ToolError:
            return result  # refused at its next call
        if client.may_propose:
            return result
        if isinstance(result, ListToolsResult):
            kept = [t for t in result.tools if t.name not in WRITE_TOOLS]
            return result.model_copy(update={"tools": kept})
        tools = [t for t in result.get("tools", []) if t.get("name") not in WRITE_TOOLS]
        return {**result, "tools": tools}


def quota(client: Client) -> Quota:
    return Quota(
        client.limits.proposals_per_minute,
        client.limits.open_proposals,
        client.irreversible,
        client.token_sha256,
        nodes=client.nodes,
    )


def build(gateway: Gateway) -> MCPServer:
    """The server with every tool (without the write tools when ``read_only``)."""
    # WARNING: the SDK sets up logging when nothing did (stdio), and must not chatter on stderr.
    server: MCPServer = MCPServer(
        "stratus",
        instructions=text.INSTRUCTIONS,
        log_level="WARNING",
        middleware=[ListingFor(gateway)],
    )
    service = gateway.service

    async def read(ctx: Context, name: str, func: Callable[..., Any], *args: Any) -> str:
        gateway.client(ctx)
        return render.untrusted(name, await _run(func, *args))

    @server.tool(description=text.TOOLS["whoami"])
    async def whoami(ctx: Context) -> dict[str, Any]:
        client = gateway.client(ctx)
        writes = client.may_propose and not gateway.read_only
        return {
            "requester": client.requester,
            "tools": "all" if writes else "read",
            "limits": client.limits.model_dump(),
            "irreversible_actions": client.irreversible,
            "node_actions": client.nodes,
        }

    @server.tool(description=text.TOOLS["list_namespaces"])
    async def list_namespaces(ctx: Context) -> str:
        return await read(ctx, "list_namespaces", gateway.reader.namespaces)

    @server.tool(description=text.TOOLS["workloads"])
    async def workloads(namespace: str, ctx: Context) -> str:
        return await read(ctx, "workloads", gateway.reader.workload_health, namespace)

    @server.tool(description=text.TOOLS["pod_status"])
    async def pod_status(namespace: str, pod: str, ctx: Context) -> str:
        return await read(ctx, "pod_status", gateway.reader.pod_status, namespace, pod)

    @server.tool(description=text.TOOLS["events"])
    async def events(namespace: str, ctx: Context, object_name: str = "") -> str:
        reader = gateway.reader
        return await read(
            ctx,
            "events",
            functools.partial(reader.events, object_name=object_name or None),
            namespace,
        )

    @server.tool(description=text.TOOLS["logs"])
    async def logs(
        namespace: str, pod: str, ctx: Context, container: str = "", previous: bool = False
    ) -> str:
        reader = gateway.reader
        tail = functools.partial(
            reader.logs, container=container or None, tail=100, previous=previous
        )
        return await read(ctx, "logs", tail, namespace, pod)

    @server.tool(description=text.TOOLS["endpoints"])
    async def endpoints(namespace: str, service_name: str, ctx: Context) -> str:
        return await read(ctx, "endpoints", gateway.reader.service_check, namespace, service_name)

    @server.tool(description=text.TOOLS["rollout_history"])
    async def rollout_history(namespace: str, deployment: str, ctx: Context) -> str:
        found = gateway.reader.rollout_history
        return await read(ctx, "rollout_history", found, namespace, deployment)

    @server.tool(description=text.TOOLS["recent_changes"])
    async def recent_changes(namespace: str, deployment: str, ctx: Context) -> str:
        found = gateway.reader.recent_changes
        return await read(ctx, "recent_changes", found, namespace, deployment)

    @server.tool(description=text.TOOLS["health_score"])
    async def health_score(namespace: str, ctx: Context) -> str:
        def scored() -> dict[str, Any]:
            return health.score(health.collect(gateway.kube, namespace)).to_dict()

        return await read(ctx, "health_score", scored)

    @server.tool(description=text.TOOLS["open_incidents"])
    async def open_incidents(ctx: Context) -> str:
        def listed() -> list[dict[str, Any]]:
            found = IncidentRepository(service.store).recent(limit=25, open_only=True)
            return [
                {
                    "id": i.id,
                    "namespace": i.namespace,
                    "state": i.state.value,
                    "cause": i.diagnosis.summary if i.diagnosis else "",
                }
                for i in found
            ]

        return await read(ctx, "open_incidents", listed)

    @server.tool(description=text.TOOLS["my_proposals"])
    async def my_proposals(ctx: Context) -> list[dict[str, Any]]:
        client = gateway.client(ctx)
        found = await _run(service.repo.find, requester=client.requester, limit=25)
        return [render.proposal(p) for p in found]

    @server.tool(description=text.TOOLS["list_actions"])
    async def list_actions(ctx: Context) -> list[dict[str, Any]]:
        gateway.client(ctx)
        return schemas.catalog()

    @server.tool(description=text.TOOLS["get_proposal"])
    async def get_proposal(proposal_id: str, ctx: Context) -> dict[str, Any]:
        client = gateway.client(ctx)
        found = await _run(service.own, proposal_id, requester=client.requester)
        return await _rendered(gateway, found)

    @server.tool(description=text.TOOLS["wait_for_decision"])
    async def wait_for_decision(
        proposal_id: str, ctx: Context, timeout_seconds: float = 300.0
    ) -> dict[str, Any]:
        client = gateway.client(ctx)
        limit = max(0.0, min(timeout_seconds, MAX_WAIT_SECONDS))
        started = time.monotonic()
        last = ""
        while True:
            found = await _run(service.own, proposal_id, requester=client.requester)
            checked = await _run(_verification, service, found)
            waited = time.monotonic() - started
            now = f"{found.state.value} {checked.verdict if checked else ''}"
            if now != last:
                last = now
                await ctx.report_progress(waited, limit, message=text.waiting(found, checked))
            decided = found.state in render.SETTLED and (checked is None or checked.done)
            if decided or waited >= limit:
                break
            await anyio.sleep(POLL_SECONDS)
            gateway.client(ctx)  # a token revoked while waiting ends the wait
        body = await _rendered(gateway, found)
        if found.state in (ProposalState.EXECUTED, ProposalState.UNDONE):
            body["health_after"] = await _health(gateway, found)
        if not decided:
            body["timed_out"] = True
        return body

    if gateway.read_only:
        return server

    @server.tool(description=text.TOOLS["propose_action"])
    async def propose_action(
        action: str,
        target: str,
        namespace: str,
        intent: str,
        ctx: Context,
        params: dict[str, Any] | None = None,
        incident: str | None = None,
    ) -> dict[str, Any]:
        client = writer(gateway, ctx)
        kind, name = parse_target(action, target)
        ask = Ask(action, kind, name, namespace, dict(params or {}), intent, incident)
        if gateway.workflow is not None:
            propose = gateway.workflow.propose_for_client
        else:
            joined = await _run(
                continuation.incident_to_join,
                IncidentRepository(service.store),
                namespace=namespace,
                asked=incident,
            )
            ask = replace(ask, incident_id=joined)
            propose = service.propose_for
        made = await _in_turn(
            gateway,
            ctx,
            client,
            functools.partial(
                propose, ask, requester=client.requester, quota=quota(client), config=gateway.turns
            ),
        )
        found = await _carry_on(gateway, made.proposal, client)
        return await _rendered(gateway, found, repeated=made.repeated)

    @server.tool(description=text.TOOLS["request_undo"])
    async def request_undo(undo_id: str, ctx: Context) -> dict[str, Any]:
        client = writer(gateway, ctx)
        made = await _in_turn(
            gateway,
            ctx,
            client,
            functools.partial(
                service.undo_for,
                undo_id,
                requester=client.requester,
                quota=quota(client),
                config=gateway.turns,
            ),
        )
        found = await _carry_on(gateway, made.proposal, client)
        return render.proposal(found, repeated=made.repeated)

    return server


def writer(gateway: Gateway, ctx: Context) -> Client:
    client = gateway.client(ctx)
    if not client.may_propose:
        raise ToolError(text.read_only(client.requester))
    return client


def parse_target(action: str, target: str) -> tuple[str, str]:
    """``Deployment/web`` (or ``deployment/web``, or ``web`` for the action's first kind)."""
    cls = CATALOG.get(action)
    if cls is None:
        raise ToolError(text.refused(schemas.FieldInvalid("action", f"unknown action {action!r}")))
    written, slash, name = target.partition("/")
    if not slash:
        return cls.kinds[0], target
    try:
        return schemas.kind_of(cls, written), name
    except StratusError as exc:
        raise ToolError(text.refused(exc)) from exc


async def _carry_on(gateway: Gateway, proposal: Proposal, client: Client) -> Proposal:
    """A proposal the policy allowed runs now, as every surface's continuation runs it — the
    step of an attempt by its incident's workflow (executed, then verified), anything else on
    its own; one that waits for humans is left to them (the bot carries it on after their
    approval)."""
    service = gateway.service
    if proposal.state == ProposalState.DENIED:
        raise ToolError(text.denied(proposal))
    if proposal.state != ProposalState.APPROVED:
        return proposal
    incidents = IncidentRepository(service.store)
    execute = functools.partial(service.execute, actor=client.requester)
    advance = gateway.workflow.advance if gateway.workflow is not None else None
    done = await _run(
        continuation.carry_on, proposal, incidents=incidents, execute=execute, advance=advance
    )
    return done if isinstance(done, Proposal) else await _run(service.get, proposal.id)


def _verification(service: ProposalService, proposal: Proposal) -> continuation.Verification | None:
    """How the proposal's write was judged, when it is the step of an incident's attempt."""
    if not proposal.incident_id:
        return None
    incident = IncidentRepository(service.store).get(proposal.incident_id)
    undos = [u for a in incident.attempts if proposal.id in a.proposals for u in a.undo_proposals]
    states = {u: service.get(u).state for u in undos}
    return continuation.verification_of(incident, proposal.id, states)


async def _rendered(gateway: Gateway, found: Proposal, *, repeated: bool = False) -> dict[str, Any]:
    checked = await _run(_verification, gateway.service, found)
    body = render.proposal(found, repeated=repeated, verification=checked)
    if await _run(_waits_its_turn, gateway.service, found):
        body["waits_its_turn"] = text.WAITS_ITS_TURN.format(incident=found.incident_id)
    return body


def _waits_its_turn(service: ProposalService, proposal: Proposal) -> bool:
    if not proposal.incident_id:
        return False
    incident = IncidentRepository(service.store).get(proposal.incident_id)
    return continuation.waits_its_turn(proposal, incident)


async def _health(gateway: Gateway, proposal: Proposal) -> str:
    def scored() -> dict[str, Any]:
        namespace = proposal.target.namespace
        return health.score(health.collect(gateway.kube, namespace)).to_dict()

    try:
        return render.untrusted("health_score", await _run(scored))
    except ToolError as exc:
        return str(exc)
