"""The deployment manifests, as ``kubectl apply -k`` would send them.

Every overlay is rendered by the real kubectl (its built-in kustomize), once per module, and
judged on what it would install: RBAC exactly as derived from the read layer and the action
catalog (``tools.permissions``) — not a verb more or less, no wildcard, no Secret, no
cluster-admin —, a Deployment that runs non-root on a read-only root filesystem with limits
and probes, the Secret references and Service ports of its Slack mode, and a policy ConfigMap
that loads as the policy it was made from.
"""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from cli.main import stratus
from policies.loader import PolicyError, load
from policies.model import APPROVERS_PLACEHOLDER
from tests.conftest import KUBECTLS, REPO
from tools import permissions, rbac
from tools.permissions import Grant

DEPLOY = REPO / "manifests" / "deploy"
OVERLAYS = ("socket", "http", "lab")
PRODUCT = (
    "agents", "bot", "cli", "gateway", "incidents", "operations", "proposals", "policies",
    "tools", "undo", "store",
)  # fmt: skip
# The Secret's keys, each with the variable it becomes (secret.example.yaml documents them).
SECRET_KEYS = {
    "slack-bot-token": "SLACK_BOT_TOKEN",
    "slack-app-token": "SLACK_APP_TOKEN",
    "slack-signing-secret": "SLACK_SIGNING_SECRET",
    "audit-key": "STRATUS_AUDIT_KEY",
    "alerts-token": "STRATUS_ALERTS_TOKEN",
    "openai-api-key": "OPENAI_API_KEY",
}
ALLOWED_CLUSTER_BINDINGS = {"stratus-read-cluster", "stratus-write-nodes"}


def kustomize(directory: Path, kubectl: str = "system") -> list[dict[str, Any]]:
    binary = KUBECTLS.get(kubectl)
    if binary is None:
        if kubectl != "system":
            pytest.skip(f"kubectl {kubectl} is not installed here")
        pytest.fail("no kubectl found: the test command installs it (see README)")
    done = subprocess.run(
        [binary, "kustomize", str(directory)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [doc for doc in yaml.safe_load_all(done.stdout) if doc]


@pytest.fixture(scope="module")
def rendered() -> dict[str, list[dict[str, Any]]]:
    return {overlay: kustomize(DEPLOY / "overlays" / overlay) for overlay in OVERLAYS}


def _of(objects: list[dict[str, Any]], kind: str) -> list[dict[str, Any]]:
    return [o for o in objects if o["kind"] == kind]


def _one(objects: list[dict[str, Any]], kind: str) -> dict[str, Any]:
    found = _of(objects, kind)
    assert len(found) == 1, f"{len(found)} {kind}s"
    return found[0]


def _container(objects: list[dict[str, Any]]) -> dict[str, Any]:
    spec = _one(objects, "Deployment")["spec"]["template"]["spec"]
    assert len(spec["containers"]) == 1
    container: dict[str, Any] = spec["containers"][0]
    return container


def _env(container: dict[str, Any]) -> dict[str, dict[str, Any]]:
    env = {e["name"]: e for e in container.get("env") or []}
    assert len(env) == len(container.get("env") or []), "a variable is set twice"
    return env


def _value(container: dict[str, Any], name: str) -> str:
    return str(_env(container)[name]["value"])


def _write_namespaces(objects: list[dict[str, Any]]) -> set[str]:
    return set(_value(_container(objects), "STRATUS_WRITE_NAMESPACES").split(","))


# ------------------------------------------------------------------ rendering


def test_every_overlay_renders_one_stratus(rendered: dict[str, list[dict[str, Any]]]) -> None:
    for overlay, objects in rendered.items():
        kinds = {o["kind"] for o in objects}
        assert {
            "Namespace",
            "ServiceAccount",
            "Deployment",
            "PersistentVolumeClaim",
            "ConfigMap",
            "Service",
            "NetworkPolicy",
            "ClusterRole",
            "RoleBinding",
        } <= kinds, overlay
        assert not _of(objects, "Secret"), f"{overlay} ships a Secret with values"
        own = {o["metadata"].get("namespace") for o in objects if o["kind"] != "RoleBinding"}
        assert own <= {None, "stratus"}, overlay


@pytest.mark.parametrize("kubectl", ["1.27", "1.33"])
def test_older_and_newer_kubectls_render_the_same(
    rendered: dict[str, list[dict[str, Any]]], kubectl: str
) -> None:
    """Components need kustomize 3.7 (kubectl 1.21); 1.27 and 1.33 bound what is supported."""
    for overlay in OVERLAYS:
        other = kustomize(DEPLOY / "overlays" / overlay, kubectl)
        assert sorted(other, key=_identity) == sorted(rendered[overlay], key=_identity), (
            kubectl,
            overlay,
        )


def _identity(obj: dict[str, Any]) -> tuple[str, str, str]:
    return (obj["kind"], obj["metadata"].get("namespace", ""), obj["metadata"]["name"])


# ------------------------------------------------------------------ RBAC


def _roles(objects: list[dict[str, Any]]) -> dict[str, frozenset[Grant]]:
    return {
        o["metadata"]["name"]: rbac.grants_of(o.get("rules") or [])
        for o in objects
        if o["kind"] in ("ClusterRole", "Role")
    }


def expected_roles(perms: permissions.Permissions) -> dict[str, frozenset[Grant]]:
    names = rbac.ROLE_NAMES
    return {
        names["read"]: perms.read,
        names["read_cluster"]: perms.read_cluster,
        names["write"]: perms.write,
        names["write_cluster"]: perms.write_cluster,
        names["leader"]: perms.leader,
    }


def rbac_differences(objects: list[dict[str, Any]], perms: permissions.Permissions) -> list[str]:
    """Every way the rendered roles differ from the derived ones, in words: a grant too many,
    a grant missing, a role too many or missing."""
    found, wanted = _roles(objects), expected_roles(perms)
    problems = [f"role {name} is not derived" for name in sorted(set(found) - set(wanted))]
    problems += [f"role {name} is missing" for name in sorted(set(wanted) - set(found))]
    for name in sorted(set(found) & set(wanted)):
        problems += [
            f"{name} grants {g} beyond the catalog" for g in sorted(found[name] - wanted[name])
        ]
        problems += [f"{name} lacks {g}" for g in sorted(wanted[name] - found[name])]
    return problems


def test_roles_grant_exactly_what_is_derived(rendered: dict[str, list[dict[str, Any]]]) -> None:
    perms = permissions.derive()
    for overlay, objects in rendered.items():
        assert rbac_differences(objects, perms) == [], overlay


def test_the_comparison_fails_on_a_grant_more_or_less(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    """The judge can fail: an extra verb, a dropped resource, an extra role are each named."""
    perms = permissions.derive()
    objects = [dict(o) for o in rendered["socket"]]
    write = next(o for o in objects if o["metadata"]["name"] == "stratus-write")
    more = {
        **write,
        "rules": [*write["rules"], {"apiGroups": [""], "resources": ["pods"], "verbs": ["patch"]}],
    }
    assert rbac_differences([more if o is write else o for o in objects], perms) == [
        "stratus-write grants Grant(group='', resource='pods', verb='patch', name='') beyond "
        "the catalog"
    ]
    fewer = {**write, "rules": write["rules"][1:]}
    assert any(
        "lacks" in p for p in rbac_differences([fewer if o is write else o for o in objects], perms)
    )
    extra = {"kind": "ClusterRole", "metadata": {"name": "stratus-extra"}, "rules": []}
    assert rbac_differences([*objects, extra], perms) == ["role stratus-extra is not derived"]


def test_no_wildcard_no_secret_no_cluster_admin(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    for overlay, objects in rendered.items():
        for name, grants in _roles(objects).items():
            for grant in grants:
                assert "*" not in (grant.group, grant.resource, grant.verb), (overlay, name)
                assert not grant.resource.startswith("secrets"), (overlay, name, grant)
                assert grant.verb not in ("escalate", "bind", "impersonate"), (overlay, name)
        for binding in _of(objects, "RoleBinding") + _of(objects, "ClusterRoleBinding"):
            ref = binding["roleRef"]["name"]
            assert ref not in ("cluster-admin", "admin", "edit"), (overlay, ref)
            assert ref.startswith("stratus-"), (overlay, ref)
            assert binding["subjects"] == [
                {"kind": "ServiceAccount", "name": "stratus", "namespace": "stratus"}
            ], (overlay, binding["metadata"]["name"])
        cluster_wide = {b["roleRef"]["name"] for b in _of(objects, "ClusterRoleBinding")}
        assert cluster_wide == ALLOWED_CLUSTER_BINDINGS, overlay


def test_reads_and_writes_are_bound_in_exactly_the_namespaces_stratus_writes(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    for overlay, objects in rendered.items():
        managed = _write_namespaces(objects)
        bound: dict[str, set[str]] = {}
        for binding in _of(objects, "RoleBinding"):
            bound.setdefault(binding["roleRef"]["name"], set()).add(
                binding["metadata"]["namespace"]
            )
        assert bound.pop("stratus-leader") == {"stratus"}, overlay
        assert bound == {"stratus-read": managed, "stratus-write": managed}, overlay
        assert "stratus" not in managed and "kube-system" not in managed
    assert _write_namespaces(rendered["lab"]) == {"hotel", "shop"}


def _generate(*args: str) -> str:
    result = CliRunner().invoke(stratus, ["deploy", "rbac", *args])
    assert result.exit_code == 0, result.output
    return result.output


@pytest.mark.parametrize(
    ("path", "args"),
    [
        ("base/rbac.yaml", ("--part", "roles")),
        ("managed/bindings.yaml", ("--part", "bindings", "-n", "apps")),
        ("overlays/lab/bindings.yaml", ("--part", "bindings", "-n", "hotel", "-n", "shop")),
        ("components/secrets/role.yaml", ("--part", "secrets")),
    ],
)
def test_the_shipped_rbac_files_are_what_the_command_prints(
    path: str, args: tuple[str, ...]
) -> None:
    shipped = (DEPLOY / path).read_text()
    assert shipped == _generate(*args), (
        f"{path} is out of date: regenerate it with `stratus deploy rbac {' '.join(args)}`"
    )


def test_the_secrets_component_adds_only_the_derived_secret_role(tmp_path: Path) -> None:
    """Opted in, Secrets are read and written through one role, bound where named."""
    layer = tmp_path / "with-secrets"
    layer.mkdir()
    relative = Path(os.path.relpath(DEPLOY, layer))
    (layer / "bindings.yaml").write_text(_secrets_bindings())
    (layer / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "resources": [str(relative / "overlays" / "socket"), "bindings.yaml"],
                "components": [str(relative / "components" / "secrets")],
            }
        )
    )
    objects = kustomize(layer)
    roles = _roles(objects)
    assert roles["stratus-secrets"] == permissions.derive().secrets
    assert {
        b["metadata"]["namespace"]
        for b in _of(objects, "RoleBinding")
        if b["roleRef"]["name"] == "stratus-secrets"
    } == {"apps"}


def test_the_admission_component_renders_a_policy_for_stratus_account_only(
    tmp_path: Path,
) -> None:
    """The optional guard of docs/deploy.md's threat model renders as one policy and its
    binding, matching only Stratus's ServiceAccount and only pod templates' writes."""
    layer = tmp_path / "with-admission"
    layer.mkdir()
    relative = Path(os.path.relpath(DEPLOY, layer))
    (layer / "kustomization.yaml").write_text(
        yaml.safe_dump(
            {
                "resources": [str(relative / "overlays" / "socket")],
                "components": [str(relative / "components" / "admission")],
            }
        )
    )
    objects = kustomize(layer)
    (policy,) = _of(objects, "ValidatingAdmissionPolicy")
    (binding,) = _of(objects, "ValidatingAdmissionPolicyBinding")
    assert binding["spec"] == {
        "policyName": policy["metadata"]["name"],
        "validationActions": ["Deny"],
    }
    assert "namespace" not in policy["metadata"] and "namespace" not in binding["metadata"]
    (only,) = policy["spec"]["matchConditions"]
    assert "'system:serviceaccount:stratus:stratus'" in only["expression"]
    (rule,) = policy["spec"]["matchConstraints"]["resourceRules"]
    assert set(rule["resources"]) == {"deployments", "statefulsets", "daemonsets"}
    messages = " ".join(v["message"] for v in policy["spec"]["validations"])
    for guarded in (
        "secretKeyRef",
        "envFrom secretRef",
        "secret or projected volume",
        "ServiceAccount a workload runs as",
        "images",
        "create workloads",
    ):
        assert guarded in messages, guarded
    assert len(objects) == len(kustomize(DEPLOY / "overlays" / "socket")) + 2


def _secrets_bindings() -> str:
    install = rbac.Install.checked(managed=["apps"], secrets=["apps"])
    only = [b for b in rbac.managed_bindings(install) if b["roleRef"]["name"] == "stratus-secrets"]
    return yaml.safe_dump_all(only)


def test_the_rbac_command_refuses_bad_input_in_one_line() -> None:
    result = CliRunner().invoke(stratus, ["deploy", "rbac", "-n", "Not/A/Namespace"])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "not a valid namespace" in lines[0]
    assert "internal error" not in result.output


# ------------------------------------------------------------------ the pod


def test_the_pod_runs_non_root_on_a_read_only_root_with_limits_and_probes(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    for overlay, objects in rendered.items():
        deployment = _one(objects, "Deployment")
        assert deployment["spec"]["replicas"] == 1, overlay
        assert deployment["spec"]["strategy"] == {"type": "Recreate"}, overlay
        pod = deployment["spec"]["template"]["spec"]
        assert pod["serviceAccountName"] == "stratus"
        assert pod["securityContext"]["runAsNonRoot"] is True
        assert pod["securityContext"]["runAsUser"] > 0
        assert pod["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
        assert not pod.get("hostNetwork") and not pod.get("hostPID")
        # Service links would set STRATUS_SERVICE_HOST, STRATUS_PORT… (the Service's name).
        assert pod["enableServiceLinks"] is False
        container = _container(objects)
        security = container["securityContext"]
        assert security["runAsNonRoot"] is True and security["runAsUser"] > 0, overlay
        assert security["readOnlyRootFilesystem"] is True, overlay
        assert security["allowPrivilegeEscalation"] is False, overlay
        assert security["capabilities"] == {"drop": ["ALL"]}, overlay
        assert security["seccompProfile"] == {"type": "RuntimeDefault"}, overlay
        assert not security.get("privileged")
        resources = container["resources"]
        assert set(resources["requests"]) == set(resources["limits"]) == {"cpu", "memory"}
        ports = {p["name"]: p["containerPort"] for p in container["ports"]}
        assert ports["health"] == 8080
        probes = (
            ("startupProbe", "/healthz"),
            ("livenessProbe", "/healthz"),
            ("readinessProbe", "/readyz"),
        )
        for probe, path in probes:
            assert container[probe]["httpGet"] == {"path": path, "port": "health"}, overlay
        assert _value(container, "STRATUS_HEALTH_PORT") == "8080"


def test_what_stratus_writes_lands_on_volumes(rendered: dict[str, list[dict[str, Any]]]) -> None:
    for overlay, objects in rendered.items():
        container = _container(objects)
        pod = _one(objects, "Deployment")["spec"]["template"]["spec"]
        volumes = {v["name"]: v for v in pod["volumes"]}
        mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
        assert not [m for m in mounts.values() if m.get("subPath")], "subPath is never updated"
        database = Path(_value(container, "STRATUS_DB"))
        home = _value(container, "STRATUS_HOME")
        data = mounts[str(database.parent)]
        assert home == str(database.parent)
        claim = volumes[data["name"]]["persistentVolumeClaim"]["claimName"]
        assert claim in {c["metadata"]["name"] for c in _of(objects, "PersistentVolumeClaim")}
        assert "emptyDir" in volumes[mounts["/tmp"]["name"]], overlay
        assert _value(container, "HOME") == "/tmp"
        policies = mounts[_value(container, "STRATUS_POLICY_DIR")]
        assert policies.get("readOnly") is True
        config_map = volumes[policies["name"]]["configMap"]["name"]
        assert config_map in {c["metadata"]["name"] for c in _of(objects, "ConfigMap")}


def _policy_files(objects: list[dict[str, Any]], into: Path) -> Path:
    """The stratus-policies ConfigMap as the kubelet mounts it: one file per key."""
    config_map = next(
        c for c in _of(objects, "ConfigMap") if c["metadata"]["name"] == "stratus-policies"
    )
    into.mkdir()
    for name, body in config_map["data"].items():
        (into / name).write_text(body)
    return into


def test_the_shipped_policy_names_no_approvers_until_the_installer_does(
    rendered: dict[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    """Attack 6 of issue 19: the overlays deployed "anyone may approve, their own request too".
    The default policy's approvers are a placeholder: it does not load (Stratus allows nothing
    and ``stratus serve`` stops at start), and the error names the placeholder and what to do."""
    source = REPO / "manifests" / "policies" / "default"
    shipped = {p.name: p.read_text() for p in source.iterdir()}
    for overlay in ("socket", "http"):
        mounted = _policy_files(rendered[overlay], tmp_path / overlay)
        assert {p.name: p.read_text() for p in mounted.iterdir()} == shipped, overlay
        with pytest.raises(PolicyError) as refused:
            load([mounted])
        words = str(refused.value)
        assert f"{APPROVERS_PLACEHOLDER} is the shipped policy's placeholder" in words, words
        assert "Slack user-group ID" in words and "default.yaml:" in words
    defaults = yaml.safe_load(shipped["default.yaml"])["defaults"]
    assert defaults["self_approval"] is False


def test_the_lab_overlay_is_the_default_policy_with_the_playgrounds_sre_group(
    rendered: dict[str, list[dict[str, Any]]], tmp_path: Path
) -> None:
    mounted = _policy_files(rendered["lab"], tmp_path / "lab")
    policy = load([mounted])
    assert policy.defaults.approvers == ["S0SRE"] and policy.defaults.self_approval is False
    lab = yaml.safe_load((mounted / "default.yaml").read_text())
    default = yaml.safe_load((REPO / "manifests/policies/default/default.yaml").read_text())
    default["defaults"]["approvers"] = ["S0SRE"]
    assert lab == default, "the lab's policy is the default with its approvers named"


def _product_source() -> str:
    return "\n".join(
        path.read_text() for package in PRODUCT for path in (REPO / package).rglob("*.py")
    )


def test_every_variable_the_pod_gets_is_one_stratus_reads(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    """A misspelt variable would be ignored in silence: each one is read by the product."""
    source = _product_source()
    for overlay, objects in rendered.items():
        for name in _env(_container(objects)):
            if name == "HOME":
                continue
            assert re.search(rf"[\"']{name}[\"']|\b{name}\b", source), (overlay, name)


def test_each_mode_gets_its_secret_keys_and_ports(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    example = yaml.safe_load((DEPLOY / "secret.example.yaml").read_text())
    assert set(example["stringData"]) == set(SECRET_KEYS)
    modes = {"socket": "socket", "http": "http", "lab": "socket"}
    for overlay, objects in rendered.items():
        container = _container(objects)
        env = _env(container)
        mode = modes[overlay]
        assert _value(container, "STRATUS_SLACK_MODE") == mode
        refs = {
            e["valueFrom"]["secretKeyRef"]["key"]: (name, e["valueFrom"]["secretKeyRef"])
            for name, e in env.items()
            if "secretKeyRef" in e.get("valueFrom", {})
        }
        for key, (name, ref) in refs.items():
            assert SECRET_KEYS[key] == name, (overlay, key)
            assert ref["name"] == "stratus"
        required = {k for k, (_, ref) in refs.items() if not ref.get("optional")}
        assert required == {
            "slack-bot-token",
            "audit-key",
            "slack-app-token" if mode == "socket" else "slack-signing-secret",
        }, overlay
        assert {"alerts-token", "openai-api-key"} <= set(refs)
        service = _one(objects, "Service")
        named = {p["name"]: p for p in container["ports"]}
        for port in service["spec"]["ports"]:
            assert port["targetPort"] in named, (overlay, port)
            assert port["port"] == named[port["targetPort"]]["containerPort"]
        listener = "alerts" if mode == "socket" else "slack"
        assert {p["name"] for p in service["spec"]["ports"]} == {"health", listener}
        host = "STRATUS_ALERTS_HOST" if mode == "socket" else "STRATUS_BOT_HOST"
        for variable in (host, "STRATUS_HEALTH_HOST"):
            assert env[variable]["valueFrom"]["fieldRef"]["fieldPath"] == "status.podIP"


def test_the_network_policy_lets_in_only_the_http_ports_and_out_only_dns_and_https(
    rendered: dict[str, list[dict[str, Any]]],
) -> None:
    for overlay, objects in rendered.items():
        policy = _one(objects, "NetworkPolicy")["spec"]
        assert set(policy["policyTypes"]) == {"Ingress", "Egress"}
        assert policy["podSelector"]["matchLabels"] == {"app.kubernetes.io/name": "stratus"}
        container = _container(objects)
        ingress_ports = {p["port"] for rule in policy["ingress"] for p in rule["ports"]}
        assert ingress_ports == {p["name"] for p in container["ports"]}, overlay
        egress = {(p["port"], p["protocol"]) for rule in policy["egress"] for p in rule["ports"]}
        assert egress == {(53, "UDP"), (53, "TCP"), (443, "TCP"), (6443, "TCP")}, overlay


@pytest.fixture(scope="module")
def docs() -> Iterator[str]:
    yield (REPO / "docs" / "deploy.md").read_text()


def test_the_deploy_doc_explains_every_rule_and_every_secret_key(docs: str) -> None:
    perms = permissions.derive()
    for name in rbac.ROLE_NAMES.values():
        assert name in docs, name
    for grant in perms.read | perms.read_cluster | perms.write | perms.write_cluster:
        assert grant.resource in docs, grant
    for key, variable in SECRET_KEYS.items():
        assert key in docs and variable in docs, key
    for overlay in OVERLAYS:
        assert f"overlays/{overlay}" in docs


def _pod_environment(container: dict[str, Any]) -> dict[str, str]:
    """The environment the kubelet would build for ``container``, with stand-in values for
    the Secret's keys and the downward API."""
    fields = {
        "status.podIP": "10.1.2.3",
        "metadata.namespace": "stratus",
        "metadata.name": "stratus-5d8f7c9b6-x2x4q",
    }
    values: dict[str, str] = {}
    for name, entry in _env(container).items():
        if "value" in entry:
            values[name] = str(entry["value"])
        elif "secretKeyRef" in entry["valueFrom"]:
            values[name] = f"{entry['valueFrom']['secretKeyRef']['key']}-0123456789abcdef"
        else:
            values[name] = fields[entry["valueFrom"]["fieldRef"]["fieldPath"]]
    return values


def test_the_code_accepts_the_environment_each_overlay_gives(
    rendered: dict[str, list[dict[str, Any]]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The variables are not only named right but valued right: the bot's configuration, the
    write scope and the policy directory read them as the deployment means them."""
    from bot.config import BotConfig
    from policies.reload import default_directory
    from tools.scope import WriteScope

    for overlay, objects in rendered.items():
        environment = _pod_environment(_container(objects))
        environment["STRATUS_ALERT_CHANNEL"] = "C0ALERTS"  # settings.env, when alerts are on
        bot = BotConfig.from_env(environment)
        assert bot.mode == ("http" if overlay == "http" else "socket")
        if bot.mode == "http":
            assert (bot.host, bot.port) == ("10.1.2.3", 3000)
        else:
            assert (bot.alerts.host, bot.alerts.port) == ("10.1.2.3", 9095)
        assert bot.alerts.enabled
        with monkeypatch.context() as patched:
            for name, value in environment.items():
                patched.setenv(name, value)
            scope = WriteScope.from_env()
            assert set(scope.namespaces) == _write_namespaces(objects)
            assert scope.own_namespace == "stratus" and scope.nodes
            assert str(default_directory()) == "/etc/stratus/policies"
