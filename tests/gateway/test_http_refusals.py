"""What an outside agent cannot do over streamable HTTP: connect without a token or with a
wrong one, keep using a revoked one, send parameters outside the catalog's schema, a name that
is not a Kubernetes name or a namespace outside the write scope, get past a policy rule on
its requester, flood the approvers, propose from a read-only client, or see another client's
proposal. Nothing of it writes anything."""

from __future__ import annotations

import json
from typing import Any

import httpx2
import pytest
from mcp.client.session import ClientSession
from mcp.shared.exceptions import MCPError

from policies.model import Match, Rule
from tests.bot.conftest import ASK, SRE, BotHandle
from tests.bot.test_e2e import replicas
from tests.conftest import Lab
from tests.gateway.conftest import READER_TOKEN, TOKENS, Clients, body, connect, error
from tests.proposals.conftest import PolicyBox
from tools.k8s import KubeClient
from tools.objects import ObjectRef
from tools.scope import WriteScope

pytestmark = pytest.mark.asyncio
INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {
        "protocolVersion": "2025-06-18",
        "capabilities": {},
        "clientInfo": {"name": "probe", "version": "0"},
    },
}


def scale(replicas: int, **changes: Any) -> dict[str, Any]:
    return {
        "action": "scale",
        "target": "Deployment/geo",
        "namespace": "hotel",
        "params": {"replicas": replicas},
        "intent": "test",
        **changes,
    }


async def propose(mcp: ClientSession, arguments: dict[str, Any]) -> Any:
    return await mcp.call_tool("propose_action", arguments)


async def test_no_token_and_a_wrong_token_are_refused_before_the_protocol(
    mcp_url: str, stratus_bot: BotHandle
) -> None:
    headers = {"Accept": "application/json, text/event-stream"}
    async with httpx2.AsyncClient() as http:
        for auth in ({}, {"Authorization": "Bearer not-a-token"}, {"Authorization": "Basic x"}):
            answer = await http.post(mcp_url, json=INITIALIZE, headers={**headers, **auth})
            assert answer.status_code == 401, (auth, answer.text)
            assert "mcp-session-id" not in answer.headers
        good = await http.post(
            mcp_url,
            json=INITIALIZE,
            headers={**headers, "Authorization": f"Bearer {TOKENS['claude']}"},
        )
        assert good.status_code == 200
    # The SDK's own client cannot get in either: the server answered with an error.
    with pytest.raises(ExceptionGroup) as refused:
        async with connect(mcp_url, "wrong-token") as mcp:
            await mcp.list_tools()
    assert refused.group_contains(MCPError)


async def test_a_revoked_token_stops_at_once(mcp_url: str, clients: Clients) -> None:
    async with connect(mcp_url, TOKENS["other"]) as mcp:
        assert body(await mcp.call_tool("whoami", {}))["requester"] == "mcp:other"
        clients.revoke("other")
        with pytest.raises(MCPError):  # the gate answers 401 mid-session
            await mcp.call_tool("whoami", {})


async def test_bad_calls_name_the_field_and_write_nothing(
    lab: Lab, kube: KubeClient, mcp_url: str
) -> None:
    before = replicas(kube, "geo")
    async with connect(mcp_url, TOKENS["claude"]) as mcp:
        cases = {
            "params.replicas": scale(-1),
            "params.color": scale(2, params={"replicas": 2, "color": "red"}),
            "target": scale(2, target="Deployment/Geo_1"),
            "action": scale(2, action="exec-shell"),
            "namespace": scale(2, namespace="kube-system"),
        }
        for field, arguments in cases.items():
            said = error(await propose(mcp, arguments))
            assert f"field {field}" in said, (field, said)
        assert "protected" in error(await propose(mcp, scale(2, namespace="kube-system")))
        # What cannot be undone is not this client's to propose (its entry does not allow it).
        pod = str(kube.list("v1", "Pod", namespace="hotel")[0]["metadata"]["name"])
        gone = scale(2, action="delete-pod", target=f"Pod/{pod}", params={})
        said = error(await propose(mcp, gone))
        assert "field action" in said and "cannot be undone" in said
        assert kube.find(ObjectRef("Pod", pod, "hotel")) is not None
        assert "not a valid namespace" in error(await propose(mcp, scale(2, namespace="hotel/..")))
        # A node is every namespace's: not a write an agent's namespace could verify.
        node = str(kube.list("v1", "Node")[0]["metadata"]["name"])
        cordon = scale(2, action="cordon", target=f"Node/{node}", params={}, namespace="default")
        said = error(await propose(mcp, cordon))
        assert "field target" in said and "shared by every namespace" in said, said
        assert not (kube.get(ObjectRef("Node", node)).get("spec") or {}).get("unschedulable")
        # No tool exists to approve, and calling one by name is an error, not a write.
        for name in ("approve", "approve_proposal", "force_undo", "execute"):
            assert (await mcp.call_tool(name, {"proposal_id": "x"})).is_error
        assert body(await mcp.call_tool("my_proposals", {})) == []
    assert replicas(kube, "geo") == before


async def test_a_namespace_outside_the_write_scope(
    lab: Lab, mcp_url: str, stratus_bot: BotHandle
) -> None:
    stratus_bot.runtime.service.executor.scope = WriteScope(("hotel",))
    async with connect(mcp_url, TOKENS["claude"]) as mcp:
        said = error(await propose(mcp, scale(2, target="Deployment/frontend", namespace="shop")))
        assert "field namespace" in said and "outside the write scope (hotel)" in said
        assert body(await mcp.call_tool("my_proposals", {})) == []


async def test_a_policy_rule_on_the_requester_denies_mcp_clients(
    lab: Lab, kube: KubeClient, mcp_url: str, policy: PolicyBox
) -> None:
    agents_no_images = Rule(
        name="agents-may-not-set-images",
        decision="deny",
        match=Match(requesters=["mcp:*"], actions=["set-image"]),
    )
    policy.set(agents_no_images, ASK, defaults=SRE)
    async with connect(mcp_url, TOKENS["claude"]) as mcp:
        said = error(
            await propose(
                mcp,
                {
                    "action": "set-image",
                    "target": "Deployment/geo",
                    "namespace": "hotel",
                    "params": {"image": "nginx:1.27"},
                    "intent": "try a new image",
                },
            )
        )
        assert "[denied]" in said and "agents-may-not-set-images" in said
        # The same requester may still propose what the rule does not name.
        assert body(await propose(mcp, scale(replicas(kube, "geo") + 1)))["state"] == (
            "awaiting_approval"
        )


async def test_limits_repeats_and_other_clients_proposals(
    lab: Lab, kube: KubeClient, mcp_url: str, clients: Clients
) -> None:
    clients.default(proposals_per_minute=5, open_proposals=2)
    async with connect(mcp_url, TOKENS["claude"]) as mcp:
        first = body(await propose(mcp, scale(4)))
        repeated = body(await propose(mcp, scale(4)))
        assert repeated["id"] == first["id"] and repeated["repeated"]
        second = body(await propose(mcp, scale(5)))
        assert second["id"] != first["id"]
        said = error(await propose(mcp, scale(6)))
        assert "[limit_reached]" in said and "at most 2" in said
        assert len(body(await mcp.call_tool("my_proposals", {}))) == 2
    async with connect(mcp_url, TOKENS["other"]) as other:
        for tool in ("get_proposal", "wait_for_decision"):
            theirs = error(await other.call_tool(tool, {"proposal_id": first["id"]}))
            unknown = error(await other.call_tool(tool, {"proposal_id": "p-doesnotexist"}))
            # Another client's id says exactly what an unknown id says: nothing leaks.
            assert theirs.replace(first["id"], "ID") == unknown.replace("p-doesnotexist", "ID")
            assert "mcp:claude" not in theirs and "geo" not in theirs
        assert error(await other.call_tool("request_undo", {"undo_id": "u-nope"}))
    async with connect(mcp_url, READER_TOKEN) as reader:
        assert body(await reader.call_tool("whoami", {}))["tools"] == "read"
        listed = {t.name for t in (await reader.list_tools()).tools}
        assert "workloads" in listed and not listed & {"propose_action", "request_undo"}
        assert "[read_only]" in error(await propose(reader, scale(3)))
    assert replicas(kube, "geo") == 1


async def test_the_per_minute_limit(
    lab: Lab, kube: KubeClient, mcp_url: str, clients: Clients
) -> None:
    clients.default(proposals_per_minute=2, open_proposals=10)
    async with connect(mcp_url, TOKENS["claude"]) as mcp:
        body(await propose(mcp, scale(4)))
        body(await propose(mcp, scale(5)))
        said = error(await propose(mcp, scale(6)))
        assert "[limit_reached]" in said and "last minute" in said


def _answer(response: httpx2.Response) -> dict[str, Any]:
    """A JSON-RPC answer, sent as JSON or as one server-sent event."""
    if response.headers.get("content-type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in response.text.splitlines() if line.startswith("data:")]
        found: dict[str, Any] = json.loads(data[-1])
        return found
    answered: dict[str, Any] = response.json()
    return answered


async def test_a_replayed_request_is_the_same_proposal(
    lab: Lab, kube: KubeClient, mcp_url: str, stratus_bot: BotHandle
) -> None:
    """The very same tools/call sent again, byte for byte (a retry, a replay), on the same
    session and on a new one: one proposal, nothing written."""
    headers = {
        "Accept": "application/json, text/event-stream",
        "Authorization": f"Bearer {TOKENS['claude']}",
    }
    call = {
        "jsonrpc": "2.0",
        "id": 7,
        "method": "tools/call",
        "params": {"name": "propose_action", "arguments": scale(3)},
    }
    ids = []
    async with httpx2.AsyncClient(timeout=60) as http:
        for _session in range(2):
            opened = await http.post(mcp_url, json=INITIALIZE, headers=headers)
            session = {**headers, "mcp-session-id": opened.headers["mcp-session-id"]}
            initialized = {"jsonrpc": "2.0", "method": "notifications/initialized"}
            await http.post(mcp_url, json=initialized, headers=session)
            for _replay in range(2):
                answer = _answer(await http.post(mcp_url, json=call, headers=session))
                ids.append(answer["result"]["structuredContent"]["id"])
    assert len(set(ids)) == 1, ids
    rt = stratus_bot.runtime
    assert len(await rt.call(rt.service.repo.find, requester="mcp:claude")) == 1
    assert replicas(kube, "geo") == 1


TRAVERSALS = [
    "../../../../api/v1/secrets?x=",
    "hotel/secrets?x=",
    "hotel/secrets/x/..",
    "..",
    "hotel%2fsecrets",
    "Hotel",
]


async def test_a_read_tool_never_sends_what_is_not_a_namespace(mcp_url: str) -> None:
    """An outside tester read every Secret of the cluster through ``workloads`` with
    ``../../../../api/v1/secrets?x=`` as its namespace: the client put it in the URL's path
    unquoted. Every read refuses what is not a namespace (or a name) before any request."""
    async with connect(mcp_url, READER_TOKEN) as reader:
        for namespace in TRAVERSALS:
            calls: list[tuple[str, dict[str, str]]] = [
                ("workloads", {"namespace": namespace}),
                ("events", {"namespace": namespace}),
                ("health_score", {"namespace": namespace}),
                ("logs", {"namespace": namespace, "pod": "geo"}),
                ("pod_status", {"namespace": namespace, "pod": "geo"}),
                ("endpoints", {"namespace": namespace, "service_name": "geo"}),
            ]
            for tool, args in calls:
                said = error(await reader.call_tool(tool, args))
                assert "not a namespace" in said or "not a valid namespace" in said, (tool, said)
                assert "credentials" not in said and "Opaque" not in said, (tool, said)
        for name in ("../../secrets", "geo?x=", "x,involvedObject.kind=Secret", ".."):
            said = error(
                await reader.call_tool("events", {"namespace": "hotel", "object_name": name})
            )
            assert "not an object's name" in said, said
            said = error(await reader.call_tool("logs", {"namespace": "hotel", "pod": name}))
            assert "not" in said and "credentials" not in said, said
        # A real namespace still reads.
        assert "geo" in body(await reader.call_tool("workloads", {"namespace": "hotel"}))
