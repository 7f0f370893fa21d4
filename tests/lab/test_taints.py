"""NoExecute taints evict running pods that do not tolerate them (at once, or when their
tolerationSeconds run out); their controllers replace them on other nodes."""

from __future__ import annotations

import json
from pathlib import Path

from tests.conftest import Lab, kubectl_for


def test_no_execute_taint_evicts_running_pods(lab: Lab, tmp_path: Path) -> None:
    kubectl = kubectl_for("system", lab, tmp_path)

    def on_node_1() -> list[str]:
        pods = json.loads(kubectl.out("get", "pods", "-o", "json"))["items"]
        return [p["metadata"]["name"] for p in pods if p["spec"].get("nodeName") == "node-1"]

    victims = on_node_1()
    assert victims, "no hotel pod runs on node-1"
    kubectl.run(
        "run",
        "patient",
        "--image=nginx:1.27",
        "--overrides",
        json.dumps(
            {
                "spec": {
                    "nodeName": "node-1",
                    "tolerations": [
                        {
                            "key": "maintenance",
                            "operator": "Exists",
                            "effect": "NoExecute",
                            "tolerationSeconds": 60,
                        }
                    ],
                }
            }
        ),
    )
    kubectl.run("taint", "nodes", "node-1", "maintenance=now:NoExecute", namespace=None)
    assert on_node_1() == ["patient"]
    events = kubectl.out("get", "events", "--field-selector", "reason=TaintManagerEviction")
    assert f"Marking for deletion Pod hotel/{victims[0]}" in events
    deployments = json.loads(kubectl.out("get", "deployments", "-o", "json"))["items"]
    assert all(d["status"].get("readyReplicas") == d["spec"]["replicas"] for d in deployments)
    lab.control.post("/lab/v1/settle", {"horizon": 90})
    assert on_node_1() == []
    kubectl.run("taint", "nodes", "node-1", "maintenance-", namespace=None)
