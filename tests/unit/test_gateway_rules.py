"""The MCP gateway's rules as pure functions, without a socket: client tokens (hashed, matched
in constant time, revoked by removing the client), policy rules on the requester, the
catalog's schemas and the checks of a call, and a client's limits and repeats."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import yaml
from pydantic import ValidationError

from policies import clients
from policies.evaluate import CompiledPolicy, ProposalFacts, evaluate
from policies.loader import Policy, SourcedRule
from policies.model import Match, Rule
from proposals import intake
from proposals.model import Decision, Facts, PlanSnapshot, Proposal, ProposalState, Target
from tools import actions, schemas

NOW = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
P = ProposalState


def write(path: Path, *entries: dict[str, Any]) -> Path:
    path.write_text(yaml.safe_dump({"clients": list(entries)}))
    return path


def test_a_token_is_matched_by_its_hash_and_revoked_by_removing_the_client(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path / "c.yaml",
        {"name": "claude", "token_sha256": clients.hash_token("s3cret")},
        {"name": "ro", "token_sha256": clients.hash_token("r3ad"), "tools": "read"},
    )
    assert "s3cret" not in path.read_text()
    registry = clients.Registry(path)
    found = registry.authenticate("s3cret")
    assert found.requester == "mcp:claude" and found.may_propose
    assert not registry.authenticate("r3ad").may_propose
    for bad in (None, "", "s3cret ", "S3CRET", clients.hash_token("s3cret")):
        with pytest.raises(clients.Unauthenticated):
            registry.authenticate(bad)
    write(path, {"name": "ro", "token_sha256": clients.hash_token("r3ad")})
    with pytest.raises(clients.Unauthenticated):
        registry.authenticate("s3cret")  # the next call after the file changed


@pytest.mark.parametrize(
    "entry",
    [
        {"name": "x", "token_sha256": "plain-token"},
        {"name": "Bad Name", "token_sha256": "a" * 64},
        {"name": "x", "token_sha256": "a" * 64, "tools": "write"},
        {"name": "x", "token_sha256": "a" * 64, "token": "oops"},
        {"name": "x", "token_sha256": "a" * 64, "limits": {"proposals_per_minute": 0}},
    ],
)
def test_a_clients_file_that_does_not_load_lets_nobody_in(
    tmp_path: Path, entry: dict[str, Any]
) -> None:
    with pytest.raises(clients.ClientsError):
        clients.Registry(write(tmp_path / "c.yaml", entry)).authenticate("anything")


def test_a_client_named_twice_is_refused(tmp_path: Path) -> None:
    twice = {"name": "x", "token_sha256": "a" * 64}
    with pytest.raises(clients.ClientsError, match="given twice"):
        clients.load(write(tmp_path / "c.yaml", twice, twice))


def facts(requester: str, action: str = "scale") -> ProposalFacts:
    return ProposalFacts(
        action=action,
        namespace="staging",
        kind="Deployment",
        name="web",
        risk="low",
        reversible=True,
        requester=requester,
    )


def test_policy_rules_match_the_requester_by_glob() -> None:
    agents_restart_only = Rule(
        name="agents-deny-images",
        decision="deny",
        match=Match(requesters=["mcp:*"], actions=["set-image"]),
    )
    one_agent = Rule(
        name="claude-allowed", decision="allow", match=Match(requesters=["mcp:claude"])
    )
    policy = CompiledPolicy.build(
        Policy((SourcedRule(agents_restart_only, "t:1"), SourcedRule(one_agent, "t:2")))
    )
    assert evaluate(facts("mcp:cursor", "set-image"), policy, [], NOW).outcome == "deny"
    assert evaluate(facts("cli:alice", "set-image"), policy, [], NOW).outcome == "ask"
    assert evaluate(facts("mcp:claude"), policy, [], NOW).outcome == "allow"
    assert evaluate(facts("mcp:cursor"), policy, [], NOW).outcome == "ask"


@pytest.mark.parametrize("requesters", [[], ["mcp: x"], ["mcp:(a|b)"], [""]])
def test_a_requester_pattern_that_can_never_match_is_refused(requesters: list[str]) -> None:
    with pytest.raises(ValidationError):
        Match(requesters=requesters)


def test_every_catalog_example_passes_its_own_schema_check() -> None:
    listed = schemas.catalog()
    assert [a["action"] for a in listed] == sorted(actions.CATALOG)
    for entry in listed:
        cls = actions.CATALOG[entry["action"]]
        hidden = {"kind", "target", "namespace", "restarted_at"}
        assert not hidden & set(entry["params_schema"]["properties"]), entry["action"]
        kind, _, name = entry["example"]["target"].partition("/")
        assert kind in cls.kinds
        schemas.checked(
            action=entry["action"],
            kind=kind,
            name=name,
            namespace="" if kind == "Node" else "shop",
            given=entry["example"]["params"],
        )


@pytest.mark.parametrize(
    ("field", "call"),
    [
        ("action", {"action": "kubectl-exec"}),
        ("params.replicas", {"given": {"replicas": "many"}}),
        ("params.replicas", {"given": {"replicas": -3}}),
        # Wrong JSON types are refused, not coerced (an outside tester's true became 1).
        ("params.replicas", {"given": {"replicas": "1"}}),
        ("params.replicas", {"given": {"replicas": 1.0}}),
        ("params.replicas", {"given": {"replicas": True}}),
        ("params.restarted_at", {"given": {"replicas": 2, "restarted_at": "x"}}),
        ("params.kind", {"given": {"replicas": 2, "kind": "Secret"}}),
        ("target", {"name": "web/../../secrets"}),
        ("target", {"name": "Web"}),
        ("namespace", {"namespace": "kube-system/x"}),
        ("namespace", {"namespace": ""}),
    ],
)
def test_a_bad_call_names_its_field(field: str, call: dict[str, Any]) -> None:
    values: dict[str, Any] = {
        "action": "scale",
        "kind": "Deployment",
        "name": "web",
        "namespace": "shop",
        "given": {"replicas": 2},
        **call,
    }
    with pytest.raises(schemas.FieldInvalid) as raised:
        schemas.checked(**values)
    assert raised.value.field == field and raised.value.details == {"field": field}


def proposal(pid: str, replicas: int, *, state: ProposalState, age: float = 0) -> Proposal:
    at = NOW - timedelta(seconds=age)
    return Proposal(
        id=pid,
        action="scale",
        params={"replicas": replicas},
        target=Target(kind="Deployment", name="web", namespace="shop"),
        requester="mcp:claude",
        facts=Facts(
            action="scale",
            namespace="shop",
            kind="Deployment",
            name="web",
            risk="low",
            reversible=True,
            requester="mcp:claude",
        ),
        plan=PlanSnapshot(operation="replace", before=None, after=None, diff="", digest=""),
        intent="scale web",
        risk="low",
        reversible=True,
        decision=Decision(outcome="ask", reason="asks", source="default", decided_at=at),
        state=state,
        created_at=at,
        updated_at=at,
        expires_at=at + timedelta(minutes=30),
    )


def scale(replicas: int) -> actions.Action:
    return actions.build(
        "scale", {"kind": "Deployment", "target": "web", "namespace": "shop", "replicas": replicas}
    )


def test_the_same_change_asked_again_while_open_is_the_open_proposal() -> None:
    quota = intake.Quota(per_minute=1, open_at_once=1)
    waiting = proposal("p-1", 3, state=P.AWAITING_APPROVAL)
    assert intake.admit([waiting], scale(3), quota, now=NOW) is waiting
    # Once it was decided, the same change is a new proposal (limits allowing).
    rejected = proposal("p-1", 3, state=P.REJECTED, age=120)
    assert intake.admit([rejected], scale(3), quota, now=NOW) is None


def test_open_proposals_and_proposals_per_minute_are_limited() -> None:
    quota = intake.Quota(per_minute=2, open_at_once=2)
    two_open = [proposal(f"p-{n}", n, state=P.AWAITING_APPROVAL, age=300) for n in (1, 2)]
    with pytest.raises(intake.LimitReached) as raised:
        intake.admit(two_open, scale(5), quota, now=NOW)
    assert raised.value.details["limit"] == "open_proposals"
    two_recent = [proposal(f"p-{n}", n, state=P.REJECTED, age=10) for n in (1, 2)]
    with pytest.raises(intake.LimitReached) as raised:
        intake.admit(two_recent, scale(5), quota, now=NOW)
    assert raised.value.details["limit"] == "proposals_per_minute"
    a_while_ago = [proposal(f"p-{n}", n, state=P.REJECTED, age=61) for n in (1, 2)]
    assert intake.admit(a_while_ago, scale(5), quota, now=NOW) is None


def test_a_clients_proposals_for_the_same_approvers_join_the_oldest_card_with_room() -> None:
    first = proposal("p-1", 2, state=P.AWAITING_APPROVAL, age=30)
    second = proposal("p-2", 3, state=P.AWAITING_APPROVAL, age=20)
    new = proposal("p-3", 4, state=P.AWAITING_APPROVAL)
    assert intake.batch_head(new, [first, second, new], {"p-1": 1, "p-2": 1}) == "p-1"
    assert intake.batch_head(new, [first, second], {"p-1": intake.MAX_BATCH, "p-2": 1}) == "p-2"
    assert intake.batch_head(new, [first], {}) is None  # no card yet to join
    decided = proposal("p-1", 2, state=P.EXECUTED, age=30)
    assert intake.batch_head(new, [decided], {"p-1": 1}) is None
    other_approvers = first.model_copy(
        update={"decision": first.decision.model_copy(update={"approvers": [["S0DBA"]]})}
    )
    assert intake.batch_head(new, [other_approvers], {"p-1": 1}) is None
    elsewhere = first.model_copy(update={"incident_id": "inc-2"})
    assert intake.batch_head(new, [elsewhere], {"p-1": 1}) is None
    stratus_own = new.model_copy(update={"requester": "agent:stratus"})
    assert intake.batch_head(stratus_own, [first], {"p-1": 1}) is None


def test_a_proposal_sealed_before_it_had_an_agent_intent_still_matches_its_seal() -> None:
    """Proposals stored before the field existed read it as "": their seal must still hold,
    or an upgrade would make every stored proposal look tampered with."""
    from proposals import seals
    from store import integrity

    stored = proposal("prop-old", 2, state=ProposalState.AWAITING_APPROVAL)
    # As then: before ``agent_intent`` and ``client_token`` (issue 20's revocation) existed.
    body = stored.model_dump(mode="json", exclude={"seal", "agent_intent", "client_token"})
    before = integrity.digest({"record": "proposal", "body": body})
    assert seals.seal_of(stored) == before
    said = stored.model_copy(update={"agent_intent": "scale web"})
    assert seals.seal_of(said) != before  # once set, the field is sealed like the rest
    tokened = stored.model_copy(update={"client_token": "ab" * 32})
    assert seals.seal_of(tokened) != before


def test_a_proposal_stands_while_its_client_holds_the_token_it_proposed_with() -> None:
    held = clients.hash_token("tok-claude-0123456789")
    configured = clients.ClientsFile(
        clients=[clients.ClientEntry(name="claude", token_sha256=held)]
    )
    assert clients.revocation(configured, "mcp:claude", held) is None
    assert clients.revocation(configured, "mcp:claude") is None  # stored before tokens were
    assert clients.revocation(configured, "U0ALICE", "") is None  # no MCP client
    changed = clients.revocation(configured, "mcp:claude", clients.hash_token("old-token-012"))
    assert changed is not None and "token was revoked" in changed
    removed = clients.revocation(clients.ClientsFile(), "mcp:claude", held)
    assert removed is not None and "no longer in the clients file" in removed
    assert clients.match(configured, "tok-claude-0123456789").token_sha256 == held
