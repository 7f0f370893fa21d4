"""A scripted agent on autogen-agentchat, the framework Stratus's own planner uses, takes
Stratus as its MCP tool provider: its tools are built from the server's ``list_tools`` (the
SDK's own client over streamable HTTP), it reads the broken namespace with the read tools, and
fixes the lab scenario only through a proposal that a playground user approves in Slack.

autogen-ext's own MCP adapter (``autogen_ext.tools.mcp``) is written for the 1.x SDK and does
not import against 2.x, so the adapter here turns each listed MCP tool into an autogen tool
from its input schema — what that adapter does. The model is scripted (a replay client that
answers from what the tools returned), so the run is deterministic."""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Sequence
from typing import Any

import pytest
from autogen_agentchat.agents import AssistantAgent
from autogen_core import CancellationToken, FunctionCall
from autogen_core.models import (
    CreateResult,
    FunctionExecutionResultMessage,
    LLMMessage,
    ModelFamily,
    ModelInfo,
    RequestUsage,
)
from autogen_core.tools import BaseTool
from autogen_ext.models.replay import ReplayChatCompletionClient
from mcp.client.session import ClientSession
from pydantic import BaseModel, create_model

from lab.slack.client import AsyncPlaygroundClient
from proposals.model import ProposalState
from tests.bot.conftest import BotHandle, inject, wait_for
from tests.bot.test_e2e import SCENARIO, replicas
from tests.conftest import Lab
from tests.gateway.conftest import TOKENS, approve_in_slack, connect
from tools.k8s import KubeClient

pytestmark = pytest.mark.asyncio
INFO = ModelInfo(
    vision=False,
    function_calling=True,
    json_output=False,
    structured_output=False,
    family=ModelFamily.UNKNOWN,
)
_TYPES: dict[str, Any] = {
    "string": str,
    "integer": int,
    "number": float,
    "boolean": bool,
    "object": dict[str, Any],
    "array": list[Any],
}


class McpTool(BaseTool[BaseModel, str]):
    """One MCP tool as an autogen tool: arguments from its input schema, its result as text
    (an error result goes back to the model as text, not as an exception)."""

    def __init__(
        self, session: ClientSession, name: str, description: str, schema: dict[str, Any]
    ) -> None:
        required = set(schema.get("required", []))
        fields: dict[str, Any] = {}
        for key, spec in (schema.get("properties") or {}).items():
            kinds = [s.get("type") for s in spec.get("anyOf", [spec])]
            kind = next((_TYPES[k] for k in kinds if k in _TYPES), Any)
            fields[key] = (kind, ...) if key in required else (kind | None, spec.get("default"))
        super().__init__(create_model(f"{name}_args", **fields), str, name, description)
        self.session = session

    async def run(self, args: BaseModel, cancellation_token: CancellationToken) -> str:
        given = {k: v for k, v in args.model_dump().items() if v is not None}
        result = await self.session.call_tool(self.name, given)
        said = "\n".join(getattr(c, "text", "") for c in result.content)
        return f"ERROR: {said}" if result.is_error else said


async def tools_of(session: ClientSession) -> list[McpTool]:
    listed = (await session.list_tools()).tools
    return [McpTool(session, t.name, t.description or "", t.input_schema) for t in listed]


def call(name: str, **arguments: Any) -> CreateResult:
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=f"call-{name}", name=name, arguments=json.dumps(arguments))],
        usage=RequestUsage(prompt_tokens=10, completion_tokens=5),
        cached=False,
    )


def said(text: str) -> CreateResult:
    return CreateResult(
        finish_reason="stop",
        content=text,
        usage=RequestUsage(prompt_tokens=10, completion_tokens=5),
        cached=False,
    )


class ScriptedSre(ReplayChatCompletionClient):
    """An SRE's moves, each chosen from what the last tool returned: read the namespace,
    propose scaling up what is at zero, wait for the humans, report."""

    def __init__(self) -> None:
        super().__init__([], model_info=INFO)
        self.moves: list[str] = []

    async def create(self, messages: Sequence[LLMMessage], **kwargs: Any) -> CreateResult:
        last = messages[-1]
        result = (
            "\n".join(r.content for r in last.content)
            if isinstance(last, FunctionExecutionResultMessage)
            else ""
        )
        if not self.moves:
            self.moves.append("read")
            return call("workloads", namespace="hotel")
        if self.moves[-1] == "read":
            at_zero = re.findall(r'"kind":"Deployment","name":"([a-z-]+)","desired":0', result)
            assert at_zero, result
            self.moves.append("propose")
            return call(
                "propose_action",
                action="scale",
                target=f"Deployment/{at_zero[0]}",
                namespace="hotel",
                params={"replicas": 1},
                intent=f"{at_zero[0]} is scaled to zero and its callers fail",
            )
        if self.moves[-1] == "propose":
            proposal = json.loads(result)
            self.moves.append("wait")
            return call("wait_for_decision", proposal_id=proposal["id"], timeout_seconds=90)
        self.moves.append("report")
        return said(f"done: {json.loads(result)['state']}")


async def test_an_autogen_agent_fixes_a_scenario_only_through_an_approved_proposal(
    lab: Lab, kube: KubeClient, slack: AsyncPlaygroundClient, stratus_bot: BotHandle, mcp_url: str
) -> None:
    rt = stratus_bot.runtime
    inject(lab, SCENARIO)
    assert replicas(kube, "recommendation") == 0
    async with connect(mcp_url, TOKENS["claude"]) as session:
        model = ScriptedSre()
        agent = AssistantAgent(
            "sre_agent",
            model_client=model,
            tools=await tools_of(session),
            reflect_on_tool_use=True,
            max_tool_iterations=5,
        )
        running = asyncio.create_task(agent.run(task="hotel's search is failing; fix it"))

        async def proposed() -> str | None:
            if running.done():
                running.result()  # the agent stopped early: say why
            found = await rt.call(rt.service.repo.find, requester="mcp:claude")
            waiting = [p for p in found if p.state == ProposalState.AWAITING_APPROVAL]
            return waiting[0].id if waiting else None

        pid = await wait_for(proposed, timeout=60)
        assert replicas(kube, "recommendation") == 0  # nothing written before a human said so
        await approve_in_slack(slack, "U0ALICE", pid)
        result = await asyncio.wait_for(running, 120)
    assert model.moves == ["read", "propose", "wait", "report"]
    assert result.messages[-1].to_text() == "done: executed"
    assert replicas(kube, "recommendation") == 1
    verdict = lab.control.get(f"/lab/v1/scenarios/{SCENARIO}/check")
    assert verdict["mitigated"], verdict
    executed = await rt.call(rt.service.get, pid)
    assert executed.requester == "mcp:claude" and executed.undo_id
    assert executed.approvals() == ["U0ALICE"]
