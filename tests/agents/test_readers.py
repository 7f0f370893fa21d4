"""Readers of a ConfigMap or Secret that have not restarted since it was written (issue 18 F1:
a look two seconds after the restored key found payment still in the crash back-off it was in,
and called the fix "worse"). Pure functions of pods as the API returns them."""

from __future__ import annotations

from typing import Any

from agents import readers

KEY_REF = {"valueFrom": {"configMapKeyRef": {"name": "shop-config", "key": "payment-provider"}}}


def pod(
    name: str,
    *,
    env: list[dict[str, Any]] | None = None,
    started: str = "2026-11-25T08:00:00Z",
    waiting: str = "CrashLoopBackOff",
    volumes: list[dict[str, Any]] | None = None,
) -> dict[str, Any]:
    return {
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "c", "env": env or []}], "volumes": volumes or []},
        "status": {
            "containerStatuses": [
                {
                    "name": "c",
                    "state": {"waiting": {"reason": waiting}} if waiting else {},
                    "lastState": {"terminated": {"startedAt": started}},
                }
            ]
        },
    }


OBJECTS = [("ConfigMap", "shop-config")]


def test_a_reader_still_in_the_back_off_it_was_in_has_not_read_the_write() -> None:
    payment = pod("payment-1", env=[KEY_REF])
    other = pod("cart-1")  # reads nothing of it
    first = readers.starts([payment, other], OBJECTS)
    assert list(first) == ["payment-1"]
    assert readers.not_restarted([payment, other], OBJECTS, first) == ("payment-1",)


def test_a_reader_that_restarted_since_or_a_new_pod_has_read_it() -> None:
    first = readers.starts([pod("payment-1", env=[KEY_REF])], OBJECTS)
    restarted = pod("payment-1", env=[KEY_REF], started="2026-11-25T08:00:20Z")
    assert readers.not_restarted([restarted], OBJECTS, first) == ()
    fresh = pod("payment-2", env=[KEY_REF])
    assert readers.not_restarted([fresh], OBJECTS, first) == ()
    running = pod("payment-1", env=[KEY_REF], waiting="")
    assert readers.not_restarted([running], OBJECTS, first) == ()  # not crash looping


def test_every_way_a_pod_reads_a_configmap_or_secret_counts() -> None:
    env_from = {"envFrom": [{"configMapRef": {"name": "shop-config"}}]}
    with_env_from = pod("a")
    with_env_from["spec"]["containers"][0].update(env_from)
    assert readers.refers_to(with_env_from, "ConfigMap", "shop-config")
    mounted = pod("b", volumes=[{"name": "v", "configMap": {"name": "shop-config"}}])
    assert readers.refers_to(mounted, "ConfigMap", "shop-config")
    secret = pod("c", volumes=[{"name": "v", "secret": {"secretName": "db"}}])
    assert readers.refers_to(secret, "Secret", "db")
    assert not readers.refers_to(secret, "ConfigMap", "db")
