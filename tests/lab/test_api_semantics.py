"""REST semantics over raw HTTP: versions, conflicts, dry-run, watch, and bad input."""

from __future__ import annotations

import http.client
import json
import threading
import urllib.parse
from typing import Any

import pytest

from tests.conftest import Lab


def call(
    lab: Lab,
    method: str,
    path: str,
    body: Any = None,
    content_type: str = "application/json",
    accept: str = "application/json",
) -> tuple[int, Any]:
    parsed = urllib.parse.urlparse(lab.url)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
    data = (
        body
        if isinstance(body, bytes)
        else (json.dumps(body).encode() if body is not None else None)
    )
    connection.request(
        method, path, body=data, headers={"Content-Type": content_type, "Accept": accept}
    )
    response = connection.getresponse()
    raw = response.read()
    connection.close()
    try:
        return response.status, json.loads(raw)
    except ValueError:
        return response.status, raw.decode()


CM = "/api/v1/namespaces/hotel/configmaps"


def _configmap(name: str, **data: str) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def test_create_read_update_with_versions_and_conflicts(lab: Lab) -> None:
    status, created = call(lab, "POST", CM, _configmap("c1", a="1"))
    assert status == 201
    meta = created["metadata"]
    assert meta["uid"] and meta["creationTimestamp"] and int(meta["resourceVersion"]) > 0
    status, again = call(lab, "POST", CM, _configmap("c1"))
    assert status == 409 and again["reason"] == "AlreadyExists" and again["kind"] == "Status"
    stale = dict(created, data={"a": "2"})
    status, updated = call(lab, "PUT", f"{CM}/c1", stale)
    assert status == 200
    assert int(updated["metadata"]["resourceVersion"]) > int(meta["resourceVersion"])
    status, conflict = call(lab, "PUT", f"{CM}/c1", dict(created, data={"a": "3"}))
    assert status == 409 and conflict["reason"] == "Conflict"
    assert call(lab, "GET", f"{CM}/c1")[1]["data"] == {"a": "2"}


def test_generation_moves_only_with_the_spec(lab: Lab) -> None:
    path = "/apis/apps/v1/namespaces/hotel/deployments/geo"
    generation = call(lab, "GET", path)[1]["metadata"]["generation"]
    call(lab, "PATCH", path, {"metadata": {"labels": {"x": "y"}}}, "application/merge-patch+json")
    assert call(lab, "GET", path)[1]["metadata"]["generation"] == generation
    call(lab, "PATCH", path, {"spec": {"replicas": 2}}, "application/merge-patch+json")
    deployment = call(lab, "GET", path)[1]
    assert deployment["metadata"]["generation"] == generation + 1
    assert deployment["status"]["observedGeneration"] == generation + 1


def test_dry_run_validates_but_never_persists(lab: Lab) -> None:
    status, _ = call(lab, "POST", f"{CM}?dryRun=All", _configmap("ghost"))
    assert status == 201
    assert call(lab, "GET", f"{CM}/ghost")[0] == 404
    path = "/apis/apps/v1/namespaces/hotel/deployments/geo"
    version = call(lab, "GET", path)[1]["metadata"]["resourceVersion"]
    status, preview = call(
        lab,
        "PATCH",
        f"{path}?dryRun=All",
        {"spec": {"replicas": 5}},
        "application/merge-patch+json",
    )
    assert status == 200 and preview["spec"]["replicas"] == 5
    current = call(lab, "GET", path)[1]
    assert current["spec"]["replicas"] == 1 and current["metadata"]["resourceVersion"] == version
    status, _ = call(lab, "DELETE", f"{path}?dryRun=All")
    assert status == 200 and call(lab, "GET", path)[0] == 200
    status, invalid = call(
        lab,
        "PATCH",
        f"{path}?dryRun=All",
        {"spec": {"replicas": -1}},
        "application/merge-patch+json",
    )
    assert status == 422 and invalid["reason"] == "Invalid"


def test_status_is_kept_apart_from_spec(lab: Lab) -> None:
    path = "/apis/apps/v1/namespaces/hotel/deployments/geo"
    deployment = call(lab, "GET", path)[1]
    deployment["status"] = {"replicas": 99}
    call(lab, "PUT", path, deployment)
    assert call(lab, "GET", path)[1]["status"]["replicas"] == 1


def test_list_kinds_selectors_and_tables(lab: Lab) -> None:
    status, pods = call(lab, "GET", "/api/v1/namespaces/hotel/pods?labelSelector=app%3Dgeo")
    assert status == 200 and pods["kind"] == "PodList" and len(pods["items"]) == 1
    assert pods["items"][0]["kind"] == "Pod" and pods["items"][0]["apiVersion"] == "v1"
    status, table = call(
        lab,
        "GET",
        "/api/v1/namespaces/hotel/pods",
        accept="application/json;as=Table;v=v1;g=meta.k8s.io",
    )
    assert table["kind"] == "Table"
    names = [c["name"] for c in table["columnDefinitions"]]
    assert names[:5] == ["Name", "Ready", "Status", "Restarts", "Age"]
    for selector in ("app in (geo", "a b=c", "=geo", "app==a==b"):
        status, error = call(
            lab, "GET", "/api/v1/pods?labelSelector=" + urllib.parse.quote(selector)
        )
        assert status == 400 and error["kind"] == "Status", selector


def test_owner_garbage_collection(lab: Lab) -> None:
    call(lab, "DELETE", "/apis/apps/v1/namespaces/hotel/deployments/geo")
    rs = call(lab, "GET", "/apis/apps/v1/namespaces/hotel/replicasets?labelSelector=app%3Dgeo")
    pods = call(lab, "GET", "/api/v1/namespaces/hotel/pods?labelSelector=app%3Dgeo")
    assert rs[1]["items"] == [] and pods[1]["items"] == []
    call(
        lab,
        "DELETE",
        "/apis/apps/v1/namespaces/hotel/deployments/user",
        {"propagationPolicy": "Orphan"},
    )
    orphans = call(
        lab, "GET", "/apis/apps/v1/namespaces/hotel/replicasets?labelSelector=app%3Duser"
    )
    assert len(orphans[1]["items"]) == 1
    assert not orphans[1]["items"][0]["metadata"].get("ownerReferences")


def test_scale_subresource(lab: Lab) -> None:
    path = "/apis/apps/v1/namespaces/hotel/deployments/geo/scale"
    status, scale = call(lab, "GET", path)
    assert status == 200 and scale["kind"] == "Scale" and scale["spec"]["replicas"] == 1
    status, scaled = call(
        lab, "PATCH", path, {"spec": {"replicas": 2}}, "application/merge-patch+json"
    )
    assert status == 200 and scaled["spec"]["replicas"] == 2
    assert call(lab, "GET", path)[1]["status"]["replicas"] == 2


def test_watch_streams_changes_after_a_version(lab: Lab) -> None:
    version = call(lab, "GET", CM)[1]["metadata"]["resourceVersion"]
    parsed = urllib.parse.urlparse(lab.url)
    events: list[dict[str, Any]] = []

    def watch() -> None:
        connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=30)
        connection.request(
            "GET",
            f"{CM}?watch=true&resourceVersion={version}"
            "&timeoutSeconds=2&fieldSelector=metadata.name%3Dwatched",
        )
        response = connection.getresponse()
        for line in response:
            if line.strip():
                events.append(json.loads(line))
        connection.close()

    watcher = threading.Thread(target=watch)
    watcher.start()
    call(lab, "POST", CM, _configmap("watched", a="1"))
    call(lab, "POST", CM, _configmap("unwatched"))
    call(lab, "PATCH", f"{CM}/watched", {"data": {"a": "2"}}, "application/merge-patch+json")
    call(lab, "DELETE", f"{CM}/watched")
    watcher.join(timeout=10)
    assert [e["type"] for e in events] == ["ADDED", "MODIFIED", "DELETED"]
    assert events[1]["object"]["data"] == {"a": "2"}


def test_watch_from_a_version_that_is_too_old_says_expired(lab: Lab) -> None:
    parsed = urllib.parse.urlparse(lab.url)
    connection = http.client.HTTPConnection(parsed.hostname, parsed.port, timeout=10)
    connection.request("GET", f"{CM}?watch=true&resourceVersion=1&timeoutSeconds=1")
    body = connection.getresponse().read().decode().strip().splitlines()
    connection.close()
    event = json.loads(body[0])
    assert event["type"] == "ERROR" and event["object"]["code"] == 410


BAD_BODIES = [
    ("POST", CM, b"{not json", "application/json", 400),
    ("POST", CM, b"- just\n- a list\n", "application/yaml", 400),
    (
        "POST",
        CM,
        json.dumps({"kind": "Pod", "apiVersion": "v1", "metadata": {"name": "x"}}).encode(),
        "application/json",
        400,
    ),
    ("POST", CM, json.dumps({"metadata": {"name": "Bad_Name"}}).encode(), "application/json", 422),
    (
        "POST",
        "/api/v1/namespaces/hotel/pods",
        json.dumps({"metadata": {"name": "p"}, "spec": {"containers": [{"name": "c"}]}}).encode(),
        "application/json",
        422,
    ),
    (
        "POST",
        "/api/v1/namespaces/nowhere/configmaps",
        json.dumps({"metadata": {"name": "x"}}).encode(),
        "application/json",
        404,
    ),
    ("PATCH", f"{CM}/hotel-config", b"[1, 2", "application/json-patch+json", 400),
    ("PATCH", f"{CM}/hotel-config", b'{"a": 1}', "application/json-patch+json", 400),
    (
        "PATCH",
        f"{CM}/hotel-config",
        b'[{"op": "remove", "path": "/nope"}]',
        "application/json-patch+json",
        422,
    ),
    ("PATCH", f"{CM}/hotel-config", b'{"data": {}}', "text/plain", 415),
    (
        "PATCH",
        "/apis/apps/v1/namespaces/hotel/deployments/geo",
        b'{"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}',
        "application/strategic-merge-patch+json",
        400,
    ),
    ("GET", "/apis/apps/v1/namespaces/hotel/widgets", None, "application/json", 404),
    ("GET", "/apis/nothing.io/v1", None, "application/json", 404),
    ("GET", f"{CM}/missing", None, "application/json", 404),
    ("DELETE", f"{CM}/missing", None, "application/json", 404),
    (
        "PUT",
        "/apis/apps/v1/namespaces/hotel/deployments/geo",
        json.dumps(
            {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": "other"}}
        ).encode(),
        "application/json",
        400,
    ),
    ("GET", f"{CM}?dryRun=Maybe", None, "application/json", 200),
    (
        "POST",
        f"{CM}?dryRun=Maybe",
        json.dumps({"metadata": {"name": "x"}}).encode(),
        "application/json",
        400,
    ),
]


@pytest.mark.parametrize(("method", "path", "body", "content_type", "code"), BAD_BODIES)
def test_bad_input_gets_the_right_status_and_a_status_body(
    lab: Lab, method: str, path: str, body: bytes | None, content_type: str, code: int
) -> None:
    status, answer = call(lab, method, path, body, content_type)
    assert status == code, answer
    if code >= 400:
        assert answer["kind"] == "Status" and answer["code"] == code and answer["message"]
    assert call(lab, "GET", "/healthz")[0] == 200


def test_rbac_denials_answer_403(lab: Lab) -> None:
    lab.control.request(
        "PUT",
        "/lab/v1/rbac/denials",
        {"denials": [{"verb": "patch", "resource": "deployments", "namespace": "hotel"}]},
    )
    try:
        status, answer = call(
            lab,
            "PATCH",
            "/apis/apps/v1/namespaces/hotel/deployments/geo",
            {"spec": {"replicas": 3}},
            "application/merge-patch+json",
        )
        assert status == 403 and answer["reason"] == "Forbidden"
        assert 'cannot patch resource "deployments"' in answer["message"]
        assert call(lab, "GET", "/apis/apps/v1/namespaces/hotel/deployments/geo")[0] == 200
    finally:
        lab.control.request("PUT", "/lab/v1/rbac/denials", {"denials": []})


def test_deletecollection_of_pods_by_selector(lab: Lab) -> None:
    status, gone = call(lab, "DELETE", "/api/v1/namespaces/hotel/pods?labelSelector=tier%3Dcache")
    assert status == 200 and gone["kind"] == "PodList" and len(gone["items"]) == 3
    remaining = call(lab, "GET", "/api/v1/namespaces/hotel/pods?labelSelector=tier%3Dcache")[1]
    assert len(remaining["items"]) == 3  # their replica sets made new ones
    assert {p["metadata"]["uid"] for p in remaining["items"]}.isdisjoint(
        p["metadata"]["uid"] for p in gone["items"]
    )
