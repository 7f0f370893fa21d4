"""Incident workflow benchmarks (issue 9): investigate → first proposal with the offline planner
on the hotel app and on a namespace with 1,000 pods, the telemetry context a model would get
for both (in tokens), the peak RSS of a whole investigation, and the time to mitigate on a
realtime lab with every action auto-approved.

Run with ``.venv/bin/python benchmarks/bench_workflow.py``; figures go in docs/benchmarks.md.
Goals: first proposal < 1 s median (hotel) and < 3 s (1,000 pods); telemetry context
≤ 2,000 tokens; peak RSS of an investigation < 200 MB; time to mitigate < 10 s median.

The workflow is the product's, unmodified, against the lab over HTTP: the same wiring as
``stratus eval`` (``cli.eval_commands``), with a policy that asks a human (so the first
proposal is where the run stops) or one that allows everything (time to mitigate).
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from agents.analyzers import analyze
from agents.llm import budget, context
from agents.model import PlanResult
from agents.planner import PlanRequest
from agents.planner.offline import OfflinePlanner
from agents.snapshot import take
from incidents.model import IncidentState
from incidents.settings import WorkflowConfig
from incidents.workflow import IncidentWorkflow
from lab import scenarios
from lab.client import LabClient
from lab.cluster.resources import by_kind
from lab.cluster_sim import Cluster
from lab.runner import LabServer, write_kubeconfig
from policies.evaluate import CompiledPolicy
from policies.loader import Policy, SourcedRule
from policies.model import Rule
from proposals.service import ProposalService
from store.db import Store
from tools.executor import Executor
from tools.k8s import KubeClient

RUNS = 7
REALTIME_RUNS = 3
HOTEL_SCENARIOS = (
    "hotel-geo-target-port",
    "hotel-rate-buggy-image",
    "hotel-recommendation-scaled-to-zero",
)
BIG_SCENARIO = "hotel-rate-buggy-image"
FILLER_PODS = 1000
SYMPTOMS = 5.0
ASK = CompiledPolicy.build(Policy())  # no rule: every action waits for a human
ALLOW = CompiledPolicy.build(
    Policy((SourcedRule(Rule(name="bench-allow", decision="allow", allow_irreversible=True), "b"),))
)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def _fill(cluster: Cluster) -> None:
    """1,000 more running pods in the hotel namespace (bare pods: each its own owner)."""
    for index in range(FILLER_PODS):
        cluster.api.create(
            by_kind("Pod"),
            "hotel",
            {
                "metadata": {"name": f"batch-worker-{index:04d}", "labels": {"app": "batch"}},
                "spec": {
                    "containers": [
                        {"name": "c", "image": "memcached:1.6.7", "ports": [{"containerPort": 1}]}
                    ]
                },
            },
        )
    cluster.settle()


@contextmanager
def lab(scenario: str, *, mode: str = "instant", filler: bool = False) -> Iterator[LabServer]:
    server = LabServer(mode=mode, apps=["hotel"]).start()
    try:
        if filler:
            server.call(_fill)
        LabClient(server.url).post(
            f"/lab/v1/scenarios/{scenario}/inject", scenarios.scenario_request(scenario)
        )
        yield server
    finally:
        server.stop()


@contextmanager
def workflow(
    server: LabServer, policy: CompiledPolicy, **config: Any
) -> Iterator[IncidentWorkflow]:
    folder = Path(tempfile.mkdtemp(prefix="bench-workflow-"))
    kube = KubeClient(kubeconfig=str(write_kubeconfig(folder / "kubeconfig", server.url, "hotel")))
    store = Store(folder / "stratus.db")
    service = ProposalService(store=store, executor=Executor(kube, store), policy=lambda: policy)
    try:
        yield IncidentWorkflow(
            service=service, kube=kube, offline=OfflinePlanner(), config=WorkflowConfig(**config)
        )
    finally:
        kube.close()
        store.close()


def first_proposal(server: LabServer, runs: int) -> list[float]:
    """start + advance until the first proposal waits for a human (nothing is written)."""
    times = []
    for _ in range(runs):
        with workflow(server, ASK) as flow:
            started = time.perf_counter()
            incident, _ = flow.start("hotel", requester="cli:bench")
            waiting = flow.advance(incident.id)
            times.append(time.perf_counter() - started)
            assert waiting.state == IncidentState.AWAITING_APPROVAL, waiting.state
            assert flow.service.by_incident(incident.id), "no proposal was made"
            flow.cancel(incident.id, actor="cli:bench")
    return times


def context_tokens(server: LabServer) -> tuple[int, int]:
    """(tokens, pods): the telemetry context the LLM planner would give a model."""
    folder = Path(tempfile.mkdtemp(prefix="bench-context-"))
    kube = KubeClient(kubeconfig=str(write_kubeconfig(folder / "kubeconfig", server.url, "hotel")))
    try:
        snap = take(kube, "hotel")
        findings = analyze(snap)
        request = PlanRequest(snapshot=snap, findings=findings, offline=PlanResult(diagnosis=None))
        offline = OfflinePlanner().plan(request)
        built = context.build(PlanRequest(snapshot=snap, findings=findings, offline=offline))
        return built.tokens, len(snap.objects.get("Pod", []))
    finally:
        kube.close()


# VmHWM, not the parent's ru_maxrss for the child: on Linux that keeps the high-water mark of
# the forked copy of this process (the lab and its pods) from before the exec.
_RSS_CHILD = """
import sys
from pathlib import Path
from cli.eval_commands import investigate
state = investigate(Path(sys.argv[1]), "hotel")["state"]
with open("/proc/self/status") as status:
    peak = next(int(line.split()[1]) for line in status if line.startswith("VmHWM"))
print(state, peak)
"""


def peak_rss(server: LabServer) -> tuple[float, str]:
    """Peak RSS (MiB) of a process that runs one whole investigation, auto-approved: the
    interpreter, the product's imports and the workflow; the lab runs in this process."""
    folder = Path(tempfile.mkdtemp(prefix="bench-rss-"))
    kubeconfig = write_kubeconfig(folder / "kubeconfig", server.url, "hotel")
    done = subprocess.run(
        [sys.executable, "-c", _RSS_CHILD, str(kubeconfig)],
        capture_output=True,
        text=True,
        check=True,
        cwd=Path(__file__).resolve().parent.parent,
    )
    state, peak_kib = done.stdout.split()
    return int(peak_kib) / 1024, state


def _until_broken(server: LabServer, scenario: str, limit: float = 30.0) -> float:
    """Realtime: wait until the oracle sees the fault, then ``SYMPTOMS`` seconds more for its
    symptoms to develop (a crash loop, callers' failed requests), as before an alert fires."""
    started = time.perf_counter()
    control = LabClient(server.url)
    while time.perf_counter() - started < limit:
        if not control.get(f"/lab/v1/scenarios/{scenario}/check")["mitigated"]:
            time.sleep(SYMPTOMS)
            return time.perf_counter() - started
        time.sleep(0.25)
    raise RuntimeError(f"{scenario}: no symptom within {limit} s")


def realtime_mitigation(scenario: str, runs: int) -> list[tuple[float, str, bool]]:
    """(seconds from investigate to resolved, end state, oracle passed) per run, each on a
    fresh realtime lab, with the workflow's default settle wait and poll interval."""
    results = []
    for _ in range(runs):
        with lab(scenario, mode="realtime") as server:
            _until_broken(server, scenario)
            with workflow(server, ALLOW) as flow:
                started = time.perf_counter()
                incident, _ = flow.start("hotel", requester="cli:bench")
                done = flow.advance(incident.id)
                elapsed = time.perf_counter() - started
            verdict = LabClient(server.url).get(f"/lab/v1/scenarios/{scenario}/check")
            verdicts = "/".join(str(a.verdict) for a in done.attempts) or "no attempt"
            end = f"{done.state} ({done.reason}; {verdicts})"
            results.append((elapsed, end, bool(verdict["passed"])))
    return results


def main() -> None:
    print(f"investigate → first proposal, offline planner, hotel app; median of {RUNS}")
    everything: list[float] = []
    for scenario in HOTEL_SCENARIOS:
        with lab(scenario) as server:
            times = first_proposal(server, RUNS)
            tokens, pods = context_tokens(server)
        everything += times
        print(
            f"  {scenario:<38} {_ms(statistics.median(times)):>9}  "
            f"(min {_ms(min(times))}, max {_ms(max(times))}); context {tokens} tokens, {pods} pods"
        )
    print(f"  all hotel runs: median {_ms(statistics.median(everything))}")

    print(f"\nthe same with {FILLER_PODS:,} more running pods in the namespace ({BIG_SCENARIO})")
    with lab(BIG_SCENARIO, filler=True) as server:
        times = first_proposal(server, 5)
        tokens, pods = context_tokens(server)
        print(
            f"  first proposal: median {_ms(statistics.median(times))} of 5 "
            f"(min {_ms(min(times))}, max {_ms(max(times))}); context {tokens} tokens "
            f"(budget {budget.CONTEXT_TOKENS}), {pods} pods"
        )
        rss_big, state_big = peak_rss(server)
    with lab(BIG_SCENARIO) as server:
        rss, state = peak_rss(server)
    print("\npeak RSS of a process running one whole investigation (auto-approved)")
    print(f"  hotel ({BIG_SCENARIO}): {rss:.0f} MiB, ended {state}")
    print(f"  hotel + {FILLER_PODS:,} pods: {rss_big:.0f} MiB, ended {state_big}")

    print(f"\ntime to mitigate, realtime lab, auto-approved; {REALTIME_RUNS} runs per scenario")
    all_times: list[float] = []
    for scenario in HOTEL_SCENARIOS:
        runs = realtime_mitigation(scenario, REALTIME_RUNS)
        times = [t for t, _, _ in runs]
        all_times += times
        ends = ", ".join(
            sorted({f"{end}{'' if ok else ' — oracle FAILED'}" for _, end, ok in runs})
        )
        print(f"  {scenario:<38} median {statistics.median(times):5.1f} s  ({ends})")
    print(f"  all: median {statistics.median(all_times):.1f} s")


if __name__ == "__main__":
    main()
