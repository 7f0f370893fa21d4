"""``kubectl attach``: the container's own output from now on, as a stream that ends with the
container (the kubelet attaches to the running process; the lab follows what it writes).

It speaks the same session interface as a command run with ``exec``, so both protocols
(websockets and SPDY) serve it unchanged: what the process writes goes to stdout, and the
stream ends with ``Success`` when the container stops running, the client goes away, or the
client attached stdin and closed it (the process reading it, a shell, ends at end of input:
``kubectl run --rm -i … -- sh`` with nothing to say returns instead of waiting forever).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lab.controllers.exec_sessions import STDOUT, Outcome
from lab.controllers.exec_shell import Stdin

POLL_SECONDS = 0.2


@dataclass
class AttachSession:
    container: Any  # the ContainerRun attached to (logs, log_total, state, generation)
    # Whether the client asked for stdin: then its closing (EOF to the attached process) ends
    # the attach. Told, not inferred from the stream at start: the client may close stdin
    # before the session starts (exec starts after START_SECONDS).
    reads_stdin: bool = False
    argv: list[str] = field(default_factory=lambda: ["attach"])
    stdin: Stdin = field(default_factory=Stdin)
    stopped: threading.Event = field(default_factory=threading.Event)

    def start(self, output: Callable[[int, bytes], None], done: Callable[[Outcome], None]) -> None:
        def follow() -> None:
            run = self.container
            seen, generation = run.log_total, run.generation
            while not self.stopped.wait(POLL_SECONDS):
                fresh = run.log_total - seen
                if fresh > 0:
                    lines = list(run.logs)[-fresh:]
                    output(STDOUT, "".join(f"{line}\n" for line in lines).encode())
                    seen = run.log_total
                if run.state != "running" or run.generation != generation:
                    break
                if self.reads_stdin and self.stdin.closed:
                    break
            done(Outcome(exit_code=0))

        threading.Thread(target=follow, name="attach", daemon=True).start()

    def stop(self) -> None:
        self.stopped.set()
        self.stdin.close()
