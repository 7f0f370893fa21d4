"""Pure functions of the emulator: patch types and selectors."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from lab.cluster.errors import ApiError
from lab.cluster.patching import apply_patch, merge_patch, strategic_merge
from lab.cluster.selectors import (
    matches_fields,
    matches_labels,
    parse_field_selector,
    parse_label_selector,
)

SMP = "application/strategic-merge-patch+json"
scalars = st.one_of(st.integers(), st.text(max_size=5), st.booleans())
documents = st.recursive(
    scalars, lambda inner: st.dictionaries(st.text(max_size=4), inner, max_size=4), max_leaves=12
)


@given(
    st.dictionaries(st.text(max_size=4), documents, max_size=5),
    st.dictionaries(st.text(max_size=4), documents, max_size=5),
)
def test_merge_patch_sets_every_patched_key_and_keeps_the_rest(
    target: dict[str, Any], patch: dict[str, Any]
) -> None:
    result = merge_patch(target, patch)
    for key, value in patch.items():
        if not isinstance(value, dict):
            assert result[key] == value
    for key in target.keys() - patch.keys():
        assert result[key] == target[key]
    assert merge_patch(result, patch) == result  # idempotent


def test_merge_patch_null_deletes() -> None:
    assert merge_patch({"a": 1, "b": {"c": 2, "d": 3}}, {"a": None, "b": {"c": None}}) == {
        "b": {"d": 3}
    }


def _deployment() -> dict[str, Any]:
    return {
        "kind": "Deployment",
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "a:1",
                            "ports": [{"containerPort": 80, "name": "http"}],
                            "env": [{"name": "A", "value": "1"}, {"name": "B", "value": "2"}],
                            "args": ["--x"],
                        },
                        {"name": "sidecar", "image": "s:1"},
                    ],
                    "tolerations": [{"key": "k", "operator": "Exists"}],
                }
            }
        },
    }


def test_strategic_merge_follows_patch_merge_keys() -> None:
    patch = {
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "app",
                            "image": "a:2",
                            "env": [{"name": "B", "$patch": "delete"}, {"name": "C", "value": "3"}],
                            "ports": [{"containerPort": 80, "protocol": "TCP"}],
                            "args": ["--y"],
                        }
                    ],
                    "tolerations": [{"key": "other", "operator": "Exists"}],
                }
            }
        }
    }
    result = strategic_merge(_deployment(), patch, kind="Deployment")
    app, sidecar = result["spec"]["template"]["spec"]["containers"]
    assert app["image"] == "a:2" and sidecar == {"name": "sidecar", "image": "s:1"}
    assert app["env"] == [{"name": "A", "value": "1"}, {"name": "C", "value": "3"}]
    assert app["ports"] == [{"containerPort": 80, "name": "http", "protocol": "TCP"}]
    assert app["args"] == ["--y"]  # no merge key: replaced
    assert result["spec"]["template"]["spec"]["tolerations"] == [
        {"key": "other", "operator": "Exists"}
    ]


def test_strategic_merge_directives() -> None:
    ordered = strategic_merge(
        _deployment(),
        {
            "spec": {
                "template": {
                    "spec": {
                        "$setElementOrder/containers": [{"name": "sidecar"}, {"name": "app"}],
                        "containers": [{"name": "app", "image": "a:3"}],
                    }
                }
            }
        },
        kind="Deployment",
    )
    assert [c["name"] for c in ordered["spec"]["template"]["spec"]["containers"]] == [
        "sidecar",
        "app",
    ]
    replaced = strategic_merge(
        _deployment(),
        {
            "spec": {
                "template": {
                    "spec": {
                        "containers": [{"name": "only", "image": "o:1"}, {"$patch": "replace"}]
                    }
                }
            }
        },
        kind="Deployment",
    )
    assert replaced["spec"]["template"]["spec"]["containers"] == [{"name": "only", "image": "o:1"}]
    service = {
        "kind": "Service",
        "spec": {"ports": [{"port": 80, "targetPort": 8080}, {"port": 443, "targetPort": 8443}]},
    }
    patched = strategic_merge(
        service, {"spec": {"ports": [{"port": 80, "targetPort": 9090}]}}, kind="Service"
    )
    assert patched["spec"]["ports"] == [
        {"port": 80, "targetPort": 9090},
        {"port": 443, "targetPort": 8443},
    ]
    retained = strategic_merge({"a": 1, "b": 2}, {"$retainKeys": ["a"], "a": 5}, kind="")
    assert retained == {"a": 5}
    finalizers = strategic_merge(
        {"metadata": {"finalizers": ["x", "y"]}},
        {"metadata": {"$deleteFromPrimitiveList/finalizers": ["x"]}},
        kind="",
    )
    assert finalizers == {"metadata": {"finalizers": ["y"]}}


@pytest.mark.parametrize(
    ("body", "content_type", "code"),
    [
        (b"{", SMP, 400),
        (b"[]", SMP, 400),
        (
            json.dumps({"spec": {"template": {"spec": {"containers": [{"image": "x"}]}}}}).encode(),
            SMP,
            400,
        ),
        (b'{"$patch": "explode"}', SMP, 400),
        (b'[{"op": "move", "from": "/nope", "path": "/x"}]', "application/json-patch+json", 422),
        (b'[{"op": "launch"}]', "application/json-patch+json", 422),
        (b"{}", "application/apply-patch+yaml", 415),
    ],
)
def test_bad_patches_are_api_errors(body: bytes, content_type: str, code: int) -> None:
    with pytest.raises(ApiError) as error:
        apply_patch(_deployment(), body, content_type)
    assert error.value.code == code


@pytest.mark.parametrize(
    ("selector", "labels", "expected"),
    [
        ("app=geo", {"app": "geo"}, True),
        ("app==geo", {"app": "geo"}, True),
        ("app!=geo", {}, True),
        ("app in (a, geo),tier", {"app": "geo", "tier": "x"}, True),
        ("app notin (geo)", {"app": "geo"}, False),
        ("!tier", {"app": "geo"}, True),
        ("tier", {"app": "geo"}, False),
        ("example.com/team=sre", {"example.com/team": "sre"}, True),
    ],
)
def test_label_selectors(selector: str, labels: dict[str, str], expected: bool) -> None:
    assert matches_labels(parse_label_selector(selector), labels) is expected


def test_field_selectors() -> None:
    pod = {"metadata": {"name": "p"}, "status": {"phase": "Running"}, "spec": {"nodeName": "n1"}}
    allowed = ("status.phase", "spec.nodeName")
    assert matches_fields(
        parse_field_selector("status.phase=Running,spec.nodeName!=n2", allowed, "Pod"), pod
    )
    assert not matches_fields(parse_field_selector("metadata.name=q", allowed, "Pod"), pod)
    with pytest.raises(ApiError):
        parse_field_selector("spec.bogus=1", allowed, "Pod")
