"""The pure parts of running Stratus as a pod: the command line and environment a process
container gets, the path mapping of its mounts, the atomic writer of its volume files, token
rotation, and how probe results turn into a verdict (no sockets, no processes)."""

from __future__ import annotations

from pathlib import Path

from lab.cluster_sim import default_catalog
from lab.controllers import pod_files, process_spec
from lab.controllers.pod_files import IssuedToken, PodFiles, atomic_write, needs_rotation
from lab.controllers.process_probes import ProbeCounter, ProbeTiming, probe_port, seconds
from lab.images import ImageSpec

CA_ITEM = {"key": "ca.crt", "path": "ca.crt"}
NAMESPACE_ITEM = {"path": "namespace", "fieldRef": {"fieldPath": "metadata.namespace"}}
STRATUS = ImageSpec(entrypoint=["stratus"], process={"stratus": ["python", "-m", "cli"]})


def test_the_stratus_image_is_found_under_any_registry_and_tag() -> None:
    catalog = default_catalog()
    for reference in (
        "ghcr.io/stratus-ops/stratus:0.19.0",
        "stratus:latest",
        "r.example/x/stratus:dev",
    ):
        spec, crash = catalog.lookup(reference)
        assert spec is not None and spec.process and not crash, reference
    assert catalog.lookup("ghcr.io/stratus-ops/notstratus:1")[0] is None
    assert not catalog.images["stratus/hotel-frontend"].process  # the sample apps stay simulated


def test_command_and_args_follow_dockers_rules_and_map_the_program() -> None:
    env = {"POD_IP": "127.9.9.9"}
    words = process_spec.command_line(STRATUS, {"args": ["serve", "--host", "$(POD_IP)"]}, env)
    assert words == ["stratus", "serve", "--host", "127.9.9.9"]
    argv = process_spec.host_argv(STRATUS, words, "/venv/bin/python")
    assert argv == ["/venv/bin/python", "-m", "cli", "serve", "--host", "127.9.9.9"]
    replaced = process_spec.command_line(
        STRATUS, {"command": ["/usr/local/bin/stratus"], "args": ["--help"]}, env
    )
    assert process_spec.host_argv(STRATUS, replaced, "py")[:3] == ["py", "-m", "cli"]
    try:
        process_spec.host_argv(STRATUS, ["/bin/sh", "-c", "true"], "py")
    except process_spec.ProgramNotFound as missing:
        assert missing.program == "/bin/sh"
    else:
        raise AssertionError("a program the image lacks must not run")


def test_expansion_leaves_undefined_references_and_unescapes_dollars() -> None:
    env = {"A": "1"}
    assert process_spec.expand("$(A)-$(B)-$$(A)", env) == "1-$(B)-$(A)"


def test_the_environment_names_the_lab_services_and_mapped_paths(tmp_path: Path) -> None:
    mapped = pod_files.mounts(
        {
            "volumeMounts": [
                {"name": "data", "mountPath": "/var/lib/stratus"},
                {"name": "token", "mountPath": process_spec.TOKEN_MOUNT_PATH},
                {"name": "data", "mountPath": "/var/lib/stratus/sub", "subPath": "inner"},
            ]
        },
        {"data": tmp_path / "pv", "token": tmp_path / "token"},
    )
    service = {
        "metadata": {"name": "stratus-web"},
        "spec": {"clusterIP": "10.96.0.9", "ports": [{"name": "http", "port": 8080}]},
    }
    container = {
        "env": [{"name": "DB", "value": "/var/lib/stratus/s.db"}, {"name": "X", "value": "$(DB)"}]
    }
    env = process_spec.environment(
        image_env={"HOME": "/root"},
        pod={"spec": {}},
        container=container,
        resolved={"DB": "/var/lib/stratus/s.db", "X": "$(DB)", "SUB": "/var/lib/stratus/sub/f"},
        services=[service],
        api=process_spec.Address("127.0.0.1", 6443),
        mapped=mapped,
    )
    assert env["DB"] == str(tmp_path / "pv" / "s.db")
    assert env["X"] == str(tmp_path / "pv" / "s.db")
    assert env["SUB"] == str(tmp_path / "pv" / "inner" / "f")  # the most specific mount wins
    assert env["KUBERNETES_SERVICE_HOST"] == "127.0.0.1"
    assert env["KUBERNETES_SERVICE_PORT"] == "6443"
    assert env["STRATUS_WEB_SERVICE_HOST"] == "10.96.0.9"
    assert env["STRATUS_WEB_SERVICE_PORT_HTTP"] == "8080"
    assert env["STRATUS_WEB_PORT"] == "tcp://10.96.0.9:8080"
    assert env[process_spec.SERVICEACCOUNT_DIR_ENV] == str(tmp_path / "token")
    assert process_spec.arguments(["p", "/var/lib/stratus", "--x=/var/lib/stratus"], mapped) == [
        "p",
        str(tmp_path / "pv"),
        "--x=/var/lib/stratus",
    ]
    without_links = process_spec.environment(
        image_env={},
        pod={"spec": {"enableServiceLinks": False}},
        container={},
        resolved={},
        services=[service],
        api=process_spec.Address("127.0.0.1", 6443),
        mapped=[],
    )
    assert "STRATUS_WEB_SERVICE_HOST" not in without_links
    assert "KUBERNETES_SERVICE_HOST" in without_links


def test_the_atomic_writer_swaps_data_and_drops_removed_keys(tmp_path: Path) -> None:
    folder = tmp_path / "vol"
    assert atomic_write(folder, {"a.yaml": b"one", "b.yaml": b"two"})
    first = (folder / "..data").resolve()
    assert (folder / "a.yaml").is_symlink() and (folder / "a.yaml").read_bytes() == b"one"
    assert not atomic_write(folder, {"a.yaml": b"one", "b.yaml": b"two"})  # unchanged
    assert atomic_write(folder, {"a.yaml": b"changed"})
    assert (folder / "a.yaml").read_bytes() == b"changed"
    assert not (folder / "b.yaml").exists() and not (folder / "b.yaml").is_symlink()
    assert not first.exists()  # the old timestamped directory is gone
    hidden = {p.name for p in folder.iterdir() if p.name.startswith("..")}
    assert hidden == {"..data", (folder / "..data").resolve().name}


def test_tokens_rotate_after_eighty_percent_of_their_life() -> None:
    issued = IssuedToken("t", issued_at=1000.0, seconds=3600)
    assert needs_rotation(None, 0.0)
    assert not needs_rotation(issued, 1000.0 + 3600 * 0.79)
    assert needs_rotation(issued, 1000.0 + 3600 * 0.8)


def test_projected_volumes_carry_a_token_the_ca_and_the_namespace(tmp_path: Path) -> None:
    class Store:
        objects = {
            ("configmaps", "ns", "kube-root-ca.crt"): {
                "metadata": {"name": "kube-root-ca.crt"},
                "data": {"ca.crt": "placeholder"},
            },
            ("secrets", "ns", "slack"): {"metadata": {"name": "slack"}, "data": {"k": "c2VjcmV0"}},
        }

        def get(self, key: str, namespace: str, name: str) -> object:
            return self.objects.get((key, namespace, name))

    issued: list[tuple[str, str, int, str]] = []

    def issue(namespace: str, account: str, seconds: int, audience: str) -> str:
        issued.append((namespace, account, seconds, audience))
        return f"token-{len(issued)}"

    pod = {
        "metadata": {"name": "p", "namespace": "ns", "uid": "u"},
        "spec": {
            "serviceAccountName": "stratus",
            "volumes": [
                {
                    "name": "kube-api-access-abcde",
                    "projected": {
                        "sources": [
                            {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}},
                            {"configMap": {"name": "kube-root-ca.crt", "items": [CA_ITEM]}},
                            {"downwardAPI": {"items": [NAMESPACE_ITEM]}},
                        ]
                    },
                },
                {
                    "name": "slack",
                    "secret": {"secretName": "slack", "items": [{"key": "k", "path": "bot/token"}]},
                },
                {"name": "scratch", "emptyDir": {}},
            ],
        },
    }
    files = PodFiles(tmp_path / "pod", tmp_path / "volumes")
    files.sync(Store(), pod, issue_token=issue, ca_pem="REAL CA", now=100.0)  # type: ignore[arg-type]
    token_dir = files.dirs["kube-api-access-abcde"]
    assert (token_dir / "token").read_text() == "token-1"
    assert (token_dir / "ca.crt").read_text() == "REAL CA"
    assert (token_dir / "namespace").read_text() == "ns"
    assert (files.dirs["slack"] / "bot" / "token").read_text() == "secret"
    assert files.dirs["scratch"].is_dir()
    assert issued == [("ns", "stratus", 3607, "")]
    files.sync(Store(), pod, issue_token=issue, ca_pem="REAL CA", now=200.0)  # type: ignore[arg-type]
    assert len(issued) == 1  # not yet due
    files.sync(Store(), pod, issue_token=issue, ca_pem="REAL CA", now=100.0 + 3607 * 0.8)  # type: ignore[arg-type]
    assert (token_dir / "token").read_text() == "token-2"
    files.remove()
    assert not (tmp_path / "pod").exists()


def test_probe_verdicts_change_only_after_their_thresholds() -> None:
    timing = ProbeTiming.of({"failureThreshold": 3, "successThreshold": 2})
    assert (timing.period, timing.timeout, timing.initial_delay) == (10.0, 1.0, 0.0)
    liveness = ProbeCounter(timing, verdict=True)
    assert [liveness.record(False) for _ in range(3)] == [None, None, False]
    readiness = ProbeCounter(timing)
    assert readiness.record(True) is None
    assert readiness.record(True) is True
    assert readiness.record(False) is None  # one odd failure does not make it unready
    assert readiness.record(True) is None


def test_named_probe_ports_resolve_through_the_container() -> None:
    container = {"ports": [{"name": "http", "containerPort": 8080}]}
    assert probe_port({"port": "http"}, container) == 8080
    assert probe_port({"port": 9090}, container) == 9090
    assert probe_port({"port": "8081"}, container) == 8081
    assert probe_port({"port": "metrics"}, container) is None


def test_probe_and_grace_numbers_of_a_wrong_type_fall_back_to_the_defaults() -> None:
    timing = ProbeTiming.of(
        {"periodSeconds": "often", "timeoutSeconds": -1, "failureThreshold": True}
    )
    assert (timing.period, timing.timeout, timing.failure_threshold) == (10.0, 1.0, 3)
    assert seconds(None, 30.0) == 30.0 and seconds(0, 30.0) == 0.0 and seconds(2.5, 1) == 2.5


def test_a_file_path_that_leaves_its_volume_is_not_written(tmp_path: Path) -> None:
    folder = tmp_path / "vol"
    atomic_write(folder, {"../escape": b"x", "/abs": b"y", "ok/inner": b"z"})
    assert not (tmp_path / "escape").exists()
    assert sorted(p.name for p in folder.iterdir() if not p.name.startswith("..")) == ["ok"]
    assert (folder / "ok" / "inner").read_bytes() == b"z"
