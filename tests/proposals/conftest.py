"""Fixtures for the proposal service: a store on a clock the test moves, a policy the test
sets, and the service wired to the lab over real HTTP."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from policies.evaluate import CompiledPolicy
from policies.loader import Policy, SourcedRule
from policies.model import Defaults, Rule
from proposals.service import ProposalService
from store.clock import ManualClock
from store.db import Store
from tools.executor import Executor
from tools.k8s import KubeClient


class PolicyBox:
    """The policy in force for a test; ``set`` changes it between calls, as a reload would."""

    def __init__(self) -> None:
        self.current = CompiledPolicy.build(Policy())

    def set(self, *rules: Rule, defaults: Defaults | None = None) -> None:
        sourced = tuple(SourcedRule(rule, f"test:{i}") for i, rule in enumerate(rules))
        self.current = CompiledPolicy.build(Policy(sourced, defaults or Defaults()))

    def __call__(self) -> CompiledPolicy:
        return self.current


@pytest.fixture
def clock() -> ManualClock:
    return ManualClock(datetime.now(UTC).replace(microsecond=0))


@pytest.fixture
def pstore(tmp_path: Path, clock: ManualClock) -> Iterator[Store]:
    store = Store(tmp_path / "service.db", clock=clock)
    yield store
    store.close()


@pytest.fixture
def policy() -> PolicyBox:
    return PolicyBox()


@pytest.fixture
def service(kube: KubeClient, pstore: Store, policy: PolicyBox) -> ProposalService:
    return ProposalService(
        store=pstore, executor=Executor(kube, pstore, lock_wait=0.5), policy=policy
    )
