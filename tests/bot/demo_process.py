"""``stratus demo`` as a user runs it: a fresh process on free ports, its printed URL, and a
clean stop by SIGINT (Ctrl-C). Shared by the demo's HTTP test, its browser test and the bot
benchmark."""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

from lab.slack.client import PlaygroundClient
from tests.conftest import interruptible

REPO = Path(__file__).resolve().parents[2]
READY = "stratus demo ready: "


class DemoProcess:
    def __init__(
        self, directory: Path, *, env: dict[str, str] | None = None, args: tuple[str, ...] = ()
    ) -> None:
        self.directory = directory
        self.args = args
        self.env = {**(env or os.environ), "PYTHONUNBUFFERED": "1"}
        self.env.pop("OPENAI_API_KEY", None)  # the offline planner: deterministic
        self.process: subprocess.Popen[str] | None = None
        self.lines: list[str] = []
        self._queue: queue.Queue[str | None] = queue.Queue()
        self.url = ""
        self._reader: threading.Thread | None = None

    def start(self, timeout: float = 120.0) -> DemoProcess:
        self.process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "cli",
                "demo",
                "--port",
                "0",
                "--dir",
                str(self.directory),
                *self.args,
            ],
            cwd=REPO,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            preexec_fn=interruptible,  # noqa: PLW1509 - only signal dispositions, before exec
        )
        self._reader = threading.Thread(target=self._read, daemon=True)
        self._reader.start()
        deadline = time.monotonic() + timeout
        while not self.url:
            try:
                line = self._queue.get(timeout=max(deadline - time.monotonic(), 0.01))
            except queue.Empty:
                break
            if line is None:
                break
            if line.startswith(READY):
                self.url = line.removeprefix(READY).strip().rstrip("/")
        if not self.url:
            self.stop()
            raise AssertionError("stratus demo printed no URL:\n" + "\n".join(self.lines))
        return self

    def _read(self) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            self.lines.append(line.rstrip("\n"))
            self._queue.put(line.rstrip("\n"))
        self._queue.put(None)

    @property
    def slack(self) -> PlaygroundClient:
        return PlaygroundClient(self.url)

    def children(self) -> list[int]:
        """The lab's and the bot's process ids."""
        assert self.process is not None
        found: list[int] = []
        for task in Path(f"/proc/{self.process.pid}/task").iterdir():
            found += [int(p) for p in (task / "children").read_text().split()]
        return found

    def stop(self, timeout: float = 60.0) -> int:
        """Ctrl-C, then the exit code (killed after ``timeout``: the test then fails)."""
        assert self.process is not None
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGINT)
        try:
            code = self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
            code = -9
        if self._reader is not None:
            self._reader.join(timeout=10)
        if self.process.stdout is not None:
            self.process.stdout.close()
        return code

    def log(self, name: str) -> str:
        path = self.directory / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""


def wait_for(check: Any, timeout: float = 60.0, interval: float = 0.2) -> Any:
    deadline = time.monotonic() + timeout
    while True:
        result = check()
        if result:
            return result
        if time.monotonic() > deadline:
            raise TimeoutError("never happened")
        time.sleep(interval)


def text_of(message: dict[str, Any]) -> str:
    return str(message.get("text", "")) + json.dumps(message.get("blocks", []))
