"""The gateway as a user runs it: ``stratus mcp`` over stdio (a process the agent starts) and
the streamable HTTP listener of a real ``stratus serve``, on one database. The same client
proposes over stdio, a person approves in the Slack playground (the serving bot executes it),
and the client follows and undoes it over HTTP. Without a token, or with a wrong one,
``stratus mcp`` does not start."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import AsyncIterator, Iterator
from pathlib import Path

import pytest
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

from cli.demo_commands import DEMO_POLICY
from lab.slack.client import AsyncPlaygroundClient
from lab.slack.server import PlaygroundServer
from tests.bot.conftest import inject
from tests.bot.serve_process import ServeProcess, serve_env
from tests.bot.test_e2e import SCENARIO, first_card
from tests.conftest import REPO, Lab, stratus
from tests.gateway.conftest import TOKENS, Clients, approve_in_slack, body, connect, error
from tools.k8s import KubeClient
from tools.objects import ObjectRef

GATEWAY_LINE = "mcp gateway: "


def geo(lab: Lab) -> int:
    kube = KubeClient(kubeconfig=str(lab.kubeconfig))
    try:
        return int(kube.get(ObjectRef("Deployment", "geo", "hotel"))["spec"]["replicas"])
    finally:
        kube.close()


@pytest.fixture
def served(
    lab: Lab, playground: PlaygroundServer, tmp_path: Path, clients: Clients
) -> Iterator[tuple[ServeProcess, dict[str, str]]]:
    env = serve_env(
        playground,
        lab.kubeconfig,
        tmp_path,
        STRATUS_MCP_CLIENTS=str(clients.path),
        STRATUS_MCP_PORT="0",
    )
    bot = ServeProcess(env)
    try:
        yield bot, env
    finally:
        bot.close()


@contextlib.asynccontextmanager
async def over_stdio(env: dict[str, str], token: str) -> AsyncIterator[ClientSession]:
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "cli", "mcp"],
        env={**env, "STRATUS_MCP_TOKEN": token},
        cwd=REPO,
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        yield session


@pytest.mark.asyncio
async def test_stdio_proposes_slack_approves_http_undoes(
    lab: Lab, playground: PlaygroundServer, served: tuple[ServeProcess, dict[str, str]]
) -> None:
    bot, env = served
    slack = AsyncPlaygroundClient(playground.url)
    await slack.configure(request_url=bot.running())
    mcp_url = bot.wait_for_line(GATEWAY_LINE).split(GATEWAY_LINE)[1].split()[0]
    before = geo(lab)
    async with over_stdio(env, TOKENS["claude"]) as mcp:
        names = {t.name for t in (await mcp.list_tools()).tools}
        assert "propose_action" in names and not any("approve" in n for n in names)
        assert "geo" in body(await mcp.call_tool("workloads", {"namespace": "hotel"}))
        proposed = body(
            await mcp.call_tool(
                "propose_action",
                {
                    "action": "scale",
                    "target": "deployment/geo",
                    "namespace": "hotel",
                    "params": {"replicas": before + 2},
                    "intent": "absorb the load",
                },
            )
        )
        assert proposed["state"] == "awaiting_approval" and proposed["requester"] == "mcp:claude"
        # The terminal shows the agent's words as Slack does: quoted, marked, not ours.
        shown = stratus("proposals", "show", proposed["id"], env=env)
        assert 'mcp:claude says it is for (untrusted): "absorb the load"' in shown.stdout, shown
        await approve_in_slack(slack, "U0ALICE", proposed["id"])
        decided = body(
            await mcp.call_tool(
                "wait_for_decision", {"proposal_id": proposed["id"], "timeout_seconds": 90}
            )
        )
        assert decided["state"] == "executed", decided
    assert geo(lab) == before + 2
    # The same client over the serving bot's HTTP listener: its proposal is its own there too.
    async with connect(mcp_url, TOKENS["claude"]) as http:
        seen = body(await http.call_tool("get_proposal", {"proposal_id": proposed["id"]}))
        assert seen["undo_id"] == decided["undo_id"]
        undo = body(await http.call_tool("request_undo", {"undo_id": decided["undo_id"]}))
        await approve_in_slack(slack, "U0ALICE", undo["id"])
        undone = body(
            await http.call_tool(
                "wait_for_decision", {"proposal_id": undo["id"], "timeout_seconds": 90}
            )
        )
        assert undone["state"] == "executed", undone
    async with connect(mcp_url, TOKENS["other"]) as other:
        assert "[not_yours]" in error(
            await other.call_tool("get_proposal", {"proposal_id": proposed["id"]})
        )
    assert geo(lab) == before
    assert "Traceback" not in bot.output


def test_stratus_mcp_needs_a_client_s_token(env: dict[str, str], clients: Clients) -> None:
    env = {**env, "STRATUS_MCP_CLIENTS": str(clients.path)}
    for token, said in (("", "no bearer token"), ("nope", "not one of a configured client")):
        done = stratus("mcp", env={**env, "STRATUS_MCP_TOKEN": token})
        assert done.returncode != 0 and said in done.stderr, done.stderr
    unset = {k: v for k, v in env.items() if k != "STRATUS_MCP_CLIENTS"}
    done = stratus("mcp", env={**unset, "STRATUS_MCP_TOKEN": TOKENS["claude"]})
    assert done.returncode != 0 and "STRATUS_MCP_CLIENTS is not set" in done.stderr


@pytest.mark.asyncio
async def test_a_terminal_approving_a_queued_change_does_not_run_it_out_of_turn(
    lab: Lab, playground: PlaygroundServer, served: tuple[ServeProcess, dict[str, str]]
) -> None:
    """An agent's change joined to an incident under way, approved at a terminal: the
    terminal runs no workflow, so it must not execute the change itself (that would land
    inside the attempt in flight); it says it waits its turn, and nothing is written."""
    bot, env = served
    slack = AsyncPlaygroundClient(playground.url)
    await slack.configure(request_url=bot.running())
    inject(lab, SCENARIO)
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    await first_card(slack)  # Stratus's own attempt waits for a person
    before = geo(lab)
    # A terminal user the policy names as an approver (the floor too), as a team has.
    policy = Path(env["STRATUS_POLICY_DIR"]) / "demo.yaml"
    policy.write_text(
        DEMO_POLICY.replace('approvers: ["S0SRE"]', 'approvers: ["S0SRE", "cli:tester"]')
    )
    async with over_stdio(env, TOKENS["claude"]) as mcp:
        made = body(
            await mcp.call_tool(
                "propose_action",
                {
                    "action": "scale",
                    "target": "Deployment/geo",
                    "namespace": "hotel",
                    "params": {"replicas": before + 1},
                    "intent": "more geo",
                },
            )
        )
        assert "waits_its_turn" in made, made
        approved = stratus(
            "proposals", "approve", made["id"], env={**env, "STRATUS_ACTOR": "tester"}
        )
        assert approved.returncode == 0, approved.stderr
        assert "verifies one change at a time" in approved.stdout, approved.stdout
        seen = body(await mcp.call_tool("get_proposal", {"proposal_id": made["id"]}))
        assert seen["state"] == "approved" and "waits_its_turn" in seen, seen
    assert geo(lab) == before
    assert "Traceback" not in bot.output
