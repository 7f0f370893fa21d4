"""The rules for an incident an MCP client's proposal opened (docs/mcp.md), as pure functions:
Stratus plans no fixes of its own there until a person asks it to look again; the agent's
write is reported with the verdict of its attempt and whether TNR undid it; undoing it after
the incident ended does not re-open it. No store, no cluster, no socket."""

from __future__ import annotations

from incidents import continuation, reopening
from incidents.model import AGENT_SOURCE, Attempt, Incident, IncidentState
from incidents.reopening import Undone
from proposals.model import ProposalState
from tests.incidents.test_continuation import NOW, attempt, incident

P = ProposalState
St = IncidentState


def agents(state: IncidentState, *attempts: Attempt, reopened: int = 0) -> Incident:
    made = incident(state, *attempts)
    return made.model_copy(
        update={"source": AGENT_SOURCE, "requester": "mcp:claude", "reopened": reopened}
    )


def test_stratus_plans_no_fixes_of_its_own_in_an_agents_incident_until_looked_at_again() -> None:
    assert continuation.plans_own_fixes(incident(St.PLANNING))
    assert not continuation.plans_own_fixes(agents(St.PLANNING))
    assert continuation.plans_own_fixes(agents(St.DIAGNOSING, reopened=1))


def test_the_verification_of_a_step_waits_for_its_verdict_then_says_it() -> None:
    running = agents(St.VERIFYING, attempt(("p1",)))
    found = continuation.verification_of(running, "p1", {})
    assert found is not None and found.verdict is None and not found.done
    judged = attempt(("p1",)).model_copy(
        update={
            "verdict": "healthy",
            "health_before": {"total": 4},
            "health_after": {"total": 0},
            "finished_at": NOW,
        }
    )
    found = continuation.verification_of(agents(St.RESOLVED, judged), "p1", {})
    assert found is not None and found.verdict == "healthy" and found.done
    assert (found.score_before, found.score_after, found.undone) == (4, 0, False)
    assert continuation.verification_of(agents(St.RESOLVED, judged), "p9", {}) is None


def test_a_step_undone_by_tnr_says_so_once_its_undo_is_executed() -> None:
    worse = attempt(("p1",), ("u1",)).model_copy(update={"verdict": "worse"})
    asked = continuation.verification_of(agents(St.UNDOING, worse), "p1", {"u1": P.APPROVED})
    assert asked is not None and asked.undo_proposal == "u1" and not asked.undone
    assert not asked.done
    ended = worse.model_copy(update={"outcome": "undone", "finished_at": NOW})
    done = continuation.verification_of(agents(St.ESCALATED, ended), "p1", {"u1": P.EXECUTED})
    assert done is not None and done.undone and done.done and done.verdict == "worse"


def test_undoing_an_agents_fix_after_its_incident_resolved_leaves_it_closed() -> None:
    fixed = attempt(("p1",)).model_copy(update={"outcome": "fixed"})
    undone = Undone(proposal_id="p1", undo_id="u1", by="mcp:claude", at=NOW)
    note = reopening.decide(agents(St.RESOLVED, fixed), undone, other_open=None)
    assert note is not None and not note.reopened and "mcp:claude" in note.why


def test_a_refused_undo_of_tnr_is_reported_as_refused() -> None:
    worse = attempt(("p1",), ("u1",)).model_copy(
        update={"verdict": "worse", "outcome": "undo rejected", "finished_at": NOW}
    )
    found = continuation.verification_of(agents(St.ESCALATED, worse), "p1", {"u1": P.REJECTED})
    assert found is not None and found.done and found.undo_refused and not found.undone
