"""Stratus deployed into the lab as an SRE team would deploy it, and driven from outside.

A realtime lab with RBAC on (the hotel and shop apps) and the Slack playground. The admin
creates the Secret and the playground's address with ``kubectl create``, then ``kubectl apply
-k manifests/deploy/overlays/lab``: the lab's kubelet runs the real ``stratus serve`` as a
child process, with the projected ServiceAccount token and no kubeconfig, probed on its own
``/healthz`` and ``/readyz``. Everything after that goes through the pod: ``/stratus
investigate`` in the playground, the card, Approve, the write (sent as the ServiceAccount),
the summary, Undo. The lab's authorizer refuses what the roles leave out; with the shipped
impersonation component the approver's own identity decides, and a refusal is on the card.
Deleting the pod brings a new one on the same claim that takes the Lease and finds every
record; stopping the lab leaves no process behind.

One deployment for the module (it costs a pod start or three); the steps that change it run in
one test function, in order.
"""

from __future__ import annotations

import json
import os
import sqlite3
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lab.client import LabClient
from lab.cluster.clock import REALTIME
from lab.runner import LabServer
from lab.slack.client import PlaygroundClient
from lab.slack.server import PlaygroundServer
from lab.slack.workspace import PlaygroundConfig
from tests.bot.conftest import blocks_text
from tests.conftest import REPO, Kubectl, Lab, kubectl_for
from tests.lab.stratus_pods import alive, children, environ, serving, wait_until

# A lab, a playground and up to three pod starts on a shared machine.
pytestmark = pytest.mark.timeout(600)

NS = "stratus"
SELECTOR = "app.kubernetes.io/name=stratus"
SA_USER = "system:serviceaccount:stratus:stratus"
SCENARIO = "hotel-recommendation-scaled-to-zero"
CHANNEL = "C0INCIDENT"
OVERLAY = REPO / "manifests" / "deploy" / "overlays" / "lab"
IMPERSONATION = REPO / "manifests" / "deploy" / "components" / "impersonation"
# Sent to the pod only through the Secret: a test below looks for it in the logs.
AUDIT_KEY = "e2e-audit-key-0123456789abcdef0123456789abcdef"
ALERTS_TOKEN = "e2e-alerts-token-0123456789"


@dataclass
class Deployed:
    lab: Lab
    playground: PlaygroundServer
    admin: Kubectl
    home: Path

    @property
    def slack(self) -> PlaygroundClient:
        return PlaygroundClient(self.playground.url)

    def pods(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = json.loads(
            self.admin.out("get", "pods", "-l", SELECTOR, "-o", "json", namespace=NS)
        )["items"]
        return items

    def ready_pod(self, timeout: float = 60) -> dict[str, Any]:
        """The one Stratus pod once it is Ready (its readiness probe is the real /readyz)."""

        def ready() -> dict[str, Any] | None:
            live = [p for p in self.pods() if not p["metadata"].get("deletionTimestamp")]
            if len(live) != 1:
                return None
            conditions = (live[0].get("status") or {}).get("conditions") or []
            ok = any(c["type"] == "Ready" and c["status"] == "True" for c in conditions)
            return live[0] if ok else None

        try:
            found: dict[str, Any] = wait_until(ready, timeout, "the Stratus pod to be Ready")
        except AssertionError:
            raise AssertionError(self.diagnosis()) from None
        return found

    def diagnosis(self) -> str:
        shown = []
        for pod in self.pods():
            name = pod["metadata"]["name"]
            logs = self.admin.run("logs", name, namespace=NS, check=False)
            shown.append(f"{name}: {json.dumps(pod.get('status'))[:1500]}\n{logs.stdout[-3000:]}")
        events = self.admin.run("get", "events", namespace=NS, check=False).stdout
        return "\n".join(shown) + "\n" + events[-3000:]

    def replicas(self, name: str) -> int:
        return int(
            self.admin.out(
                "get", "deployment", name, "-o", "jsonpath={.spec.replicas}", namespace="hotel"
            )
        )

    def messages(self) -> list[dict[str, Any]]:
        return list(self.slack.messages(channel=CHANNEL)["messages"])

    def message_with(self, *needles: str) -> dict[str, Any] | None:
        for message in self.messages():
            text = blocks_text(message)
            if all(n in text for n in needles):
                return message
        return None

    def as_account(self) -> Kubectl:
        """kubectl holding only a token of the pod's ServiceAccount (``kubectl create
        token``), nothing of the admin's."""
        token = self.admin.out("create", "token", "stratus", namespace=NS).strip()
        config = self.lab.server.write_kubeconfig(self.home / "sa", "hotel", token=token, user="sa")
        return Kubectl(self.admin.binary, {**self.admin.env, "KUBECONFIG": str(config)})


def sent_by_account(deployed: Deployed) -> int:
    """How many writes of deployment/recommendation landed, from the lab's audit log: each
    must have been sent by the pod's ServiceAccount, as itself."""
    writes = [
        e
        for e in LabClient(deployed.lab.url).get("/lab/v1/audit")["items"]
        if e.get("objectRef", {}).get("name") == "recommendation"
        and e["verb"] == "update"
        and "dryRun" not in e["requestURI"]
        and e["responseStatus"]["code"] == 200
    ]
    assert all(e["user"]["username"] == SA_USER for e in writes), writes
    assert not [e for e in writes if e.get("impersonatedUser")], writes
    return len(writes)


def proposal_id(card: dict[str, Any], action: str = "stratus.approve") -> str:
    for block in card["blocks"]:
        for element in block.get("elements", []):
            if element.get("action_id") == action:
                return str(element["value"])
    raise AssertionError(f"no {action} button on the card: {blocks_text(card)[:800]}")


def database(pod: dict[str, Any]) -> Path:
    """The pod's database on this machine: the claim's volume is a real directory, and the
    lab's kubelet rewrites paths under a mount point to it."""
    pid = wait_until(lambda: serving(pod["metadata"]["name"]), 30, "the serve process")
    return Path(environ(pid)["STRATUS_DB"])


def counts(path: Path) -> dict[str, int]:
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        return {
            table: int(db.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
            for table in ("incidents", "proposals", "executions", "undo_entries", "audit_log")
        }


@pytest.fixture(scope="module")
def deployed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Deployed]:
    home = tmp_path_factory.mktemp("in-lab")
    server = LabServer(
        apps=["hotel", "shop"], mode=REALTIME, rbac=True, state_dir=home / "lab-state"
    ).start()
    playground = PlaygroundServer(
        PlaygroundConfig(
            event_retry_delays=(0.0,),
            rate_limits={"chat.postMessage": 10_000, "chat.update": 10_000},
        )
    ).start()
    stopped = False
    try:
        lab = Lab(server, server.write_kubeconfig(home / "admin", "hotel"))
        admin = kubectl_for("system", lab, home)
        admin.out("create", "namespace", NS, namespace=None)
        admin.out(
            "create",
            "secret",
            "generic",
            "stratus",
            f"--from-literal=slack-bot-token={playground.bot_token}",
            f"--from-literal=slack-app-token={playground.app_token}",
            f"--from-literal=audit-key={AUDIT_KEY}",
            f"--from-literal=alerts-token={ALERTS_TOKEN}",
            namespace=NS,
        )
        admin.out(
            "create",
            "configmap",
            "stratus-lab",
            f"--from-literal=STRATUS_SLACK_API_URL={playground.api_url}",
            # The alerts token turns the webhook on, which posts in a channel it must name.
            f"--from-literal=STRATUS_ALERT_CHANNEL={CHANNEL}",
            namespace=NS,
        )
        applied = admin.out("apply", "-k", str(OVERLAY), namespace=None)
        assert "deployment.apps/stratus created" in applied, applied
        running = Deployed(lab, playground, admin, home)
        running.ready_pod()  # every test starts from a serving pod
        yield running
        # Stopping the lab ends every pod's process: nothing is left behind.
        pids = [pid for pid, argv in children().items() if "serve" in argv and "cli" in argv]
        assert pids, "no stratus serve process ran"
        server.stop()
        stopped = True
        assert not [pid for pid in pids if alive(pid)]
        assert not [p for p, argv in children().items() if "serve" in argv and "cli" in argv]
    finally:
        playground.stop()
        if not stopped:
            server.stop()


def test_the_pod_is_ready_logs_json_and_serves_its_endpoints(deployed: Deployed) -> None:
    pod = deployed.ready_pod()
    ip = pod["status"]["podIP"]
    container = pod["spec"]["containers"][0]
    assert container["readinessProbe"]["httpGet"]["path"] == "/readyz"
    # No kubeconfig anywhere: the ServiceAccount's projected token.
    pid = wait_until(lambda: serving(pod["metadata"]["name"]), 30, "the serve process")
    env = environ(pid)
    assert "KUBECONFIG" not in env and env["KUBERNETES_SERVICE_HOST"], env
    with urllib.request.urlopen(f"http://{ip}:8080/readyz", timeout=10) as answer:
        ready = json.loads(answer.read())
    assert answer.status == 200, ready
    with urllib.request.urlopen(f"http://{ip}:8080/metrics", timeout=10) as answer:
        assert b"stratus_" in answer.read()
    logs = deployed.admin.out("logs", pod["metadata"]["name"], namespace=NS)
    records = [json.loads(line) for line in logs.splitlines() if line.startswith("{")]
    assert records and all({"time", "level", "message"} <= set(r) for r in records), logs
    assert "stratus bot running (socket mode)" in logs, logs
    assert "leading: holding the leader lease stratus/stratus-leader" in logs, logs
    for secret in (AUDIT_KEY, ALERTS_TOKEN, deployed.playground.bot_token):
        assert secret not in logs


def test_what_the_roles_leave_out_is_refused_to_the_pod_s_account(deployed: Deployed) -> None:
    account = deployed.as_account()
    assert "frontend" in account.out("get", "deployments", namespace="hotel")
    refusals: dict[str, tuple[tuple[str, ...], str | None]] = {
        "a Secret's value": (("get", "secret", "stratus", "-o", "yaml"), NS),
        "Secrets of a managed namespace": (("get", "secrets"), "hotel"),
        "deleting a namespace": (("delete", "namespace", "shop"), None),
        "writing in an unmanaged namespace": (("create", "configmap", "x"), "default"),
        "deleting in an unmanaged namespace": (("delete", "pods", "--all"), "kube-system"),
        # Managed, but no action patches or uses the scale subresource (kubectl scale does).
        "a verb outside the catalog": (("scale", "deployment/catalog", "--replicas=3"), "shop"),
    }
    for what, (args, namespace) in refusals.items():
        refused = account.run(*args, check=False, namespace=namespace)
        assert refused.returncode != 0, what
        assert "Forbidden" in refused.stderr or "forbidden" in refused.stderr, (what, refused)
        assert SA_USER in refused.stderr, (what, refused.stderr)


def test_investigate_fix_undo_restart_and_impersonation_through_the_pod(
    deployed: Deployed,
) -> None:
    first = deployed.ready_pod()
    slack = deployed.slack
    deployed.lab.control.post(f"/lab/v1/scenarios/{SCENARIO}/inject")
    assert deployed.replicas("recommendation") == 0
    delivery = slack.command("U0DAVE", "/stratus", "investigate hotel")
    assert delivery["ok"], delivery
    card = wait_until(
        lambda: deployed.message_with("stratus.approve", "recommendation"), 120, "the card"
    )
    pid = proposal_id(card)
    slack.click("U0ALICE", "stratus.approve", value=pid)
    wait_until(lambda: deployed.replicas("recommendation") == 1, 60, "the scale to land")
    # The write went out as the pod's ServiceAccount (the lab's audit log of writes).
    assert sent_by_account(deployed) == 1
    summary = blocks_text(
        wait_until(lambda: deployed.message_with("Incident summary"), 90, "the summary")
    )
    assert "Root cause" in summary and "U0ALICE" in summary, summary
    assert ":white_check_mark: resolved" in summary and "verified healthy" in summary, summary
    # Its JSON log lines carry the ids of the incident and the proposal they are about.
    logs = deployed.admin.out("logs", first["metadata"]["name"], namespace=NS)
    records = [json.loads(line) for line in logs.splitlines() if line.startswith("{")]
    assert any(r.get("proposal_id") == pid and r.get("incident_id") for r in records), logs
    check = deployed.lab.control.get(f"/lab/v1/scenarios/{SCENARIO}/check")
    assert check["passed"], check

    # Undo, through the pod.
    wait_until(lambda: deployed.message_with(f"`{pid}`", "stratus.undo"), 60, "Undo")
    slack.click("U0ALICE", "stratus.undo", value=pid)
    undo_card = wait_until(
        lambda: deployed.message_with("as before Stratus", "stratus.approve"), 60, "the undo card"
    )
    # The deployed policy lets nobody approve their own request: alice asked, bob approves.
    slack.click("U0BOB", "stratus.approve", value=proposal_id(undo_card))
    wait_until(lambda: deployed.replicas("recommendation") == 0, 60, "the undo to land")
    assert sent_by_account(deployed) == 2  # the fix and its undo
    wait_until(lambda: deployed.message_with("Undone:"), 60, "the undo's note")

    # Deleting the pod: the Deployment (Recreate) makes a new one, which takes the Lease and
    # finds the same database on the claim.
    path = database(first)
    before = counts(path)
    assert before["incidents"] >= 1 and before["proposals"] >= 2, before
    name = first["metadata"]["name"]
    deployed.admin.out("delete", "pod", name, "--wait=false", namespace=NS)
    second = deployed.ready_pod()
    assert second["metadata"]["name"] != name
    holder = deployed.admin.out(
        "get", "lease", "stratus-leader", "-o", "jsonpath={.spec.holderIdentity}", namespace=NS
    )
    assert second["metadata"]["name"] in holder, holder
    assert database(second) == path
    after = counts(path)
    assert after["incidents"] == before["incidents"]
    assert after["proposals"] == before["proposals"]
    assert after["audit_log"] >= before["audit_log"]

    # With the shipped impersonation component: U0ALICE is alice@example.com there, whom the
    # lab's RBAC grants nothing. Her approval is refused by the cluster, and the card says so.
    overlay = deployed.home / "overlay"
    overlay.mkdir()
    (overlay / "kustomization.yaml").write_text(
        "apiVersion: kustomize.config.k8s.io/v1beta1\n"
        "kind: Kustomization\n"
        f"resources: [{os.path.relpath(OVERLAY, overlay)}]\n"
        f"components: [{os.path.relpath(IMPERSONATION, overlay)}]\n"
    )
    applied = deployed.admin.out("apply", "-k", str(overlay), namespace=None)
    assert "clusterrole.rbac.authorization.k8s.io/stratus-impersonate created" in applied, applied
    wait_until(
        lambda: all(p["metadata"]["name"] != second["metadata"]["name"] for p in deployed.pods()),
        90,
        "the old pod to go",
    )
    third = deployed.ready_pod()
    pid_now = wait_until(lambda: serving(third["metadata"]["name"]), 30, "the serve process")
    assert environ(pid_now)["STRATUS_IMPERSONATION"].endswith("impersonation.yaml")
    seen = {m.get("ts") for m in deployed.messages()}
    delivery = slack.command("U0DAVE", "/stratus", "investigate hotel")
    assert delivery["ok"], delivery

    def new_card() -> dict[str, Any] | None:
        for message in deployed.messages():
            text = blocks_text(message)
            if message.get("ts") not in seen and "stratus.approve" in text:
                return message
        return None

    again = proposal_id(wait_until(new_card, 120, "a new card"))
    slack.click("U0ALICE", "stratus.approve", value=again)
    refused = blocks_text(
        wait_until(
            lambda: deployed.message_with(f"`{again}`", "the cluster refused this for"),
            90,
            "the refusal on the card",
        )
    )
    assert 'User \\"alice@example.com\\" cannot update resource \\"deployments\\"' in refused
    assert deployed.replicas("recommendation") == 0
    # Nothing recorded as applied: no execution, no undo entry.
    refused_counts = counts(path)
    assert refused_counts["executions"] == after["executions"], refused_counts
    assert refused_counts["undo_entries"] == after["undo_entries"], refused_counts
