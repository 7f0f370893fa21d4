"""Fixtures for the tool layer: a client of the lab over HTTP, a fresh store, an executor."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from store.db import Store
from tests.conftest import Lab
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.reads import ClusterReader
from undo.stack import UndoStack


@pytest.fixture
def kube(lab: Lab) -> Iterator[KubeClient]:
    client = KubeClient(kubeconfig=str(lab.kubeconfig))
    yield client
    client.close()


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    db = Store(tmp_path / "stratus.db")
    yield db
    db.close()


@pytest.fixture
def executor(kube: KubeClient, store: Store) -> Executor:
    return Executor(kube, store, lock_wait=0.5)


@pytest.fixture
def stack(executor: Executor) -> UndoStack:
    return UndoStack(executor)


@pytest.fixture
def reader(kube: KubeClient) -> ClusterReader:
    return ClusterReader(kube)
