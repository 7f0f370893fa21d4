"""Read tools against faulty lab scenarios: the summaries point at the fault, and stay small."""

from __future__ import annotations

import json

from tests.conftest import Lab
from tools.reads import ClusterReader


def inject(lab: Lab, scenario: str) -> None:
    lab.control.post(f"/lab/v1/scenarios/{scenario}/inject")


def test_workload_health_and_pod_status_of_a_crash_loop(lab: Lab, reader: ClusterReader) -> None:
    healthy = reader.workload_health("hotel")
    assert healthy["unhealthy_workloads"] == 0 and healthy["unready_pods"]["items"] == []
    inject(lab, "hotel-rate-buggy-image")
    health = reader.workload_health("hotel")
    assert health["unhealthy_workloads"] == 1
    assert health["workloads"]["items"][0]["name"] == "rate"  # unhealthy first
    pod = health["unready_pods"]["items"][0]
    status = reader.pod_status("hotel", pod["name"])
    container = status["containers"][0]
    assert container["reason"] == "CrashLoopBackOff" and container["restarts"] >= 1
    assert container["last_termination"] == {"reason": "Error", "exit_code": 2}
    assert status["owner"].startswith("replicaset/rate-")


def test_events_are_deduplicated_counted_and_newest_first(lab: Lab, reader: ClusterReader) -> None:
    inject(lab, "hotel-profile-image-not-found")
    # The instant clock only moves for progress; let the pull back-off repeat for two minutes.
    lab.control.post("/lab/v1/settle", {"horizon": 120})
    events = reader.events("hotel", limit=50)
    backoffs = [
        e
        for e in events["events"]["items"]
        if e["reason"] == "BackOff" and "profile" in e["object"]
    ]
    assert len(backoffs) == 1 and backoffs[0]["count"] > 1
    stamps = [e["last_seen"] for e in events["events"]["items"]]
    assert stamps == sorted(stamps, reverse=True)
    assert events["warnings"] >= 1


def test_logs_extract_errors_and_collapse_repeats(lab: Lab, reader: ClusterReader) -> None:
    inject(lab, "hotel-geo-target-port")
    search = [
        p for p in reader.workload_health("hotel")["workloads"]["items"] if p["name"] == "search"
    ]
    assert search
    pods = reader.kube.list("v1", "Pod", namespace="hotel", label_selector="app=search")
    logs = reader.logs("hotel", pods[0]["metadata"]["name"])
    errors = logs["error_lines"]["items"]
    assert any("request to geo:8083 failed" in line for line in errors)
    assert any("(x" in line for line in logs["tail"])  # repeated lines collapsed
    assert len(json.dumps(logs)) < 6000


def test_service_check_names_a_wrong_target_port_and_a_bad_selector(
    lab: Lab, reader: ClusterReader
) -> None:
    assert reader.service_check("hotel", "geo")["problems"] == []
    inject(lab, "hotel-geo-target-port")
    check = reader.service_check("hotel", "geo")
    assert any("targetPort 9999" in p and "8083" in p for p in check["problems"])
    inject(lab, "shop-catalog-selector")
    catalog = reader.service_check("shop", "catalog")
    assert catalog["matching_pods"] == 0
    assert any("matches no pod" in p for p in catalog["problems"])


def test_nodes_rollout_history_and_recent_changes(lab: Lab, reader: ClusterReader) -> None:
    inject(lab, "hotel-all-nodes-cordoned")
    assert reader.nodes()["schedulable"] == 0
    inject(lab, "hotel-search-wrong-command")
    history = reader.rollout_history("hotel", "search")
    assert history["current_revision"] == 2
    assert [r["revision"] for r in history["revisions"]["items"]] == [2, 1]
    changes = reader.recent_changes("hotel", "search")
    assert changes["previous_revision"] == 1
    assert (
        "+        - /usr/local/bin/hotel-search-v2" in changes["diff"]
        or "hotel-search-v2" in changes["diff"]
    )
    assert reader.namespace_exists("hotel") and not reader.namespace_exists("nowhere")


def test_the_node_controllers_unschedulable_taint_is_not_a_human_change() -> None:
    from tools.objects import normalized

    cordoned = {"kind": "Node", "metadata": {"name": "n"}, "spec": {"unschedulable": True}}
    tainted = {
        "kind": "Node",
        "metadata": {"name": "n"},
        "spec": {
            "unschedulable": True,
            "taints": [{"key": "node.kubernetes.io/unschedulable", "effect": "NoSchedule"}],
        },
    }
    assert normalized(tainted) == normalized(cordoned)
    own = {"key": "dedicated", "value": "db", "effect": "NoSchedule"}
    tainted["spec"]["taints"].append(own)
    assert normalized(tainted)["spec"]["taints"] == [own]  # a person's taint still counts
