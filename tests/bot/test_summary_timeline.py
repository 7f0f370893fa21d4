"""The summary's timeline reads at 3 a.m.: the same alert firing twice a couple of seconds
apart is one line with a count, not two lines that look like two incidents; the same line
much later (a second attempt reaching the same state) stays where it happened."""

from __future__ import annotations

from bot import summary
from incidents.repository import IncidentEnvelope, IncidentEvent, IncidentEventType

T = IncidentEventType


def event(
    seq: int, at: str, kind: IncidentEventType, message: str, names: tuple[str, ...] = ()
) -> IncidentEnvelope:
    body = IncidentEvent(
        data={"alerts": [{"alertname": n} for n in names]} if names else {},
        type=kind,
        incident_id="inc-1",
        namespace="hotel",
        state="detecting",
        actor="x",
        message=message,
    )
    return IncidentEnvelope(seq=seq, at=f"2026-11-25T{at}+00:00", event=body)


def test_the_same_alert_firing_twice_seconds_apart_is_one_line_with_a_count() -> None:
    lines = summary.timeline(
        [
            event(1, "10:00:01", T.ALERT_FIRED, "KubePodCrashLooping fired"),
            event(2, "10:00:02", T.OPENED, "opened"),
            event(3, "10:00:03", T.ALERT_FIRED, "KubePodCrashLooping fired"),
            event(4, "10:00:09", T.STATE_CHANGED, "diagnosing"),
        ]
    )
    assert len(lines) == 3, lines
    assert (
        "KubePodCrashLooping fired" in lines[0] and "2 times" in lines[0] and "10:00:03" in lines[0]
    )
    assert "opened" in lines[1] and "times" not in lines[1]


def test_the_same_line_much_later_is_its_own_line() -> None:
    lines = summary.timeline(
        [
            event(1, "10:00:01", T.STATE_CHANGED, "awaiting approval"),
            event(2, "10:00:30", T.VERIFIED, "attempt 1: worse"),
            event(3, "10:09:00", T.STATE_CHANGED, "awaiting approval"),
        ]
    )
    assert len(lines) == 3 and not any("times" in line for line in lines), lines


def test_a_repeat_stays_quoted_data() -> None:
    (line,) = summary.timeline(
        [event(i, f"10:00:0{i}", T.ALERT_FIRED, "x <!channel> *bold*") for i in range(1, 4)]
    )
    assert "<!channel>" not in line and "3 times" in line


def test_the_same_alert_arriving_in_a_second_group_is_the_same_line() -> None:
    """A second Alertmanager group carrying the alert that opened the incident joins it: the
    thread's words differ ("… joined this open incident"), the news does not."""
    lines = summary.timeline(
        [
            event(
                1, "10:00:01", T.ALERT_FIRED, "KubePodCrashLooping fired", ("KubePodCrashLooping",)
            ),
            event(
                2,
                "10:00:03",
                T.ALERT_FIRED,
                "KubePodCrashLooping fired (the alert group joined this open incident)",
                ("KubePodCrashLooping",),
            ),
            event(3, "10:00:04", T.ALERT_FIRED, "KubeDown fired", ("KubeDown",)),
        ]
    )
    assert len(lines) == 2 and "2 times" in lines[0], lines
