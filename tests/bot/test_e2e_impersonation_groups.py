"""The impersonation mapping's Slack user-group entries, end to end, under a policy that names
no group (``approvers: ["*"]``): the bot still looks the voter's membership up
(``usergroups.users.list``, as for the approver check), and the write made as them carries the
group's Kubernetes group.

The lab (RBAC on) is ``tests.impersonation_lab``'s, plus: the ServiceAccount may impersonate
the group ``sre``, and ``sre`` holds ``edit`` in ``hotel`` (a RoleBinding). The mapping gives
U0BOB the user ``bob`` (who may only read) and members of S0SRE the group ``sre``. Bob in S0SRE:
his approval goes out with ``sre`` and the group's RoleBinding allows it. Bob out of S0SRE: it
goes out without, and the cluster refuses it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client, config

from agents.planner.offline import OfflinePlanner
from bot.app import StratusBot
from bot.config import BotConfig
from bot.runtime import Runtime
from incidents.settings import WorkflowConfig
from incidents.workflow import IncidentWorkflow
from lab.client import LabClient
from lab.runner import LabServer
from lab.slack.client import AsyncPlaygroundClient
from lab.slack.server import PlaygroundServer
from policies import impersonation
from policies.model import Defaults
from proposals.model import ProposalState
from proposals.service import ProposalService
from store.db import Store
from tests.bot.conftest import ASK, wait_for
from tests.bot.test_e2e import SCENARIO, proposal_id
from tests.bot.test_e2e_impersonation import Running, _first_card
from tests.conftest import Lab
from tests.impersonation_lab import SA_USER, set_up
from tests.proposals.conftest import PolicyBox
from tools.executor import Executor
from tools.k8s import KubeClient

pytestmark = pytest.mark.asyncio

MAPPING = """\
apiVersion: stratus/v1
kind: Impersonation
people:
  - who: U0BOB
    user: bob
groups:
  - who: S0SRE
    groups: [sre]
"""
RBAC = "rbac.authorization.k8s.io"


def _grant_sre(admin: Path) -> None:
    """The ServiceAccount may impersonate ``sre``; ``sre`` may edit in ``hotel``."""
    api = config.new_client_from_config(str(admin))
    try:
        rbac = client.RbacAuthorizationV1Api(api)
        rbac.create_cluster_role(
            {
                "metadata": {"name": "stratus-impersonate-sre"},
                "rules": [
                    {
                        "apiGroups": [""],
                        "resources": ["groups"],
                        "verbs": ["impersonate"],
                        "resourceNames": ["sre"],
                    }
                ],
            }
        )
        rbac.create_cluster_role_binding(
            {
                "metadata": {"name": "stratus-impersonate-sre"},
                "roleRef": {
                    "apiGroup": RBAC,
                    "kind": "ClusterRole",
                    "name": "stratus-impersonate-sre",
                },
                "subjects": [{"kind": "ServiceAccount", "name": "stratus", "namespace": "stratus"}],
            }
        )
        rbac.create_namespaced_role_binding(
            "hotel",
            {
                "metadata": {"name": "sre-edit", "namespace": "hotel"},
                "roleRef": {"apiGroup": RBAC, "kind": "ClusterRole", "name": "edit"},
                "subjects": [{"apiGroup": RBAC, "kind": "Group", "name": "sre"}],
            },
        )
    finally:
        api.close()


@pytest.fixture(scope="module")
def rbac_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Lab, Path]]:
    server = LabServer(apps=["hotel"], rbac=True).start()
    folder = tmp_path_factory.mktemp("imperson-groups")
    admin = server.write_kubeconfig(folder / "admin", "hotel")
    account = set_up(server, admin, folder / "stratus")
    _grant_sre(admin)
    yield Lab(server, admin), account
    server.stop()


@asynccontextmanager
async def _bot(
    rbac_lab: tuple[Lab, Path], playground: PlaygroundServer, tmp_path: Path
) -> AsyncIterator[Running]:
    lab, account = rbac_lab
    mapping = tmp_path / "impersonation.yaml"
    mapping.write_text(MAPPING)
    policy = PolicyBox()
    policy.set(ASK, defaults=Defaults(approvers=["*"]))  # names no user group
    kube = KubeClient(kubeconfig=str(account))
    admin = KubeClient(kubeconfig=str(lab.kubeconfig))
    store = Store(tmp_path / "bot.db")
    service = ProposalService(
        store=store,
        executor=Executor(kube, store, lock_wait=0.5),
        policy=policy,
        impersonation=impersonation.parse(mapping),
    )
    flow = IncidentWorkflow(
        service=service,
        kube=kube,
        offline=OfflinePlanner(),
        config=WorkflowConfig(settle_timeout=8, poll_interval=0.1),
    )
    config = BotConfig(
        mode="http",
        bot_token=playground.bot_token,
        signing_secret=playground.signing_secret,
        api_url=playground.api_url,
        port=0,
        follow_interval=0.1,
    )
    bot = StratusBot(Runtime(service=service, workflow=flow, policy=policy), config)
    await bot.start()
    await AsyncPlaygroundClient(playground.url).configure(request_url=bot.url)
    LabClient(lab.url).post(f"/lab/v1/scenarios/{SCENARIO}/inject")
    LabClient(lab.url).post("/lab/v1/settle")
    try:
        yield Running(bot, store, admin, lab)
    finally:
        await bot.stop()
        store.close()
        kube.close()
        admin.close()


async def _approved_by_bob(running: Running, slack: AsyncPlaygroundClient) -> dict[str, Any]:
    """Bob approves the incident's scale; the proposal settles; the lab's record of the
    (non-dry-run) write."""
    await slack.command("U0DAVE", "/stratus", "investigate hotel")
    pid = proposal_id(await _first_card(slack))
    await slack.click("U0BOB", "stratus.approve", value=pid)

    async def settled() -> bool:
        state = (await running.rt.call(running.rt.service.get, pid)).state
        return state in (ProposalState.EXECUTED, ProposalState.FAILED)

    await wait_for(settled, timeout=60)
    sent = [e for e in running.lab_audit("recommendation") if e["verb"] == "update"]
    assert sent, running.lab_audit("recommendation")
    return {"proposal": running.rt.service.get(pid), "last": sent[-1]}


async def test_a_member_of_a_mapped_user_group_writes_with_its_group_under_a_star_policy(
    rbac_lab: tuple[Lab, Path],
    playground: PlaygroundServer,
    slack: AsyncPlaygroundClient,
    tmp_path: Path,
) -> None:
    async with _bot(rbac_lab, playground, tmp_path) as running:
        assert running.replicas("recommendation") == 0
        outcome = await _approved_by_bob(running, slack)
        proposal, last = outcome["proposal"], outcome["last"]
        assert proposal.state == ProposalState.EXECUTED, proposal.reason
        assert running.replicas("recommendation") == 1
        assert "dryRun" not in last["requestURI"]
        assert last["user"]["username"] == SA_USER
        assert last["impersonatedUser"]["username"] == "bob"
        assert "sre" in last["impersonatedUser"]["groups"]
        assert last["responseStatus"]["code"] == 200
        # The vote records the group Slack said bob was in, asked of Slack's membership.
        assert [v.groups for v in proposal.votes] == [["S0SRE"]]
        assert (await slack.calls("usergroups.users.list"))["calls"]


async def test_a_person_out_of_the_mapped_user_group_writes_without_it_and_is_refused(
    rbac_lab: tuple[Lab, Path],
    playground: PlaygroundServer,
    slack: AsyncPlaygroundClient,
    tmp_path: Path,
) -> None:
    await slack.set_group_members("S0SRE", ["U0ALICE", "U0CAROL"])  # before the bot looks
    async with _bot(rbac_lab, playground, tmp_path) as running:
        outcome = await _approved_by_bob(running, slack)
        proposal, last = outcome["proposal"], outcome["last"]
        assert proposal.state == ProposalState.FAILED
        assert proposal.error and proposal.error["code"] == "cluster_refused"
        assert last["impersonatedUser"]["username"] == "bob"
        assert "sre" not in last["impersonatedUser"]["groups"]
        assert last["responseStatus"]["code"] == 403
