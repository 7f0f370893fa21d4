"""The continuation's decisions, as pure functions of an incident and its proposals' states:
no store, no cluster, no socket."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from agents.health import Verdict
from agents.model import Candidate, Step
from incidents import continuation
from incidents.continuation import Next, Waiting
from incidents.model import Attempt, Incident, IncidentState
from incidents.repository import IncidentRepository
from proposals.model import Proposal, ProposalState
from store.db import Store

P = ProposalState
St = IncidentState
NOW = datetime(2026, 1, 1, tzinfo=UTC)
CANDIDATE = Candidate(
    steps=[Step(action="scale", kind="Deployment", name="web", params={"replicas": 2})],
    intent="scale web to 2",
)


def attempt(proposals: tuple[str, ...] = (), undos: tuple[str, ...] = ()) -> Attempt:
    return Attempt(
        number=1,
        candidate=CANDIDATE,
        transaction_id="tx-1",
        proposals=list(proposals),
        undo_proposals=list(undos),
        started_at=NOW,
    )


def incident(state: IncidentState = St.AWAITING_APPROVAL, *attempts: Attempt) -> Incident:
    return Incident(
        id="inc-1",
        namespace="shop",
        requester="U1",
        state=state,
        created_at=NOW,
        updated_at=NOW,
        attempts=list(attempts),
    )


def test_an_attempt_waits_on_its_last_step() -> None:
    assert continuation.waiting_on(attempt(("p1", "p2")), {}) == Waiting("p2", undo=False)


def test_a_skipped_last_step_leaves_nothing_to_wait_on() -> None:
    assert continuation.waiting_on(attempt(("p1", "")), {}) == Waiting(None, undo=False)


def test_an_undo_goes_before_the_steps_until_it_is_executed() -> None:
    undoing = attempt(("p1",), ("u1", "u2"))
    assert continuation.waiting_on(undoing, {"u2": P.APPROVED}) == Waiting("u2", undo=True)
    assert continuation.waiting_on(undoing, {"u2": P.EXECUTED}) == Waiting(None, undo=True)


def test_the_proposal_to_answer_is_the_awaited_one_only_while_it_waits() -> None:
    waiting = incident(St.AWAITING_APPROVAL, attempt(("p1",)))
    assert continuation.awaiting_answer(waiting, {"p1": P.AWAITING_APPROVAL}) == "p1"
    assert continuation.awaiting_answer(waiting, {"p1": P.APPROVED}) is None
    assert continuation.awaiting_answer(incident(St.PLANNING), {}) is None


def test_an_undo_is_answered_before_the_step_it_undoes() -> None:
    undoing = incident(St.AWAITING_APPROVAL, attempt(("p1",), ("u1",)))
    states = {"p1": P.EXECUTED, "u1": P.AWAITING_APPROVAL}
    assert continuation.awaiting_answer(undoing, states) == "u1"


@pytest.mark.parametrize(
    ("state", "expected"),
    [
        (P.AWAITING_APPROVAL, False),
        (P.APPROVED, True),
        (P.REJECTED, True),
        (P.EXECUTED, True),
    ],
)
def test_answered_but_waiting_when_the_answer_landed_under_another_lease(
    state: ProposalState, expected: bool
) -> None:
    waiting = incident(St.AWAITING_APPROVAL, attempt(("p1",)))
    assert continuation.answered_but_waiting(waiting, {"p1": state}) is expected


def test_an_incident_that_moved_on_is_not_answered_but_waiting() -> None:
    executing = incident(St.EXECUTING, attempt(("p1",)))
    assert not continuation.answered_but_waiting(executing, {"p1": P.APPROVED})
    assert not continuation.answered_but_waiting(incident(St.AWAITING_APPROVAL), {})


def test_an_answer_to_a_step_of_the_open_attempt_advances_the_incident() -> None:
    running = incident(St.AWAITING_APPROVAL, attempt(("p1",), ("u1",)))
    assert continuation.after_answer("p1", P.APPROVED, running) == Next.ADVANCE
    assert continuation.after_answer("u1", P.APPROVED, running) == Next.ADVANCE
    # A refusal moves the incident on too: its workflow tries the next candidate.
    assert continuation.after_answer("p1", P.REJECTED, running) == Next.ADVANCE


def test_a_proposal_needing_more_approvals_waits_wherever_it_belongs() -> None:
    running = incident(St.AWAITING_APPROVAL, attempt(("p1",)))
    assert continuation.after_answer("p1", P.AWAITING_APPROVAL, running) == Next.WAIT
    assert continuation.after_answer("x", P.AWAITING_APPROVAL, None) == Next.WAIT


@pytest.mark.parametrize(
    "owner",
    [
        None,  # made at a terminal, of no incident
        incident(St.RESOLVED, attempt(("p1",))),  # its incident ended
        incident(St.AWAITING_APPROVAL, attempt(("p9",))),  # an undo asked for from a card
    ],
)
def test_an_approved_standalone_proposal_is_executed(owner: Incident | None) -> None:
    assert continuation.after_answer("p1", P.APPROVED, owner) == Next.EXECUTE


@pytest.mark.parametrize("state", [P.REJECTED, P.CANCELLED, P.EXECUTED, P.DENIED])
def test_a_standalone_proposal_that_is_not_approved_carries_nothing_on(
    state: ProposalState,
) -> None:
    assert continuation.after_answer("p1", state, None) == Next.NOTHING


# ---------------------------------------------------------------------- acting (no socket)


def stored(tmp_path: Path) -> IncidentRepository:
    incidents = IncidentRepository(Store(tmp_path / "db.sqlite"))
    assert incidents.insert(incident(St.AWAITING_APPROVAL, attempt(("p1",)))) is None
    return incidents


def proposal(
    proposal_id: str,
    state: ProposalState,
    incident_id: str | None,
    *,
    requester: str = "cli:alice",
    age: float = 0,
    undo_entry: str | None = None,
) -> Proposal:
    # Only what the continuation reads: its id, state, incident, requester and age.
    return Proposal.model_construct(
        id=proposal_id,
        state=state,
        incident_id=incident_id,
        requester=requester,
        undo_entry=undo_entry,
        created_at=NOW - timedelta(seconds=age),
    )


class Surface:
    """What a surface hands the continuation to act with; it records what it was asked."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def execute(self, proposal_id: str) -> Proposal:
        self.calls.append(("execute", proposal_id))
        return proposal(proposal_id, P.EXECUTED, None)

    def advance(self, incident_id: str) -> Incident:
        self.calls.append(("advance", incident_id))
        return incident(St.EXECUTING)


def test_carry_on_advances_a_step_of_the_running_attempt(tmp_path: Path) -> None:
    bot = Surface()
    done = continuation.carry_on(
        proposal("p1", P.APPROVED, "inc-1"),
        incidents=stored(tmp_path),
        execute=bot.execute,
        advance=bot.advance,
    )
    assert bot.calls == [("advance", "inc-1")] and isinstance(done, Incident)


def test_carry_on_without_a_workflow_executes_the_approved_step(tmp_path: Path) -> None:
    terminal = Surface()
    done = continuation.carry_on(
        proposal("p1", P.APPROVED, "inc-1"), incidents=stored(tmp_path), execute=terminal.execute
    )
    assert terminal.calls == [("execute", "p1")]
    assert isinstance(done, Proposal) and done.state == P.EXECUTED


def test_carry_on_waits_for_more_votes_then_executes_a_standalone_proposal(
    tmp_path: Path,
) -> None:
    incidents = stored(tmp_path)
    terminal = Surface()
    waiting = proposal("p2", P.AWAITING_APPROVAL, None)
    assert continuation.carry_on(waiting, incidents=incidents, execute=terminal.execute) is None
    assert terminal.calls == []
    approved = proposal("p2", P.APPROVED, None)
    continuation.carry_on(approved, incidents=incidents, execute=terminal.execute)
    assert terminal.calls == [("execute", "p2")]


# ---------------------------------------------------------------------- the end of an attempt


@pytest.mark.parametrize(
    ("executed", "verdict", "wanted"),
    [
        (False, None, continuation.AttemptEnd.NEXT),
        (False, "worse", continuation.AttemptEnd.NEXT),
        (True, None, continuation.AttemptEnd.VERIFY),
        (True, "healthy", continuation.AttemptEnd.RESOLVE),
        (True, "better", continuation.AttemptEnd.REPLAN),
        (True, "same", continuation.AttemptEnd.UNDO),
        (True, "worse", continuation.AttemptEnd.UNDO),
    ],
)
def test_a_stopped_or_finished_attempt_is_verified_before_anything_is_undone(
    executed: bool, verdict: Verdict | None, wanted: continuation.AttemptEnd
) -> None:
    # Issue 18: a rejected second step used to undo the first at once, re-breaking a fix.
    assert continuation.attempt_end(executed=executed, verdict=verdict) == wanted


# ---------------------------------------------------------------- issue 18 F1: keep the fix


def test_an_automatic_undo_never_reverses_the_fix_of_the_cause() -> None:
    # Step 1 restored the diagnosed ConfigMap key; steps 2 and 3 restarted its readers.
    split = continuation.tnr_undo(
        [
            ("p1", "configmap/shop-config key payment-provider: paypal-live", "ConfigMap"),
            ("p2", "", "Deployment"),
            ("p3", "", "Deployment"),
        ]
    )
    assert split.undo == ("p3", "p2")  # the others, last first
    assert split.kept == ("p1",)
    secret = continuation.tnr_undo([("p1", "secret/db: wrong password", "Secret")])
    assert secret == continuation.TnrUndo(undo=(), kept=("p1",))


def test_a_fix_on_a_workload_that_made_things_worse_is_undone() -> None:
    # A rollback of the Deployment the diagnosis named rolls its own pods: the verdict saw it.
    split = continuation.tnr_undo([("p1", "deployment/rate: bad image", "Deployment")])
    assert split == continuation.TnrUndo(undo=("p1",), kept=())


def test_an_attempt_that_fixed_nothing_is_undone_whole() -> None:
    assert continuation.tnr_undo(
        [("p1", "", "ConfigMap"), ("p2", "", "Deployment")]
    ) == continuation.TnrUndo(undo=("p2", "p1"), kept=())


def test_a_cancel_half_way_takes_back_all_it_did() -> None:
    # A person's cancel, not a verdict: the fix goes too (docs/workflow.md).
    split = continuation.tnr_undo(
        [("p1", "the cause", "ConfigMap"), ("p2", "", "Deployment")], cancelled=True
    )
    assert split == continuation.TnrUndo(undo=("p2", "p1"), kept=())


def test_after_the_undo_a_kept_fix_escalates_and_a_cancel_stays_a_cancel() -> None:
    after = continuation.after_tnr_undo
    assert after(kept=False, cancelled=False) == IncidentState.PLANNING
    assert after(kept=True, cancelled=False) == IncidentState.ESCALATED
    assert after(kept=True, cancelled=True) == IncidentState.CANCELLED
