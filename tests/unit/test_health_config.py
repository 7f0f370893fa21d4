"""Where the health endpoints listen: every interface in a pod (the kubelet probes the pod's
address), this machine only elsewhere; port 8080 unless told, 0 for a free one."""

from __future__ import annotations

import pytest

from bot.health import DEFAULT_PORT, HealthConfig
from tools.env import SettingError


def test_outside_a_cluster_only_this_machine_on_8080() -> None:
    assert HealthConfig.from_env({}) == HealthConfig(host="127.0.0.1", port=DEFAULT_PORT)
    assert DEFAULT_PORT == 8080


def test_in_a_pod_every_interface() -> None:
    found = HealthConfig.from_env({"KUBERNETES_SERVICE_HOST": "10.96.0.1"})
    assert found.host == "0.0.0.0"


def test_the_environment_chooses() -> None:
    found = HealthConfig.from_env(
        {
            "KUBERNETES_SERVICE_HOST": "10.96.0.1",
            "STRATUS_HEALTH_HOST": "10.0.0.7 ",
            "STRATUS_HEALTH_PORT": "0",
        }
    )
    assert found == HealthConfig(host="10.0.0.7", port=0)


def test_a_bad_port_is_one_line_naming_the_variable() -> None:
    with pytest.raises(SettingError) as refused:
        HealthConfig.from_env({"STRATUS_HEALTH_PORT": "http"})
    assert "STRATUS_HEALTH_PORT" in refused.value.message
