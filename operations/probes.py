"""The readiness probes that act: each one looks at one thing and answers None (fine) or why
not, within a time limit. ``operations.readiness`` judges the answers; the bot adds its own
probe of Slack.

The database probe opens its own connection and makes a write it rolls back: the store's
connection waits up to thirty seconds for a lock, and a probe must answer before the kubelet
gives up on it.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable
from typing import Any

from store.db import MEMORY, Store
from store.errors import StratusError
from tools.k8s import KubeClient

PROBE_SECONDS = 2.0


def database(store: Store, *, timeout: float = PROBE_SECONDS) -> str | None:
    """Whether the database takes a write now (a held lock or a read-only file say no)."""
    if store.path == MEMORY:
        return None  # the tests' in-memory store: nothing else can hold it
    try:
        connection = sqlite3.connect(store.path, timeout=timeout, isolation_level=None)
    except sqlite3.Error as error:
        return f"cannot open {store.path}: {error}"
    try:
        connection.execute(f"PRAGMA busy_timeout = {int(timeout * 1000)}")
        connection.execute("BEGIN IMMEDIATE")
        connection.execute(
            "INSERT OR REPLACE INTO bot_state (key, value) VALUES ('readiness-probe', '1')"
        )
        connection.execute("ROLLBACK")
    except sqlite3.Error as error:
        return f"the database {store.path} does not take writes: {error}"
    finally:
        connection.close()
    return None


def policies(policy: Callable[[], Any]) -> str | None:
    """Whether the policy files in force load as they are now. A broken change keeps the last
    good policy serving (``policies.reload``), but the files no longer say what is enforced:
    not ready, so the rollout that brought them stops."""
    try:
        policy()
    except StratusError as error:
        return f"the policy does not load: {error.message}"
    rejected = getattr(policy, "last_error", None)
    if rejected is not None:
        problems = getattr(rejected, "problems", None) or [rejected]
        return (
            f"the policy files do not load ({len(problems)} problem(s), the last good policy "
            f"stays in force): {problems[0]}"
        )
    return None


def cluster(kube: KubeClient, *, timeout: float = PROBE_SECONDS) -> str | None:
    """Whether the API server answers."""
    try:
        kube.ping(timeout)
    except StratusError as error:
        return error.message
    return None
