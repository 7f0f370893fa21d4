"""Policy benchmarks: decisions per second with 1,000 rules and 10,000 grants, and the time to
reload a directory of 50 files. Goal (issue "Approval policies"): >= 10,000 decisions/s.

Run with ``.venv/bin/python benchmarks/bench_policies.py``; record the figures in
docs/benchmarks.md.
"""

from __future__ import annotations

import random
import statistics
import tempfile
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path

from policies.evaluate import CompiledPolicy, Grant, GrantIndex, ProposalFacts, evaluate
from policies.loader import load
from tools.actions import CATALOG

ACTIONS = sorted(CATALOG)
NOW = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def rule_yaml(index: int, rng: random.Random) -> str:
    decision = rng.choice(["deny", "ask", "ask", "allow"])
    lines = [
        f"  - name: rule-{index}",
        "    match:",
        f"      actions: [{rng.choice(ACTIONS)}]",
        f'      namespaces: ["team-{rng.randrange(200)}-*"]',
    ]
    if rng.random() < 0.3:
        lines.append(f'      names: ["svc-{rng.randrange(50)}*"]')
    lines.append(f"    decision: {decision}")
    if decision == "ask" and rng.random() < 0.5:
        lines += ["    remember: true", "    max_grant: 8h"]
    return "\n".join(lines)


def write_policy(folder: Path, files: int, rules_per_file: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    for number in range(files):
        body = "\n".join(rule_yaml(number * rules_per_file + i, rng) for i in range(rules_per_file))
        (folder / f"policy-{number:02d}.yaml").write_text(
            f"apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {{name: p{number}}}\n"
            f"rules:\n{body}\n"
        )


def main() -> None:
    rng = random.Random(11)
    with tempfile.TemporaryDirectory() as folder:
        write_policy(Path(folder), files=50, rules_per_file=20)  # 1,000 rules
        reloads = []
        for _ in range(5):
            started = time.perf_counter()
            compiled = CompiledPolicy.build(load([Path(folder)]))
            reloads.append(time.perf_counter() - started)
    print(
        f"reload of 50 files / {len(compiled.policy.rules)} rules: median "
        f"{statistics.median(reloads) * 1000:.0f} ms over {len(reloads)} runs"
    )
    facts = []
    for _ in range(5_000):
        action = rng.choice(ACTIONS)
        facts.append(
            ProposalFacts(
                action,
                f"team-{rng.randrange(200)}-prod",
                CATALOG[action].kinds[0],
                f"svc-{rng.randrange(60)}",
                CATALOG[action].risk,
                CATALOG[action].reversible,
                "U1",
            )
        )
    grants = GrantIndex(
        Grant(f"g{i}", f.action, f.namespace, f.resource, "U2", NOW + timedelta(hours=1))
        for i, f in enumerate(rng.choices(facts, k=10_000))
    )
    rates = []
    outcomes: dict[str, int] = {}
    for _ in range(5):
        started = time.perf_counter()
        for item in facts:
            decision = evaluate(item, compiled, grants, NOW)
            outcomes[decision.outcome] = outcomes.get(decision.outcome, 0) + 1
        rates.append(len(facts) / (time.perf_counter() - started))
    print(
        f"decisions with 1,000 rules and 10,000 grants: median {statistics.median(rates):,.0f}"
        f"/s over {len(rates)} runs of {len(facts):,} (outcomes {outcomes})"
    )


if __name__ == "__main__":
    main()
