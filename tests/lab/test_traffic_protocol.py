"""The traffic model: callers are explicit (outside clients call entry Services, containers
call what their images call), and a Service port's protocol matters (callers speak TCP)."""

from __future__ import annotations

from pathlib import Path

from tests.conftest import Lab, kubectl_for

_SERVICE = """
apiVersion: v1
kind: Service
metadata:
  name: web
  annotations: {lab.stratus.dev/external-traffic: "true"}
spec:
  selector: {app: web}
  ports: [{port: 80, targetPort: 80, protocol: UDP}]
"""


def test_udp_port_in_front_of_a_tcp_server_fails(lab: Lab, tmp_path: Path) -> None:
    kubectl = kubectl_for("system", lab, tmp_path)
    kubectl.run("create", "deployment", "web", "--image=nginx:1.27")
    kubectl.run("apply", "-f", "-", stdin=_SERVICE)
    lab.settle()
    web = lab.control.get("/lab/v1/namespaces/hotel/traffic")["web"]
    assert web["error_rate"] == 1.0
    assert "connection refused" in web["last_error"]
    kubectl.run(
        "patch",
        "svc",
        "web",
        "--type=json",
        "-p",
        '[{"op":"replace","path":"/spec/ports/0/protocol","value":"TCP"}]',
    )
    lab.settle()
    assert lab.control.get("/lab/v1/namespaces/hotel/traffic")["web"]["error_rate"] == 0.0


def test_a_service_nobody_calls_fails_nothing(lab: Lab, tmp_path: Path) -> None:
    kubectl = kubectl_for("system", lab, tmp_path)
    kubectl.run("create", "service", "clusterip", "orphan", "--tcp=80:8080")  # selects no pod
    lab.settle()
    traffic = lab.control.get("/lab/v1/namespaces/hotel/traffic")
    assert "orphan" not in traffic
    # Called services are counted from their callers' requests, entry ones from outside.
    assert traffic["geo"]["requests"] > 0 and traffic["frontend"]["requests"] > 0
    assert all(t["error_rate"] == 0 for t in traffic.values())
    # A Service someone calls still fails when it has nothing behind it.
    kubectl.run("scale", "deployment", "geo", "--replicas=0")
    traffic = lab.control.get("/lab/v1/namespaces/hotel/traffic")
    assert traffic["geo"]["error_rate"] == 1.0
    assert "no ready endpoints" in traffic["geo"]["last_error"]
