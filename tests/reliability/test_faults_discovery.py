"""Issue 19 §5, faults: the client's discovery reads the API server too. The first look at a
kind makes the dynamic client fetch that API group's resource list; a 500 or a 409 on that
read must come out as Stratus's own error (``Unavailable``, ``Conflict``), not as the client
library's exception — the 40-incident run met it as a crash of ``IncidentWorkflow.start``
(seed 576480678: the namespace's first read).
"""

from __future__ import annotations

import hashlib
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from lab.runner import LabServer
from tests.faultproxy import fault_proxy
from tools import errors
from tools.k8s import KubeClient
from tools.objects import ObjectRef


def forget_discovery(host: str) -> None:
    name = f"osrcp-{hashlib.md5(host.encode(), usedforsecurity=False).hexdigest()}.json"
    (Path(tempfile.gettempdir()) / name).unlink(missing_ok=True)


@pytest.fixture
def lab_server() -> Iterator[LabServer]:
    server = LabServer(apps=["hotel"]).start()
    yield server
    server.stop()


@pytest.mark.parametrize(("status", "raised"), [(500, errors.Unavailable), (409, errors.Conflict)])
def test_a_failed_discovery_read_is_a_stratus_error_and_the_next_look_succeeds(
    lab_server: LabServer, tmp_path: Path, status: int, raised: type[errors.ToolError]
) -> None:
    with fault_proxy(lab_server.url, tmp_path / "proxied-kubeconfig") as proxy:
        proxy.fail("GET", r"^/api/v1$", status=status, times=1)
        kube = KubeClient(kubeconfig=str(proxy.kubeconfig))
        # The client library caches discovery in one /tmp file per server URL, shared by
        # every process: a proxy on a port an earlier test's server used would be answered
        # from that cache, and the failing read never made (a fresh-clone run met it).
        forget_discovery(kube.host)
        try:
            with pytest.raises(raised):
                kube.find(ObjectRef("Namespace", "hotel"))
            assert proxy.seen("GET", r"^/api/v1$", outcome="failed")  # it was discovery
            found = kube.find(ObjectRef("Namespace", "hotel"))
        finally:
            kube.close()
    assert found is not None and found["metadata"]["name"] == "hotel"
