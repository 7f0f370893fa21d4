"""What the bot works with: the proposal service, the incident workflow and the store — and
the one way it calls them, in worker threads.

The service and the workflow are synchronous (SQLite, the Kubernetes client); the bot's event
loop must acknowledge Slack within three seconds, so every call goes through a worker thread,
and long work through ``spawn`` (a background task the bot keeps track of, so that shutting
down waits for it and nothing is dropped silently).

Three pools of worker threads, so that a click never waits behind an investigation: ``call``
for the short reads and writes an acknowledgement needs (a proposal, a link, a grant), ``work``
for what takes seconds (investigating, planning — which may wait a minute on a model —,
reading telemetry), and ``write`` for what a human asked for: executing an approved write,
carrying an incident on after an answer, undoing, cancelling. With one shared pool, six
incidents verifying at once held every thread and a click's stale-check queued behind them;
with two, eight investigations waiting on a slow model held every thread and an approved
write waited for them.
"""

from __future__ import annotations

import asyncio
import functools
import logging
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from slack_sdk.errors import SlackApiError

from bot.links import Links
from incidents.repository import IncidentRepository
from incidents.workflow import IncidentWorkflow
from policies import authority
from policies.evaluate import CompiledPolicy
from policies.grants import GrantBook
from proposals.killswitch import KillSwitch
from proposals.service import ProposalService
from store.db import Store
from tools.k8s import KubeClient
from tools.reads import ClusterReader

if TYPE_CHECKING:  # the model's client stack loads only when a model is configured
    from agents.llm.questions import QuestionAnswerer

T = TypeVar("T")
QUICK_THREADS = 8
WORK_THREADS = 8
WRITE_THREADS = 4
log = logging.getLogger("stratus.bot")


@dataclass
class Runtime:
    service: ProposalService
    workflow: IncidentWorkflow
    policy: Callable[[], CompiledPolicy]
    # Answers thread questions with the model when one is configured (rule-based otherwise).
    answerer: QuestionAnswerer | None = None
    tasks: set[asyncio.Task[Any]] = field(default_factory=set)
    # Whether this process may act now: with leader election, that it holds the Lease and
    # renewed it within the renew deadline (``tools.leader.Elector.acting``); always without.
    acting: Callable[[], bool] = field(default=lambda: True)

    def __post_init__(self) -> None:
        self.links = Links(self.store)
        self.incidents = IncidentRepository(self.store)
        self.switch = KillSwitch(self.store)
        self.grants = GrantBook(self.store)
        self.reader = ClusterReader(self.kube)
        self._quick = ThreadPoolExecutor(QUICK_THREADS, thread_name_prefix="stratus-quick")
        self._work = ThreadPoolExecutor(WORK_THREADS, thread_name_prefix="stratus-work")
        self._write = ThreadPoolExecutor(WRITE_THREADS, thread_name_prefix="stratus-write")
        # Calls running in the worker threads now (any pool: an investigation may carry out
        # an allowed write too): a stop waits for them (``calls_finished``).
        self.running = 0
        self._counting = threading.Lock()

    @property
    def store(self) -> Store:
        return self.service.store

    @property
    def kube(self) -> KubeClient:
        return self.workflow.kube

    def reader_for(self, cluster: str) -> ClusterReader:
        """The reader of the cluster a proposal names (its telemetry, its error lines): the
        default one's for '' — never another cluster's for a named one (``UnknownCluster``)."""
        kube = self.workflow.deps.on(cluster).kube
        return self.reader if kube is self.kube else ClusterReader(kube)

    async def call(self, func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """A short call (milliseconds) in a worker thread of its own pool."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._quick, functools.partial(self._counted, func, *args, **kwargs)
        )

    async def work(self, func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """A long call (seconds: reading the cluster, verifying, executing) in the other pool."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._work, functools.partial(self._counted, func, *args, **kwargs)
        )

    async def write(self, func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        """What a human asked for (an approved write, the incident's next move after an
        answer, an undo, a cancel) in a pool of its own: never queued behind model calls."""
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(
            self._write, functools.partial(self._counted, func, *args, **kwargs)
        )

    def _counted(self, func: Callable[..., T], /, *args: Any, **kwargs: Any) -> T:
        with self._counting:
            self.running += 1
        try:
            return func(*args, **kwargs)
        finally:
            with self._counting:
                self.running -= 1

    async def calls_finished(self, timeout: float) -> int:
        """Wait (up to ``timeout``) for the calls still running in worker threads — a task
        cancelled by ``drain`` leaves its thread running —; how many still run then. A thread
        cannot be stopped mid-call: a write among them is covered by its write-ahead record,
        which recovery settles, and everything else by the store's transactions."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.running and loop.time() < deadline:
            await asyncio.sleep(0.05)
        return self.running

    def spawn(self, work: Coroutine[Any, Any, Any], *, name: str = "") -> asyncio.Task[Any]:
        task = asyncio.get_running_loop().create_task(work, name=name or None)
        self.tasks.add(task)
        task.add_done_callback(self._finished)
        return task

    def _finished(self, task: asyncio.Task[Any]) -> None:
        self.tasks.discard(task)
        error = None if task.cancelled() else task.exception()
        if isinstance(error, SlackApiError):  # a user, channel or trigger Slack does not know
            log.warning(
                "background work %s: Slack refused a call: %s",
                task.get_name(),
                error.response.get("error"),
            )
        elif error is not None:
            log.error("background work %s failed", task.get_name(), exc_info=error)

    async def drain(self, timeout: float = 30.0) -> None:
        """Wait for background work (used when stopping and by tests); work still running
        after ``timeout`` is cancelled and named in the log (the workflow's state is in the
        store, so a restarted bot resumes it)."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while self.tasks and loop.time() < deadline:
            await asyncio.wait(set(self.tasks), timeout=max(deadline - loop.time(), 0.01))
        for task in list(self.tasks):
            log.warning("background work %s still running at shutdown; cancelled", task.get_name())
            task.cancel()

    def close(self) -> None:
        """Let the worker threads go once nothing runs on them (after ``drain``)."""
        self._quick.shutdown(wait=False, cancel_futures=True)
        self._work.shutdown(wait=False, cancel_futures=True)
        self._write.shutdown(wait=False, cancel_futures=True)

    def approvers_named(self) -> list[str]:
        """Everyone and every user group the policy names as an approver (for warming caches)."""
        policy = self.policy().policy
        named = list(policy.defaults.approvers)
        for sourced in policy.rules:
            named.extend(sourced.rule.approvers or [])
        return named

    def mapped_groups(self) -> list[str]:
        """The Slack user groups the impersonation mapping adds Kubernetes groups for. A voter's
        membership of each is looked up whatever the policy names (a policy of ``"*"`` names no
        group), so that the write made as them carries those groups."""
        mapping = self.service.impersonation
        return sorted(mapping.groups) if mapping is not None else []

    def admins(self) -> list[str]:
        """The admins of the policy in force (``policies.authority.admins``)."""
        return list(authority.admins(self.policy()))
