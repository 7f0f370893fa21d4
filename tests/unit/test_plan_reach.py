"""No action of the catalog widens what a pod template reaches (issue 19, attack 1).

The ServiceAccount may write pod templates, which in Kubernetes means it may read the
namespace's Secrets through them, run any of its ServiceAccounts and any image. Stratus's own
plans never do: for every action kind, over the lab's recorded objects (the same cases as the
round trip, tests/unit/test_plan_roundtrip.py), the object a plan writes references no Secret
(env ``secretKeyRef``, ``envFrom`` ``secretRef``, secret volumes, projected secrets, image pull
secrets), no ServiceAccount and no image that the object before — or, for ``rollout-undo``, a
revision it ran — did not, except the one image ``set-image`` names. The references are found
here by walking the whole object, not with the product's own reader, so a field the product
forgot is caught too. Then the holes an attacker would try, one by one: each is refused with the
reason, before anything is written.
"""

from __future__ import annotations

import copy
from typing import Any, ClassVar

import pytest
from hypothesis import given

from tests.unit.test_plan_roundtrip import CASES, SETTINGS, WORLD, Case, planned
from tools import actions, errors
from tools.actions import Action

# The two irreversible actions only delete: nothing they write can reference anything.
DELETES = {"delete-pod", "delete-job"}


def references(obj: object) -> set[tuple[str, str]]:
    """Every Secret, ServiceAccount and image ``obj`` names, wherever it sits."""
    found: set[tuple[str, str]] = set()
    if isinstance(obj, list):
        for item in obj:
            found |= references(item)
    if not isinstance(obj, dict):
        return found
    for key, value in obj.items():
        if key in ("secretKeyRef", "secretRef", "secret") and isinstance(value, dict):
            name = value.get("name") or value.get("secretName")
            found.add(("secret", f"{name}/{value.get('key', '*')}"))
        elif key == "imagePullSecrets" and isinstance(value, list):
            found |= {("secret", f"{p.get('name')}/*") for p in value}
        elif key in ("serviceAccountName", "serviceAccount", "automountServiceAccountToken"):
            found.add(("identity", f"{key}={value}"))
        elif key == "image" and isinstance(value, str):
            found.add(("image", value))
        found |= references(value)
    return found


def check_reach(action: Action, plan: actions.WritePlan, history: list[dict[str, Any]]) -> None:
    after = references(plan.after)
    before = references(plan.before)
    allowed = before | references(history) if action.name == "rollout-undo" else before
    new = after - allowed
    if action.name == "set-image":
        new -= {("image", str(getattr(action, "image")))}  # noqa: B009 - its stated purpose
    assert not new, f"{action.name} reaches {sorted(new)}"
    # And takes no identity away to put another in its place (a removed serviceAccountName
    # means "default"): the identity fields written are the ones before, or a revision's.
    identity = {r for r in after if r[0] == "identity"}
    assert identity <= allowed and (identity or not {r for r in before if r[0] == "identity"})


def test_every_action_kind_is_tried() -> None:
    assert set(CASES) | DELETES == set(actions.CATALOG)


@pytest.mark.parametrize("name", sorted(CASES))
def test_no_plan_reaches_a_secret_an_identity_or_an_image_it_did_not(name: str) -> None:
    @SETTINGS
    @given(CASES[name])
    def property_(case: Case) -> None:
        cluster, action, current, plan = planned(case)
        check_reach(action, plan, cluster.related(action, current))

    property_()


def test_the_world_has_secret_references_to_keep() -> None:
    """The property means something: the recorded workloads take Secrets and images."""
    kinds = {kind for obj in WORLD.values() for kind, _ in references(obj.get("spec"))}
    assert {"secret", "image"} <= kinds


# ------------------------------------------------------------------ the holes, one by one

GEO = WORLD[("Deployment", "hotel", "geo")]
SECRET_ENV = {"name": "P", "valueFrom": {"secretKeyRef": {"name": "mongodb-geo-auth", "key": "p"}}}


@pytest.mark.parametrize(
    "params",
    [
        {"variable": "P", "value": {"valueFrom": SECRET_ENV["valueFrom"]}},
        {"variable": "P", "value_from": SECRET_ENV["valueFrom"]},
        {"variable": "P", "valueFrom": SECRET_ENV["valueFrom"]},
        {"variable": "P", "value": "x", "env_from": [{"secretRef": {"name": "s"}}]},
    ],
)
def test_set_env_takes_a_plain_value_only(params: dict[str, Any]) -> None:
    with pytest.raises(errors.Invalid, match="set-env"):
        actions.build("set-env", {"target": "geo", "namespace": "hotel", **params})


def test_set_env_over_a_secret_variable_replaces_the_reference_never_adds_one() -> None:
    geo = copy.deepcopy(GEO)
    container = geo["spec"]["template"]["spec"]["containers"][0]
    secret_var = next(e for e in container["env"] if "secretKeyRef" in e.get("valueFrom", {}))
    action = actions.build(
        "set-env", {"target": "geo", "namespace": "hotel", "variable": secret_var["name"]}
    )
    plan = action.plan(geo)
    assert references(plan.after) < references(plan.before)


class _Sneaky(Action):
    """An action a future change might add, that writes more than it says."""

    name: ClassVar[str] = "sneaky"
    kinds: ClassVar[tuple[str, ...]] = ("Deployment",)
    how: str

    def mutate(self, obj: dict[str, Any], related: list[dict[str, Any]]) -> None:
        pod = obj["spec"]["template"]["spec"]
        container = pod["containers"][0]
        if self.how == "env":
            container.setdefault("env", []).append(SECRET_ENV)
        elif self.how == "env-key":  # another key of a Secret it already takes
            refs = [e.get("valueFrom", {}).get("secretKeyRef") for e in container["env"]]
            name = next(r for r in refs if r)["name"]
            container["env"].append(
                {"name": "K", "valueFrom": {"secretKeyRef": {"name": name, "key": "other"}}}
            )
        elif self.how == "envFrom":
            container["envFrom"] = [{"secretRef": {"name": "mongodb-geo-auth"}}]
        elif self.how == "volume":
            pod["volumes"] = [{"name": "s", "secret": {"secretName": "mongodb-geo-auth"}}]
        elif self.how == "projected":
            source = {"secret": {"name": "mongodb-geo-auth"}}
            pod["volumes"] = [{"name": "s", "projected": {"sources": [source]}}]
        elif self.how == "init":
            pod["initContainers"] = [
                {
                    "name": "i",
                    "image": container["image"],
                    "envFrom": [{"secretRef": {"name": "x"}}],
                }
            ]
        elif self.how == "account":
            pod["serviceAccountName"] = "argo-workflow"
        elif self.how == "token":
            pod["automountServiceAccountToken"] = True
        elif self.how == "image":
            container["image"] = "evil.example.com/exfiltrate:1"


@pytest.mark.parametrize(
    ("how", "words"),
    [
        ("env", "would add a reference to secret/mongodb-geo-auth key p"),
        ("env-key", "key other"),
        ("envFrom", "would add a reference to secret/mongodb-geo-auth;"),
        ("volume", "secret/mongodb-geo-auth"),
        ("projected", "secret/mongodb-geo-auth"),
        ("init", "secret/x"),
        ("account", "serviceAccountName 'argo-workflow'"),
        ("token", "automountServiceAccountToken True"),
        ("image", "evil.example.com/exfiltrate:1, which it does not run now"),
    ],
)
def test_a_plan_that_widens_the_reach_is_refused_before_anything_is_written(
    how: str, words: str
) -> None:
    action = _Sneaky(kind="Deployment", target="geo", namespace="hotel", how=how)
    with pytest.raises(errors.Invalid, match="sneaky on deployment/geo") as refused:
        action.plan(copy.deepcopy(GEO))
    assert words in refused.value.message


def test_set_image_sets_the_image_it_names_and_nothing_else() -> None:
    geo = copy.deepcopy(GEO)
    container = geo["spec"]["template"]["spec"]["containers"][0]["name"]
    params = {"target": "geo", "namespace": "hotel", "container": container}
    plan = actions.build("set-image", {**params, "image": "registry.example/geo:2"}).plan(geo)
    assert references(plan.after) - references(plan.before) == {("image", "registry.example/geo:2")}


def test_rollout_undo_brings_back_only_a_template_the_workload_ran() -> None:
    """A revision the workload ran may take a Secret the current one does not (the fix may
    be to put it back); a ReplicaSet it does not own is no revision of it."""
    geo = copy.deepcopy(GEO)
    rs = next(
        o
        for (kind, ns, _), o in WORLD.items()
        if kind == "ReplicaSet" and ns == "hotel" and o["metadata"]["name"].startswith("geo-")
    )
    earlier = copy.deepcopy(rs)
    earlier["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "1"
    earlier["spec"]["template"]["spec"]["containers"][0].setdefault("env", []).append(SECRET_ENV)
    geo["metadata"].setdefault("annotations", {})["deployment.kubernetes.io/revision"] = "2"
    action = actions.build("rollout-undo", {"target": "geo", "namespace": "hotel"})
    assert "mongodb-geo-auth" in str(action.plan(geo, [earlier]).after)
    stranger = copy.deepcopy(earlier)
    stranger["metadata"]["ownerReferences"] = [{"uid": "someone-else", "controller": True}]
    with pytest.raises(errors.Invalid, match="no previous revision"):
        action.plan(geo, [stranger])
