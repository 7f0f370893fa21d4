"""The rules for an incident an MCP client's proposal opened (docs/mcp.md), as pure functions:
Stratus plans no fixes of its own there until a person asks it to look again; the agent's
write is reported with the verdict of its attempt and whether TNR undid it; undoing it after
the incident ended does not re-open it. No store, no cluster, no socket."""

from __future__ import annotations

from pathlib import Path

from incidents import continuation, reopening
from incidents.continuation import Next
from incidents.model import AGENT_SOURCE, Attempt, Incident, IncidentState
from incidents.reopening import Undone
from proposals.model import ProposalState
from tests.incidents.test_continuation import NOW, Surface, attempt, incident, proposal, stored

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


# ------------------------------------------- one change under verification per incident


def test_an_agents_change_in_an_incident_under_way_waits_for_its_turn() -> None:
    """Joined to an incident whose attempt is in flight, an agent's approved change is not
    executed on its own (it would land inside another attempt's before/after): it is queued,
    and the incident's workflow is advanced."""
    running = incident(St.AWAITING_APPROVAL, attempt(("p1",)))
    after = continuation.after_answer("a1", P.APPROVED, running, agents=True)
    assert after == Next.QUEUED
    # Stratus's own standalone writes (an undo asked for from a card, a terminal's) still run.
    assert continuation.after_answer("u9", P.APPROVED, running) == Next.EXECUTE
    # Once it is the incident's attempt, it is advanced like any step.
    adopted = incident(St.AWAITING_APPROVAL, attempt(("p1",)), attempt(("a1",)))
    assert continuation.after_answer("a1", P.APPROVED, adopted, agents=True) == Next.ADVANCE
    # In a closed incident nothing queues it (it was withdrawn when the incident ended).
    closed = incident(St.RESOLVED, attempt(("p1",)))
    assert continuation.after_answer("a1", P.APPROVED, closed, agents=True) == Next.EXECUTE


def test_the_oldest_open_change_of_an_agent_that_no_attempt_holds_is_next() -> None:
    current = incident(St.PLANNING, attempt(("p1",), ("u1",)))
    found = [
        proposal("p1", P.EXECUTED, "inc-1", requester="mcp:claude", age=50),  # attempt 1's
        proposal("u1", P.EXECUTED, "inc-1", requester="mcp:claude", age=40),  # its undo
        proposal("a0", P.REJECTED, "inc-1", requester="mcp:claude", age=30),  # answered no
        proposal("s1", P.APPROVED, "inc-1", requester="slack:U0ALICE", age=25),  # a person's
        proposal("a3", P.APPROVED, "inc-1", requester="mcp:cursor", age=10),
        proposal("a2", P.AWAITING_APPROVAL, "inc-1", requester="mcp:claude", age=20),
        proposal("au", P.APPROVED, "inc-1", requester="mcp:claude", age=60, undo_entry="e1"),
    ]
    queued = continuation.queued_turn(current, found)
    assert queued is not None and queued.id == "a3"  # approved first, whoever's it is
    waiting = [p for p in found if p.id != "a3"]
    assert continuation.queued_turn(current, waiting).id == "a2"  # type: ignore[union-attr]
    assert continuation.queued_turn(current, found[:4]) is None
    assert not continuation.queued_for_turn(found[-1])  # an undo an agent asked for runs alone


def test_carry_on_leaves_a_queued_change_to_its_incident(tmp_path: Path) -> None:
    """A terminal (no workflow) never executes an agent's queued change itself; the bot
    advances the incident instead."""
    repo = stored(tmp_path)  # inc-1, awaiting the answer to its attempt's p1
    terminal, bot = Surface(), Surface()
    queued = proposal("a1", P.APPROVED, "inc-1", requester="mcp:claude")
    assert continuation.carry_on(queued, incidents=repo, execute=terminal.execute) is queued
    assert terminal.calls == []
    continuation.carry_on(queued, incidents=repo, execute=bot.execute, advance=bot.advance)
    assert bot.calls == [("advance", "inc-1")]
