"""Fixtures shared by the workflow tests that drive the real service against the lab: their
own store, a policy they set per test, and the hotel app with recommendation scaled to zero."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from proposals.service import ProposalService
from store.db import Store
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.executor import Executor
from tools.k8s import KubeClient


@pytest.fixture
def wstore(tmp_path: Path) -> Iterator[Store]:
    store = Store(tmp_path / "workflow.db")
    yield store
    store.close()


@pytest.fixture
def policy() -> PolicyBox:
    return PolicyBox()


@pytest.fixture
def service(kube: KubeClient, wstore: Store, policy: PolicyBox) -> ProposalService:
    return ProposalService(
        store=wstore, executor=Executor(kube, wstore, lock_wait=0.5), policy=policy
    )


@pytest.fixture
def broken(lab: Lab) -> Lab:
    lab.control.post("/lab/v1/scenarios/hotel-recommendation-scaled-to-zero/inject")
    lab.settle()
    return lab
