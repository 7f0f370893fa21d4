"""Issue 19 §5, bad policy files: generated files — a policy with a defaults floor and a deny
rule, attacked with duplicate keys, merge keys, tags, a second document, alias bombs, wrong
types, deep nesting, huge values, control characters, or replaced by random YAML — loaded by
the real loader. Property: it loads, or raises ``PolicyError`` whose every problem is at
``file:line:column`` in that file with words (never another exception); and what loads is
never looser than the file reads: the deny rule denies, and every ask keeps the defaults'
floor (two approvals from S0SRE, no self-approval). Seeded (``SEED``), no socket."""

from __future__ import annotations

import random
import re
from datetime import UTC, datetime
from pathlib import Path

from policies.evaluate import CompiledPolicy, ProposalFacts, evaluate
from policies.loader import load
from policies.problems import PolicyError

SEED = 19
FILES = 1_000
BASE = """\
apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: generated}
defaults:
  approvers: [S0SRE]
  min_approvals: 2
  self_approval: false
rules:
  - name: freeze-prod
    match: {namespaces: ["prod-*"]}
    decision: deny
  - name: ask-hotel
    match: {namespaces: [hotel], actions: [scale, set-env]}
    decision: ask
    approvers: [S0SRE, U0LEAD]
"""
# Each attack, written so that a loader that accepted it silently would load a looser policy
# (or hang, or crash): what it appends to, or how it rewrites, the base.
ATTACKS = {
    "duplicate-decision": lambda r: BASE.replace(
        "    decision: deny\n", "    decision: deny\n    decision: allow\n"
    ),
    "duplicate-rules": lambda r: BASE + "rules:\n  - {name: open, decision: allow}\n",
    "duplicate-defaults-key": lambda r: BASE.replace(
        "  min_approvals: 2\n", "  min_approvals: 2\n  min_approvals: 1\n"
    ),
    "merge-key": lambda r: (
        BASE + "  - &open {name: open, decision: allow}\n  - <<: *open\n    name: open2\n"
    ),
    "tagged-value": lambda r: BASE.replace("decision: deny", "decision: !!str allow # deny"),
    "binary-tag": lambda r: BASE.replace("kinds", "kinds").replace(
        '["prod-*"]', "[!!binary cHJvZC0q]"
    ),
    "second-document": lambda r: BASE + "---\n" + BASE.replace("decision: deny", "decision: allow"),
    "alias-bomb": lambda r: (
        "a: &a ["
        + ",".join(["x"] * 9)
        + "]\n"
        + "".join(
            f"{chr(98 + i)}: &{chr(98 + i)} [" + ",".join([f"*{chr(97 + i)}"] * 9) + "]\n"
            for i in range(r.randrange(3, 9))
        )
        + BASE
    ),
    "self-alias": lambda r: BASE + "x: &x [*x]\n",
    "wrong-type-quorum": lambda r: BASE.replace(
        "min_approvals: 2",
        r.choice(["min_approvals: '2'", "min_approvals: 2.0", "min_approvals: true"]),
    ),
    "wrong-type-bool": lambda r: BASE.replace(
        "self_approval: false", r.choice(['self_approval: "false"', "self_approval: 0"])
    ),
    "wrong-type-list": lambda r: BASE.replace("approvers: [S0SRE]\n", "approvers: S0SRE\n"),
    "empty-approvers": lambda r: BASE.replace("approvers: [S0SRE]\n", "approvers: []\n"),
    "empty-match": lambda r: BASE.replace('["prod-*"]', "[]"),
    "deep-nesting": lambda r: (
        BASE
        + "  - name: deep\n    decision: ask\n    description: "
        + "[" * r.randrange(40, 400)
        + "]" * 1
        + "\n"
    ),
    "huge-value": lambda r: (
        BASE
        + f"  - name: huge\n    decision: ask\n    description: {'x' * r.randrange(2**20, 2**21)}\n"
    ),
    "huge-number": lambda r: BASE.replace("min_approvals: 2", "min_approvals: " + "9" * 5000),
    "huge-duration": lambda r: BASE.replace(
        "self_approval: false", "self_approval: false\n  approval_timeout: 99999999999d"
    ),
    "control-character": lambda r: BASE.replace(
        "name: ask-hotel",
        r.choice(["name: ask\x1b[2J-hotel", 'name: "ask\\0hotel"', "name: a\u202eb"]),
    ),
    "unquoted-time": lambda r: (
        BASE + "  - name: nights\n    match: {window: {days: [mon], start: 22:00, end: 06:00}}\n"
        "    decision: allow\n"
    ),
    "unknown-key": lambda r: BASE.replace("decision: deny", "decision: deny\n    decison: allow"),
    "bad-glob": lambda r: BASE.replace(
        '"prod-*"', r.choice(['"prod-[*"', '"^prod.*$"', '"PROD-*"'])
    ),
    "yaml-syntax": lambda r: (
        BASE[: r.randrange(len(BASE))] + r.choice(["{", "[", ": :", "\t- x", '"'])
    ),
    "not-utf8": lambda r: BASE.encode().replace(b"hotel", b"h\xffotel").decode("latin-1"),
}
# What loads: the base as people write it (comments, anchors, flow or block style, quotes).
BENIGN = {
    "base": lambda r: BASE,
    "anchored-approvers": lambda r: (
        BASE.replace("approvers: [S0SRE]\n", "approvers: &sre [S0SRE]\n")
        + "  - name: ask-shop\n    match: {namespaces: [shop]}\n    decision: ask\n"
        "    approvers: *sre\n"
    ),
    "comments": lambda r: (
        "# reviewed\n" + BASE.replace("decision: deny", "decision: deny  # freeze")
    ),
    "quoted": lambda r: BASE.replace("decision: deny", 'decision: "deny"').replace(
        "name: ask-hotel", "name: 'ask-hotel'"
    ),
    "stricter-rule": lambda r: (
        BASE + "  - name: two-for-shop\n    match: {namespaces: [shop]}\n    decision: ask\n"
        "    min_approvals: 3\n"
    ),
}
SCALARS = ["deny", "allow", "ask", "*", "~", "", "yes", "0x1F", "1e999", "2024-13-45", "&x", "*x"]


def random_yaml(rng: random.Random, depth: int = 0) -> str:
    """A random YAML value: mappings, lists and scalars, some of them policy keys."""
    keys = ["apiVersion", "kind", "rules", "defaults", "decision", "match", "name", "approvers"]
    pad = "  " * depth
    choice = rng.randrange(4) if depth < 6 else 3
    if choice == 0:
        return "".join(
            f"\n{pad}{rng.choice(keys)}: {random_yaml(rng, depth + 1)}"
            for _ in range(rng.randrange(1, 4))
        )
    if choice == 1:
        return "".join(
            f"\n{pad}- {random_yaml(rng, depth + 1)}" for _ in range(rng.randrange(1, 3))
        )
    if choice == 2:
        return "{" + ", ".join(f"{rng.choice(keys)}: {rng.choice(SCALARS)}" for _ in range(2)) + "}"
    return rng.choice(SCALARS)


def generated(rng: random.Random) -> tuple[str, str]:
    """A file's kind and text: the base attacked once or twice, or random YAML."""
    if rng.random() < 0.25:
        prefix = "apiVersion: stratus/v1\nkind: ApprovalPolicy\n" if rng.random() < 0.5 else ""
        return "random", prefix + random_yaml(rng).lstrip("\n") + "\n"
    if rng.random() < 0.1:
        name = rng.choice(sorted(BENIGN))
        return name, BENIGN[name](rng)
    name = rng.choice(sorted(ATTACKS))
    return name, ATTACKS[name](rng)


NOW = datetime(2026, 1, 1, tzinfo=UTC)
PROBES = [
    ProposalFacts(
        action=action,
        namespace=namespace,
        kind="Deployment",
        name="web",
        risk="medium",
        reversible=True,
        requester="U0REQ",
    )
    for action in ("scale", "set-env", "delete-pod", "rollout-restart")
    for namespace in ("prod-eu", "hotel", "shop")
]
LOCATED = re.compile(r"^(?P<path>.+):(?P<line>\d+):(?P<column>\d+): \S")


def not_looser(compiled: CompiledPolicy) -> str | None:
    """Why the loaded policy is looser than the file reads, or None."""
    for facts in PROBES:
        decision = evaluate(facts, compiled, [], NOW)
        if facts.namespace.startswith("prod-") and decision.outcome != "deny":
            return f"{facts.action} in {facts.namespace}: {decision.outcome}, not deny"
        if decision.outcome == "allow":
            return f"{facts.action} in {facts.namespace} is allowed"
        if decision.outcome == "ask" and (
            decision.min_approvals < 2
            or decision.self_approval
            or not any("S0SRE" in names for names in decision.approvers)
        ):
            return f"{facts.action} in {facts.namespace} asks below the floor: {decision}"
    return None


def test_thousands_of_generated_policy_files_load_or_fail_at_their_line(tmp_path: Path) -> None:
    rng = random.Random(SEED)
    loaded, refused, by_kind = 0, 0, dict[str, list[int]]()
    for case in range(FILES):
        kind, content = generated(rng)
        path = tmp_path / f"case-{case}.yaml"
        path.write_bytes(content.encode("latin-1") if kind == "not-utf8" else content.encode())
        counts = by_kind.setdefault(kind, [0, 0])
        try:
            policy = load([path])
        except PolicyError as error:
            refused += 1
            counts[1] += 1
            assert error.problems, (case, kind)
            for problem in error.problems:
                shown = LOCATED.match(str(problem))
                assert shown and shown["path"] == str(path), (case, kind, str(problem))
                assert problem.line >= 1 and problem.column >= 1, (case, kind, str(problem))
                assert "Traceback" not in problem.message and "object at 0x" not in problem.message
        else:
            loaded += 1
            counts[0] += 1
            why = not_looser(CompiledPolicy.build(policy)) if kind != "random" else None
            assert why is None, (case, kind, why)
        path.unlink()
    attacks = {k: v for k, v in by_kind.items() if k in ATTACKS}
    benign = sum(v[0] for k, v in by_kind.items() if k in BENIGN)
    assert benign == sum(sum(v) for k, v in by_kind.items() if k in BENIGN) > 0
    # Every attack is refused: none of them is a policy a reviewer could read as it loads.
    assert all(v[0] == 0 for v in attacks.values()), {k: v for k, v in attacks.items() if v[0]}
    print(
        f"\nbad input, policies: {FILES:,} generated policy files ({len(attacks)} kinds of "
        f"attack on a policy, {by_kind['random'][0] + by_kind['random'][1]:,} random YAML): "
        f"{refused:,} refused with PolicyError at file:line:column, {loaded:,} loaded "
        f"({benign:,} policies as people write them, {by_kind['random'][0]:,} random), "
        "0 other exceptions, 0 looser than the file reads"
    )
