"""The pure alert decisions at their edges, found by an outside tester: groups larger than the
alerts kept in full, label sets larger than the bound, replayed firings of cleared alerts, and
namespace labels that only look valid once cleaned — dict in, decision out."""

from __future__ import annotations

from typing import Any

from incidents.alert_text import MAX_LABELS
from incidents.alerts import (
    KEPT_ALERTS,
    KEPT_SEEN,
    MAX_ALERTS,
    AlertGroup,
    AlertStatus,
    partition,
)
from tests.agents.alert_payloads import alert, payload
from tests.agents.test_alerts import linked, parse, step


def crashing(count: int, *, status: str = "firing", start: int = 0) -> list[dict[str, Any]]:
    return [alert(pod=f"geo-{i}", status=status) for i in range(start, start + count)]


def stored(group: AlertGroup) -> AlertGroup:
    """The group as it comes back from the store (through its JSON)."""
    return AlertGroup.model_validate_json(group.model_dump_json())


def test_a_group_of_the_largest_size_sent_again_is_a_repeat() -> None:
    every = crashing(MAX_ALERTS)
    first = step(None, payload(*every), incident_open=False)
    assert first.action == "open" and len(first.fired) == MAX_ALERTS
    group = stored(linked(first))
    assert len(group.alerts) <= KEPT_ALERTS and len(group.seen) == MAX_ALERTS
    again = step(group, payload(*every))
    assert again.action == "repeat" and again.fired == [], len(again.fired)
    # A subset (some alerts fell out of Alertmanager's notification) is no news either.
    part = step(stored(again.group), payload(*every[100:700]))
    assert part.action == "repeat"


def test_a_group_above_the_full_records_only_reports_what_is_new() -> None:
    group = stored(linked(step(None, payload(*crashing(250)), incident_open=False)))
    for _ in range(3):  # Alertmanager's repeat_interval, again and again
        again = step(group, payload(*crashing(250)))
        assert again.action == "repeat", len(again.fired)
        group = stored(again.group)
    more = step(group, payload(*crashing(251)))
    assert more.action == "update" and [a.labels["pod"] for a in more.fired] == ["geo-250"]


def test_clearing_a_large_group_is_all_resolved_only_when_every_alert_cleared() -> None:
    group = stored(linked(step(None, payload(*crashing(400)), incident_open=False)))
    half = step(group, payload(*crashing(200, status="resolved"), *crashing(200, start=200)))
    assert half.action == "update" and len(half.resolved) == 200 and not half.all_resolved
    assert half.group.any_firing
    rest = step(stored(half.group), payload(*crashing(400, status="resolved")))
    assert len(rest.resolved) == 200 and rest.all_resolved and not rest.group.any_firing


def test_what_is_remembered_of_a_group_is_bounded() -> None:
    group = stored(linked(step(None, payload(*crashing(MAX_ALERTS)), incident_open=False)))
    for batch in range(1, 4):  # a group whose alerts keep changing
        cleared = crashing(MAX_ALERTS, status="resolved", start=(batch - 1) * MAX_ALERTS)
        fresh = crashing(MAX_ALERTS // 2, start=batch * MAX_ALERTS)
        group = stored(step(group, payload(*cleared[:500], *fresh)).group)
        assert len(group.seen) <= KEPT_SEEN and len(group.alerts) <= KEPT_ALERTS
    assert all(s == AlertStatus.FIRING for s, _ in list(group.seen.values())[: MAX_ALERTS // 2])
    # The firing alerts are all still known: their repeat is no news.
    latest = crashing(MAX_ALERTS // 2, start=3 * MAX_ALERTS)
    assert step(group, payload(*latest)).action == "repeat"


def test_a_stored_group_from_before_the_seen_set_still_reads_repeats() -> None:
    group = linked(step(None, payload(alert()), incident_open=False))
    old = AlertGroup.model_validate(group.model_dump(mode="json", exclude={"seen"}))
    assert old.seen == {} and step(old, payload(alert())).action == "repeat"


def many_labels(count: int, **where: str) -> dict[str, Any]:
    body = alert(pod="geo-1", **where)
    # Names that sort before "namespace" and "alertname": cut by name, they would win.
    body["labels"].update({f"a{i:03d}": "x" for i in range(count)})
    return body


def test_a_label_set_over_the_bound_keeps_the_labels_the_intake_reads() -> None:
    note = parse(payload(many_labels(100, container="geo", deployment="geo")))
    (only,) = note.alerts
    assert len(only.labels) == MAX_LABELS
    for key in ("namespace", "alertname", "severity", "pod", "container", "deployment"):
        assert key in only.labels, key
    assert only.annotations["summary"] == "Pod is crash looping."
    split = partition(note)
    assert split.refused == [] and list(split.by_namespace) == ["hotel"]
    decision = step(None, payload(many_labels(100)), incident_open=False)
    assert decision.action == "open" and decision.fired[0].alertname == "KubePodCrashLooping"


def test_a_replayed_firing_of_a_cleared_alert_does_not_reopen_it() -> None:
    first = linked(step(None, payload(alert()), incident_open=False))
    clearing = step(first, payload(alert(status="resolved")), incident_open=False)
    assert clearing.all_resolved
    cleared = linked(clearing)
    late = step(cleared, payload(alert()), incident_open=False)  # same fingerprint, startsAt
    assert late.action == "repeat" and late.fired == []
    assert not late.group.any_firing
    assert [a.status for a in late.group.alerts.values()] == [AlertStatus.RESOLVED]
    # Firing again for real comes with a new startsAt, and is news.
    again = step(late.group, payload(alert(starts="2026-11-20T11:00:00Z")), incident_open=False)
    assert again.action == "open"


def test_a_replayed_firing_of_an_alert_first_heard_cleared_opens_nothing() -> None:
    heard = step(None, payload(alert(status="resolved")), incident_open=False)
    assert heard.action == "record"
    late = step(heard.group, payload(alert()), incident_open=False)
    assert late.action == "repeat" and late.fired == []


def test_a_namespace_label_is_validated_as_sent() -> None:
    for sent in ("hotel\u202e", "\u202ehotel", " hotel", "hotel\r", "hot\u200bel", "hotel\x00"):
        split = partition(parse(payload(alert(namespace=sent))))
        assert split.by_namespace == {}, repr(sent)
        (refusal,) = split.refused
        assert "is not a valid namespace name" in refusal.reason
        # The reason shows what was sent, escaped: nothing that reads as `hotel` alone.
        assert "'hotel'" not in refusal.reason and "\u202e" not in refusal.reason
    assert list(partition(parse(payload(alert(namespace="hotel")))).by_namespace) == ["hotel"]
