"""``stratus serve`` as a pod runs it: no kubeconfig, the ServiceAccount's files, RBAC on.

The lab runs with RBAC on (HTTPS); the account's token comes from ``kubectl create token``
and sits with the lab's CA and the namespace in ``$STRATUS_SERVICEACCOUNT_DIR``, beside
``KUBERNETES_SERVICE_HOST/PORT``. Leader election is on by default there: an account that may
not create the Lease is told so in one line (a standby waiting for ever behind a 403 would
look healthy); granted, the bot takes the Lease in its own namespace, serves, and releases it
on SIGTERM.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import urlparse

import pytest

from lab.runner import LabServer
from lab.slack.server import PlaygroundServer
from tests.bot.serve_process import ServeProcess, serve_env
from tests.conftest import Kubectl, Lab, kubectl_for
from tools.leader import LEASE_NAME

NS = "stratus"


@pytest.fixture(scope="module")
def rbac_lab(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    server = LabServer(apps=[], rbac=True).start()
    kubeconfig = server.write_kubeconfig(tmp_path_factory.mktemp("incluster") / "admin", NS)
    yield Lab(server, kubeconfig)
    server.stop()


def _pod_env(
    lab: Lab, admin: Kubectl, playground: PlaygroundServer, directory: Path
) -> dict[str, str]:
    mounted = directory / "serviceaccount"
    mounted.mkdir()
    (mounted / "token").write_text(admin.out("create", "token", "stratus", namespace=NS).strip())
    (mounted / "ca.crt").write_text(lab.server.ca_pem or "")
    (mounted / "namespace").write_text(NS)
    home = directory / "home"
    home.mkdir()
    url = urlparse(lab.url)
    env = serve_env(playground, lab.kubeconfig, directory)
    del env["KUBECONFIG"]
    env.update(
        HOME=str(home),
        KUBERNETES_SERVICE_HOST=str(url.hostname),
        KUBERNETES_SERVICE_PORT=str(url.port),
        STRATUS_SERVICEACCOUNT_DIR=str(mounted),
        STRATUS_SHUTDOWN_SECONDS="5",
    )
    env.pop("STRATUS_LEADER_ELECTION", None)
    return env


def test_serve_in_a_pod_takes_the_lease_as_its_serviceaccount(
    rbac_lab: Lab, playground: PlaygroundServer, tmp_path: Path
) -> None:
    admin = kubectl_for("system", rbac_lab, tmp_path)
    admin.run("create", "namespace", NS, namespace=None)
    admin.run("create", "serviceaccount", "stratus", namespace=NS)
    admin.run("create", "role", "lease-reader", "--verb=get", "--resource=leases", namespace=NS)
    admin.run(
        "create",
        "rolebinding",
        "lease-reader",
        "--role=lease-reader",
        f"--serviceaccount={NS}:stratus",
        namespace=NS,
    )
    env = _pod_env(rbac_lab, admin, playground, tmp_path)

    refused = ServeProcess(env)
    try:
        code = refused.wait(timeout=120)
    finally:
        refused.close()
    assert code == 1, refused.output
    errors = [line for line in refused.lines if line.startswith("Error: ")]
    assert len(errors) == 1, refused.output
    assert "lease/stratus-leader in stratus" in errors[0] and "forbidden" in errors[0]
    assert "system:serviceaccount:stratus:stratus" in errors[0]
    assert "Traceback" not in refused.output

    admin.run(
        "create",
        "role",
        "lease-holder",
        "--verb=get,create,update",
        "--resource=leases",
        namespace=NS,
    )
    admin.run(
        "create",
        "rolebinding",
        "lease-holder",
        "--role=lease-holder",
        f"--serviceaccount={NS}:stratus",
        namespace=NS,
    )
    bot = ServeProcess(env)
    try:
        bot.running()
        line = bot.wait_for_line("leading: holding the leader lease stratus/stratus-leader as")
        identity = line.split()[-1]
        held = admin.out(
            "get", "lease", LEASE_NAME, "-o", "jsonpath={.spec.holderIdentity}", namespace=NS
        )
        assert held == identity
        bot.signal(signal.SIGTERM)
        assert bot.wait(timeout=30) == 0, bot.output
    finally:
        bot.close()
    assert (
        admin.out("get", "lease", LEASE_NAME, "-o", "jsonpath={.spec.holderIdentity}", namespace=NS)
        == ""
    )
