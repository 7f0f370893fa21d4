"""``kubectl attach -i`` to a shell: closing stdin is end of input for the process, so the
attach ends, even when the client closed stdin before the session started (the websocket
server starts sessions START_SECONDS after the upgrade; kubectl run --rm -i with nothing to
send closes stdin at once, and the attach once waited forever)."""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from lab.controllers.attach_sessions import AttachSession
from lab.controllers.exec_sessions import Outcome


@dataclass
class Running:
    logs: list[str] = field(default_factory=list)
    log_total: int = 0
    state: str = "running"
    generation: int = 1


def _ends_within(session: AttachSession, seconds: float) -> bool:
    ended = threading.Event()

    def done(outcome: Outcome) -> None:
        assert outcome.exit_code == 0
        ended.set()

    session.start(lambda channel, data: None, done)
    try:
        return ended.wait(seconds)
    finally:
        session.stop()


def test_stdin_closed_before_the_start_still_ends_the_attach() -> None:
    session = AttachSession(Running(), reads_stdin=True)
    session.stdin.close()  # the client's CLOSE arrived before the session started
    assert _ends_within(session, 2.0)


def test_without_stdin_the_attach_follows_the_running_container() -> None:
    session = AttachSession(Running(), reads_stdin=False)
    session.stdin.close()  # what serve_exec does when the client asked for no stdin
    assert not _ends_within(session, 0.6)


def test_the_attach_ends_when_the_container_stops() -> None:
    container = Running()
    session = AttachSession(container, reads_stdin=False)
    container.state = "terminated"
    assert _ends_within(session, 2.0)
