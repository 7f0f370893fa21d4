"""The shared store pieces every aggregate uses: the error family, the compare-and-set helper
and the typed event envelope. Socket-free: an in-memory store, no lab."""

from __future__ import annotations

import json
from collections import defaultdict

import pytest

from incidents.repository import IncidentEvent, IncidentEventType, StaleIncident
from proposals.errors import ProposalNotFound, ProposalTampered, StaleProposal
from proposals.events import EventType, ProposalEvent, ProposalEvents
from store import versioned
from store.db import Store
from store.errors import NotFound, Remedy, Stale, StratusError, Tampered, family
from store.events import EventStore, TypedStream
from tests.store.errors_catalog import every_error_class


@pytest.fixture
def store() -> Store:
    store = Store(":memory:")
    with store.immediate() as db:
        db.execute("CREATE TABLE things (id TEXT PRIMARY KEY, version INTEGER, name TEXT)")
        db.execute("INSERT INTO things VALUES ('t1', 1, 'one')")
    return store


def test_each_concept_declares_its_code_once() -> None:
    every_error_class()
    declared: dict[str, list[str]] = defaultdict(list)
    for cls in family():
        if "code" in cls.__dict__:
            declared[cls.code].append(f"{cls.__module__}.{cls.__qualname__}")
    assert {code: where for code, where in declared.items() if len(where) > 1} == {}


def test_package_classes_of_a_shared_concept_take_its_code_and_stay_distinct() -> None:
    assert StaleProposal.code == StaleIncident.code == Stale.code == "stale"
    assert ProposalNotFound.code == NotFound.code and ProposalTampered.code == Tampered.code
    assert StaleProposal("x").retryable and StaleProposal("x").remedy == Remedy.RETRY
    # An incident's stale save is not caught by ``except StaleProposal``.
    assert not issubclass(StaleIncident, StaleProposal)


def test_a_class_header_sets_code_remedy_and_retryable() -> None:
    class Example(StratusError, code="example_code", remedy=Remedy.FIX_INPUT):
        """For this test only."""

    error = Example("what happened", subject="thing-1", details={"n": 1})
    assert error.to_dict() == {
        "code": "example_code",
        "message": "what happened",
        "subject": "thing-1",
        "remedy": "fix_input",
        "details": {"n": 1},
    }


def test_write_if_writes_only_while_the_row_holds_what_was_read(store: Store) -> None:
    with store.immediate() as db:
        assert versioned.write_if(
            db, "things", where={"id": "t1", "version": 1}, changes={"version": 2, "name": "two"}
        )
        assert not versioned.write_if(
            db, "things", where={"id": "t1", "version": 1}, changes={"version": 2, "name": "x"}
        )
        assert not versioned.write_if(
            db, "things", where={"id": "t1", "name": None}, changes={"name": "y"}
        )
    assert store.query("SELECT version, name FROM things") == [{"version": 2, "name": "two"}]


def test_a_lost_save_raises_the_aggregates_stale_error_with_fields(store: Store) -> None:
    things = versioned.Table("things", "thing", ("version", "name"), stale=StaleProposal)
    row = {"id": "t1", "version": 8, "name": "eight"}
    with store.immediate() as db, pytest.raises(StaleProposal) as lost:
        things.save(db, row, expected=7)
    assert lost.value.subject == "t1" and lost.value.details["expected_version"] == 7
    assert lost.value.message == "thing t1 was changed by someone else first"
    assert store.query("SELECT version, name FROM things") == [{"version": 1, "name": "one"}]
    with store.immediate() as db:
        things.save(db, {**row, "version": 2}, expected=1)
    assert store.query("SELECT version, name FROM things") == [{"version": 2, "name": "eight"}]


def test_retrying_is_bounded_and_returns_the_first_win() -> None:
    calls: list[int] = []

    def loses_twice() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise StaleIncident("moved")
        return "won"

    assert versioned.retrying(loses_twice, attempts=3, record="r", subject="s") == "won"

    def always_loses() -> str:
        raise StaleIncident("moved")

    with pytest.raises(StaleIncident) as kept:
        versioned.retrying(
            always_loses, attempts=4, record="incident", subject="inc-1", stale=StaleIncident
        )
    assert kept.value.details == {"record": "incident", "attempts": 4}


def test_retrying_lets_other_errors_through_at_once() -> None:
    calls: list[int] = []

    def fails() -> None:
        calls.append(1)
        raise ProposalNotFound("no proposal p")

    with pytest.raises(ProposalNotFound):
        versioned.retrying(fails, attempts=5, record="proposal", subject="p")
    assert len(calls) == 1


def test_one_envelope_for_proposal_and_incident_events(store: Store) -> None:
    proposals = ProposalEvents(store)
    incidents = TypedStream(store, stream="incident", model=IncidentEvent)
    proposals.append(
        ProposalEvent(
            type=EventType.PROPOSED,
            proposal_id="prop-1",
            action="scale",
            target="deployment/web in shop",
            state="awaiting_approval",
            actor="cli:bob",
        )
    )
    incidents.append(
        IncidentEvent(
            type=IncidentEventType.NOTE,
            incident_id="inc-1",
            namespace="shop",
            state="diagnosing",
            actor="stratus",
            message="a note",
        ),
        subject="inc-1",
    )
    [proposal] = proposals.since()
    [incident] = incidents.since()
    assert (proposal.seq, proposal.event.proposal_id) == (1, "prop-1")
    assert (incident.seq, incident.event.message) == (2, "a note")
    assert incidents.since(subject="inc-2") == [] and proposals.last_seq() == 2


def test_stored_event_rows_keep_their_fields(store: Store) -> None:
    """What the database holds does not change: the same payload keys as before the envelope
    was shared, so events stored by an earlier version read back."""
    earlier = {
        "schema_version": 1,
        "type": "incident.note",
        "incident_id": "inc-9",
        "namespace": "shop",
        "state": "detecting",
        "previous_state": None,
        "actor": "stratus",
        "message": "stored earlier",
        "data": {"k": "v"},
    }
    EventStore(store).append(
        stream="incident", subject="inc-9", type="incident.note", version=1, payload=earlier
    )
    [read] = TypedStream(store, stream="incident", model=IncidentEvent).since()
    assert read.event.model_dump(mode="json") == earlier
    [row] = store.query("SELECT payload FROM events")
    assert json.loads(row["payload"]) == earlier
