"""The fleet's pure parts (issue 19 §4), no socket: which clusters the flags and
``STRATUS_CLUSTERS`` configure, the bot's ``--cluster`` option, and policies that match
``clusters`` — loaded with file:line problems like every other key."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from bot.commands import cluster_option
from policies.evaluate import CompiledPolicy, ProposalFacts
from policies.loader import PolicyError, load
from tools import errors
from tools.fleet import ClusterConfig, configured

HEADER = "apiVersion: stratus/v1\nkind: ApprovalPolicy\nmetadata: {name: test}\n"
NOW = datetime(2026, 11, 25, 10, 0, tzinfo=UTC)


def test_without_a_fleet_there_is_one_unnamed_cluster_as_before() -> None:
    assert configured([], {}) == [ClusterConfig("", None)]
    # `--context x` alone picks a context, as it always did: no name shows anywhere.
    assert configured(["staging"], {}) == [ClusterConfig("", "staging")]


def test_contexts_or_stratus_clusters_name_the_fleet_first_one_default() -> None:
    assert [c.name for c in configured([], {"STRATUS_CLUSTERS": "eu, us ,eu,"})] == ["eu", "us"]
    assert [c.context for c in configured(["b", "a"], {})] == ["b", "a"]
    # Flags win over the environment; a single name in the environment is a fleet of one.
    assert [c.name for c in configured(["b", "c"], {"STRATUS_CLUSTERS": "a"})] == ["b", "c"]
    assert configured([], {"STRATUS_CLUSTERS": "a"}) == [ClusterConfig("a", "a")]
    local = configured([], {"STRATUS_CLUSTERS": "local,remote"})
    assert local[0] == ClusterConfig("local", None, in_cluster=True)


@pytest.mark.parametrize("name", ["Prod", "eu_west", "-a", "a" * 64, "a/b"])
def test_a_cluster_name_that_cannot_show_or_match_is_refused(name: str) -> None:
    with pytest.raises(errors.Invalid) as refused:
        configured([], {"STRATUS_CLUSTERS": f"ok,{name}"})
    assert "is not a usable cluster name" in refused.value.message


@pytest.mark.parametrize(
    ("rest", "expected"),
    [
        ("", ("", "")),
        ("why is it slow?", ("", "why is it slow?")),
        ("--cluster b", ("b", "")),
        ("--cluster b why is it slow?", ("b", "why is it slow?")),
        ("--cluster=b why?", ("b", "why?")),
        ("--cluster", (None, "")),
        ("--cluster=", (None, "")),
        ("is --cluster b down?", ("", "is --cluster b down?")),
    ],
)
def test_the_bot_reads_a_leading_cluster_option(
    rest: str, expected: tuple[str | None, str]
) -> None:
    assert cluster_option(rest) == expected


def facts(cluster: str) -> ProposalFacts:
    return ProposalFacts(
        action="scale",
        namespace="hotel",
        kind="Deployment",
        name="frontend",
        risk="medium",
        reversible=True,
        requester="U0ALICE",
        cluster=cluster,
    )


def test_a_rule_matches_clusters_by_glob_and_with_namespaces(tmp_path: Path) -> None:
    (tmp_path / "policy.yaml").write_text(
        HEADER
        + "rules:\n"
        + "  - {name: freeze-prod, decision: deny, match: {clusters: ['prod-*']}}\n"
        + "  - name: ask-staging-hotel\n    decision: ask\n"
        + "    match: {clusters: [staging], namespaces: [hotel]}\n"
    )
    policy = CompiledPolicy.build(load([tmp_path]))

    def matched(cluster: str) -> list[str]:
        return [rule.name for rule in policy.matching(facts(cluster), NOW)]

    assert matched("prod-eu") == ["freeze-prod"]
    assert matched("staging") == ["ask-staging-hotel"]
    assert matched("dev") == [] and matched("") == []


@pytest.mark.parametrize(
    ("match", "says"),
    [
        ("{clusters: []}", "would match anything, not nothing"),
        ("{clusters: ['Prod EU']}", "can never match a Kubernetes name"),
        ("{clusters: prod}", "list"),
    ],
)
def test_a_bad_clusters_key_is_a_problem_at_its_line(tmp_path: Path, match: str, says: str) -> None:
    (tmp_path / "policy.yaml").write_text(
        HEADER + f"rules:\n  - name: a\n    decision: deny\n    match: {match}\n"
    )
    with pytest.raises(PolicyError) as failure:
        load([tmp_path])
    shown = [str(p) for p in failure.value.problems]
    assert len(shown) == 1 and "policy.yaml:7" in shown[0] and says in shown[0], shown
