"""Many incidents at once across a fleet, through the bot (issue 19 §4): the load that
``benchmarks/bench_fleet.py`` times and ``tests/fleet/test_fleet_load.py`` checks.

Every incident is asked for with ``/stratus investigate <namespace> --cluster <c>`` in the
Slack playground, all at once: the hotel namespace of each cluster is broken (its fix is a
write), the other namespaces are empty and healthy (an incident that opens, looks and ends);
on top, several more commands for one namespace of one cluster, which must join its incident.
Then, once every incident has ended: no lost update (each reached a final state and its events
say so), no duplicate incident or proposal, every write has its undo entry, no lease left
behind, the audit chain verifies, and each lab holds exactly its own fix.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from incidents.model import IncidentState
from incidents.repository import IncidentEventType
from lab.slack.client import AsyncPlaygroundClient
from lab.slack.workspace import DEFAULT_USERS
from policies.model import Rule
from proposals.model import ProposalState
from store.audit import AuditLog
from tests.fleet.conftest import CLUSTERS, FleetLabs, Stack, fleet_bot
from tests.proposals.conftest import PolicyBox
from tools.objects import ObjectRef

ALLOW = Rule(name="allow-everything", decision="allow", allow_irreversible=True)
SCENARIO = "hotel-recommendation-scaled-to-zero"
BUSY = ("a", "hotel")  # the namespace that gets the extra commands
USERS = [user.id for user in DEFAULT_USERS]


@dataclass
class LoadResult:
    commands: int
    incidents: int
    acks_ms: list[float]
    seconds_to_final: float
    problems: list[str] = field(default_factory=list)
    # The same number of `/stratus help` at once just before (nothing spawned): what the
    # machine and the playground give an acknowledgement without the investigations' work.
    baseline_ms: list[float] = field(default_factory=list)

    def figures(self) -> dict[str, Any]:
        acks = sorted(self.acks_ms)
        baseline = sorted(self.baseline_ms) or [0.0]
        return {
            "help_baseline_p50_ms": round(statistics.median(baseline), 1),
            "help_baseline_p99_ms": round(_p99(baseline), 1),
            "commands": self.commands,
            "incidents": self.incidents,
            "ack_p50_ms": round(statistics.median(acks), 1),
            "ack_p99_ms": round(_p99(acks), 1),
            "ack_max_ms": round(acks[-1], 1),
            "seconds_until_every_incident_ended": round(self.seconds_to_final, 1),
            "problems": self.problems,
        }


def _p99(ordered: list[float]) -> float:
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))]


def pairs(incidents: int) -> list[tuple[str, str]]:
    """``incidents`` distinct (cluster, namespace) pairs: each cluster's hotel first, then
    empty namespaces round-robin over the clusters."""
    chosen = [(cluster, "hotel") for cluster in CLUSTERS]
    number = 0
    while len(chosen) < incidents:
        chosen.append((CLUSTERS[number % len(CLUSTERS)], f"load-{number:02d}"))
        number += 1
    return chosen[:incidents]


def prepare(labs: FleetLabs, chosen: list[tuple[str, str]], stack: Stack) -> None:
    labs.reset()
    for cluster in CLUSTERS:
        labs.inject(cluster, SCENARIO)
    for cluster, namespace in chosen:
        if namespace != "hotel":
            stack.clusters.client(cluster).create(
                {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": namespace}}
            )


async def run(
    labs: FleetLabs, folder: Path, *, incidents: int = 50, same: int = 10, timeout: float = 600
) -> LoadResult:
    policy = PolicyBox()
    policy.set(ALLOW)
    chosen = pairs(incidents)
    async with fleet_bot(labs, folder / "load.db", policy, settle_timeout=10) as bot:
        prepare(labs, chosen, bot.stack)
        result = await send_and_check(bot.slack, bot.stack, labs, chosen, same, timeout)
        await bot.settle()
        return result


async def send_and_check(
    slack: AsyncPlaygroundClient,
    stack: Stack,
    labs: FleetLabs,
    chosen: list[tuple[str, str]],
    same: int,
    timeout: float,
) -> LoadResult:
    """Every command at once through the playground, then wait for every incident to end
    (bounded) and check what must hold (``check``)."""
    # The busy namespace's extra commands first, so that most find its incident open.
    commands = [BUSY] * (same - 1) + chosen
    helped = await asyncio.gather(
        *[slack.command(USERS[n % len(USERS)], "/stratus", "help") for n in range(len(commands))]
    )
    baseline = [float(d["attempts"][0]["ms"]) for d in helped if d.get("attempts")]
    started = time.monotonic()
    deliveries = await asyncio.gather(
        *[
            slack.command(USERS[n % len(USERS)], "/stratus", f"investigate {ns} --cluster {c}")
            for n, (c, ns) in enumerate(commands)
        ]
    )
    acks = [float(d["attempts"][0]["ms"]) for d in deliveries if d.get("attempts")]
    problems = [f"command not acknowledged: {d}" for d in deliveries if not d.get("ok")]
    ended = await _all_ended(stack, len(chosen), timeout)
    elapsed = time.monotonic() - started
    problems += [] if ended else [f"not every incident ended within {timeout:.0f} s"]
    await asyncio.sleep(1.0)  # the bot's last writes after the final state (its summary)
    problems += check(stack, labs, chosen, same)
    return LoadResult(len(commands), len(chosen), acks, elapsed, problems, baseline)


async def _all_ended(stack: Stack, incidents: int, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = await asyncio.to_thread(stack.flow.incidents.recent, limit=1000)
        if len(found) >= incidents and not any(i.is_open for i in found):
            return True
        await asyncio.sleep(0.5)
    return False


def check(stack: Stack, labs: FleetLabs, chosen: list[tuple[str, str]], same: int) -> list[str]:
    """What must hold after the load, one line per problem (none: it held)."""
    problems: list[str] = []
    store = stack.service.store
    found = stack.flow.incidents.recent(limit=1000)
    where = Counter((i.cluster, i.namespace) for i in found)
    problems += [f"{n} incidents on {key}" for key, n in where.items() if n != 1 and key != BUSY]
    if set(where) != set(chosen):
        problems.append(f"incidents on {sorted(set(where) ^ set(chosen))} unexpected or missing")
    fixes: Counter[str] = Counter()  # executed writes of each cluster's hotel incidents
    for incident in found:
        if incident.is_open:
            problems.append(f"{incident.id} ({incident.cluster}/{incident.namespace}) still open")
        events = [e.event for e in stack.flow.incidents.events(incident_id=incident.id)]
        if not events or events[0].type != IncidentEventType.OPENED:
            problems.append(f"{incident.id}: its first event is not its opening")
        moves = [e for e in events if e.type == IncidentEventType.STATE_CHANGED]
        if not moves or moves[-1].state != incident.state.value:
            problems.append(f"{incident.id}: its events do not end in its state")
        proposals = stack.service.by_incident(incident.id)
        if {p.cluster for p in proposals} - {incident.cluster}:
            problems.append(f"{incident.id}: a proposal names another cluster")
        if incident.namespace == "hotel":
            executed = [p for p in proposals if p.state == ProposalState.EXECUTED]
            fixes[incident.cluster] += len(executed)
            if incident.state != IncidentState.RESOLVED:
                problems.append(
                    f"{incident.id} in {incident.cluster}: {incident.state.value} "
                    f"({incident.reason})"
                )
        elif proposals:
            problems.append(f"{incident.id}: a healthy namespace got proposals")
        steps = Counter((p.action, str(p.target), p.plan.digest) for p in proposals)
        problems += [
            f"{incident.id}: duplicate proposal {key}" for key, n in steps.items() if n > 1
        ]
    # One fix per cluster, whichever of its hotel incidents made it (a command for the busy
    # namespace that came after its incident ended opened a healthy one of its own).
    if fixes != Counter(CLUSTERS):
        problems.append(f"executed fixes by cluster: {dict(fixes)}")
    # Each command for the busy namespace opened its incident or joined the open one (a
    # command that came after it ended opens the next): none was lost, none doubled.
    busy = [i for i in found if (i.cluster, i.namespace) == BUSY]
    joins = [
        e
        for incident in busy
        for e in stack.flow.incidents.events(incident_id=incident.id)
        if e.event.type == IncidentEventType.NOTE and "joined" in e.event.message
    ]
    if len(busy) + len(joins) != same:
        problems.append(f"{same} commands on {BUSY}: {len(busy)} opened, {len(joins)} joined")
    pending = store.query("SELECT id FROM executions WHERE state = 'pending'")
    problems += [f"write {row['id']} left pending" for row in pending]
    applied = store.query("SELECT id, cluster FROM executions WHERE state = 'applied'")
    entries = {row["execution_id"] for row in store.query("SELECT execution_id FROM undo_entries")}
    problems += [f"write {r['id']} has no undo entry" for r in applied if r["id"] not in entries]
    if Counter(r["cluster"] for r in applied) != Counter(CLUSTERS):
        problems.append(f"writes by cluster: {Counter(r['cluster'] for r in applied)}")
    leases = store.query("SELECT resource FROM locks WHERE resource NOT LIKE 'incident:%'")
    problems += [f"lease left on {row['resource']}" for row in leases]
    problems += [f"audit: {line}" for line in AuditLog(store).verify()]
    for cluster in CLUSTERS:
        ref = ObjectRef("Deployment", "recommendation", "hotel")
        if stack.replicas(cluster, ref) != 1:
            problems.append(f"recommendation in {cluster} was not fixed")
        check_result = labs.control(cluster).get(f"/lab/v1/scenarios/{SCENARIO}/check")
        if not check_result["mitigated"]:
            problems.append(f"{cluster}: the scenario's oracle says not mitigated")
    return problems
