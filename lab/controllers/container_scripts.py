"""A container's own command, when it is a shell script or a shell utility, run on the shell
``kubectl exec`` uses (:mod:`exec_shell` with the applets of :mod:`exec_tools`) over the
container's files, so ``sh -c "echo hi > /work/motd; while …"`` writes into the container's
layer and its emptyDirs, and what it prints to stdout or stderr is the container's log.

The kubelet asks once per start and needs an answer at once, so time is virtual here
(:class:`ScriptPacing`): ``sleep N`` adds N seconds to the run instead of waiting, and each
line printed carries the second it was printed at. A program that never ends (``sleep
infinity``, ``tail -f``, ``nc -l``, a server in ``python -c``) ends the script's run as
*endless*: the container stays Running. A ``while`` loop runs its passes up to a *horizon*
(the kubelet's: 0 s on the realtime clock, :data:`LOOP_SECONDS` on the instant one) and then
stops between two passes (:class:`exec_shell.Suspended`): the outcome's :class:`Continuation`
takes it up again at the next pass's second, against the files as they are then, so a loop
that waits for a file sees it when ``kubectl cp`` puts it there. A loop inside a pipeline,
subshell or ``$(…)``, or :data:`LOOP_PASSES` passes without a sleep, is taken as endless.
``cmd &`` runs beside the rest, taking none of its time, and a background job that never
ends keeps the container running.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass, field

from lab.controllers import exec_tools
from lab.controllers.exec_files import ContainerFiles
from lab.controllers.exec_shell import Io, Shell, Stdin, Suspended
from lab.controllers.exec_syntax import Node
from lab.controllers.exec_tools import Tool

SHELLS = frozenset({"sh", "bash", "ash", "dash", "zsh"})
# Programs every image with a shell has that the lab does not model: they succeed silently
# (the network ones too, as the kubelet's side has no cluster network to ask).
SILENT = frozenset(
    {
        "basename",
        "chmod",
        "chown",
        "curl",
        "dd",
        "dig",
        "dirname",
        "du",
        "find",
        "free",
        "ifconfig",
        "ip",
        "kill",
        "ln",
        "mount",
        "netstat",
        "nslookup",
        "sed",
        "ss",
        "stat",
        "sync",
        "tee",
        "trap",
        "uptime",
        "wget",
        "which",
    }
)
# Shell builtins (``exec_shell``) a command line may start with.
_BUILTINS = frozenset(
    {"cd", "exec", "exit", "export", "unset", "set", "read", "break", "continue", "wait", "trap"}
)
_PACED = frozenset(
    {"sleep", "tail", "watch", "yes", "top", "ping", "nc", "netcat", "httpd", "socat"}
)
# Everything an image with a shell runs (its own binaries aside); anything else is 127.
PROGRAMS = (
    SHELLS
    | SILENT
    | _BUILTINS
    | _PACED
    | frozenset(exec_tools.TOOLS)
    | {"python", "python3", "node", "nodejs"}
)
# How far a while loop runs before it is taken as endless (see the module docstring).
LOOP_SECONDS = 10.0
LOOP_PASSES = 50
_DURATION = re.compile(r"^(\d+(?:\.\d+)?)([smhd]?)$")


class Endless(Exception):
    """The script runs on until the container is stopped."""


@dataclass
class ScriptOutcome:
    """How one run of the script goes (so far), for the kubelet's plan."""

    exit_code: int | None  # None: runs until it is stopped, or goes on with ``resume``
    after: float  # seconds from the start until it exits
    output: list[str]
    listens: list[int]
    http: dict[int, list[str] | None]
    output_at: list[float] = field(default_factory=list)  # each line's second from the start
    resume: Continuation | None = None  # a loop stopped between passes, to go on at resume.at


@dataclass
class ScriptPacing:
    """Virtual time for a container's script (``exec_shell.Pacing``), and the programs whose
    model is about time or ports rather than output: ``sleep``, ``tail -f``, listeners,
    ``ping``, interpreters."""

    binaries: set[str]
    stdin: bool
    loop_limit: int = LOOP_PASSES
    horizon: float = LOOP_SECONDS  # a loop's pass that starts later waits for its second
    time: float = 0.0
    listens: list[int] = field(default_factory=list)
    http: dict[int, list[str] | None] = field(default_factory=dict)
    background_endless: bool = False
    jobs_end: float = 0.0  # when the last job started with ``&`` ends

    # ------------------------------------------------------------ exec_shell.Pacing

    def background(self, job: Callable[[], None]) -> None:
        started = self.time
        try:
            job()
        except (Endless, Suspended):  # a job's loop is not taken up again: it runs on
            self.background_endless = True
        finally:
            self.jobs_end = max(self.jobs_end, self.time)  # what ``wait`` waits for
            self.time = started

    def endless(self) -> None:
        raise Endless

    def ends_run(self, error: Exception) -> bool:
        return isinstance(error, (Endless, Suspended))

    def pass_starts(self, shell: Shell) -> None:
        if self.time > self.horizon:
            raise Suspended(shell)

    # ------------------------------------------------------------ programs

    def tools(self) -> dict[str, Tool]:
        tools: dict[str, Tool] = dict(exec_tools.TOOLS)
        tools.update(dict.fromkeys(SILENT, _succeed))
        tools.update(dict.fromkeys(self.binaries - set(tools), _succeed))
        tools.update(
            {
                "sleep": self.sleep,
                "tail": self.tail,
                "watch": self.forever,
                "yes": self.yes,
                "top": self.top,
                "wait": self.wait,
                "ping": self.ping,
                "nc": self.listener,
                "netcat": self.listener,
                "httpd": self.listener,
                "socat": self.listener,
            }
        )
        for name in ("python", "python3", "node", "nodejs"):
            tools[name] = self.interpreter
        return tools

    def sleep(self, shell: Shell, argv: list[str], io_: Io) -> int:
        for arg in argv[1:]:
            if arg in ("infinity", "inf"):
                raise Endless
            match = _DURATION.match(arg)
            if match is None:
                io_.err(f"sleep: invalid number '{arg}'\n".encode())
                return 1
            scale = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
            self.time += float(match.group(1)) * scale
        return 0

    def forever(self, shell: Shell, argv: list[str], io_: Io) -> int:
        raise Endless

    def yes(self, shell: Shell, argv: list[str], io_: Io) -> int:
        line = " ".join(argv[1:]) or "y"
        io_.out(f"{line}\n".encode() * LOOP_PASSES)  # enough for a ``head`` after it
        raise Endless

    def tail(self, shell: Shell, argv: list[str], io_: Io) -> int:
        follow = any(
            a in ("-f", "-F", "--follow") or (a.startswith("-") and "f" in a) for a in argv[1:]
        )
        if follow:
            raise Endless
        return exec_tools.TOOLS["tail"](shell, argv, io_)

    def top(self, shell: Shell, argv: list[str], io_: Io) -> int:
        if "-n" not in argv:
            raise Endless
        return 0

    def wait(self, shell: Shell, argv: list[str], io_: Io) -> int:
        if self.background_endless:
            raise Endless
        self.time = max(self.time, self.jobs_end)
        return 0

    def ping(self, shell: Shell, argv: list[str], io_: Io) -> int:
        if "-c" not in argv:
            raise Endless
        at = argv.index("-c") + 1
        count = argv[at] if at < len(argv) else "1"
        self.time += float(count) if count.isdigit() else 1.0
        return 0

    def listener(self, shell: Shell, argv: list[str], io_: Io) -> int:
        program, args = argv[0].rsplit("/", 1)[-1], argv[1:]
        listening = program == "socat" or any(
            a.startswith("-") and "l" in a.lstrip("-") for a in args
        )
        port = 0
        if program == "httpd":
            listening = any(a.startswith("-") and "f" in a for a in args)
            port = 80
        if not listening:
            return 0
        numbers = [a for a in args if a.isdigit()]
        if "-p" in args and args.index("-p") + 1 < len(args):
            numbers.insert(0, args[args.index("-p") + 1])
        found = re.search(r"LISTEN:(\d+)", " ".join(args))
        if found:
            numbers.insert(0, found.group(1))
        if numbers and numbers[0].isdigit():
            port = int(numbers[0])
        if port:
            self.listens.append(port)
            if program == "httpd":  # busybox httpd serves the files of its home folder
                self.http[port] = None
        raise Endless

    def interpreter(self, shell: Shell, argv: list[str], io_: Io) -> int:
        program, args = argv[0].rsplit("/", 1)[-1], argv[1:]
        python = program.startswith("python")
        if (python and not {program, "python3"} & self.binaries) or (
            not python and "node" not in self.binaries
        ):
            io_.err(f"sh: {argv[0]}: not found\n".encode())
            return 127
        if python and "-m" in args:
            at = args.index("-m")
            if at + 1 < len(args) and args[at + 1] == "http.server":
                rest = [a for a in args[at + 2 :] if a.isdigit()]
                port = int(rest[0]) if rest else 8000
                self.listens.append(port)
                self.http[port] = ["/"]  # the listing of its folder; files it cannot know
                raise Endless
            return 0
        flag = "-c" if python else "-e"
        if flag in args and args.index(flag) + 1 < len(args):
            return self._code(args[args.index(flag) + 1], io_, python=python)
        scripts = [a for a in args if not a.startswith("-")]
        if scripts:
            path = "/" + scripts[0].lstrip("/")
            if python:
                io_.err(
                    f"{program}: can't open file '{path}': [Errno 2] No such file or "
                    "directory\n".encode()
                )
                return 2
            io_.err(f"Error: Cannot find module '{path}'\n".encode())
            return 1
        if self.stdin:
            raise Endless
        return 0

    def _code(self, code: str, io_: Io, *, python: bool) -> int:
        """``python -c`` / ``node -e`` code, read for what it prints, sleeps and serves."""
        printed = r"print\((['\"])(.*?)\1\)" if python else r"console\.log\((['\"])(.*?)\1\)"
        io_.out("".join(f"{m.group(2)}\n" for m in re.finditer(printed, code)).encode())
        for seconds in re.findall(r"sleep\((\d+(?:\.\d+)?)\)", code):
            self.time += float(seconds)
        forever = (
            ("while True" in code or "while 1" in code or "serve_forever" in code)
            if python
            else ("setInterval" in code or ".listen(" in code)
        )
        port = re.search(r"(?:port\s*=\s*|\(\s*['\"]['\"]\s*,\s*|listen\()(\d{2,5})", code)
        if port:
            self.listens.append(int(port.group(1)))
            if re.search(r"http|express|serve_forever", code):
                self.http[int(port.group(1))] = None
        exit_call = re.search(r"(?:sys\.exit|exit|process\.exit)\((\d+)\)", code)
        if exit_call:
            return int(exit_call.group(1))
        if python and re.search(r"^\s*raise\b|;\s*raise\b", code):
            io_.err(b"Traceback (most recent call last):\n")
            return 1
        if forever:
            raise Endless
        return 0


def _succeed(shell: Shell, argv: list[str], io_: Io) -> int:
    return 0


class TimedLog:
    """What a script prints, line by line, with the second of its run each line ends at."""

    def __init__(self, pacing: ScriptPacing) -> None:
        self._pacing = pacing
        self._partial = bytearray()
        self.lines: list[tuple[float, str]] = []

    def write(self, data: bytes) -> None:
        self._partial.extend(data)
        *done, rest = bytes(self._partial).split(b"\n")
        self.lines.extend((self._pacing.time, line.decode("utf-8", "replace")) for line in done)
        self._partial = bytearray(rest)

    def take(self, *, ended: bool) -> list[tuple[float, str]]:
        """The lines since the last take (with an unfinished last line once the run ended)."""
        if ended and self._partial:
            self.write(b"\n")
        lines, self.lines = self.lines, []
        return lines


@dataclass
class Continuation:
    """A script stopped between two passes of a ``while`` loop; :meth:`step` runs it from
    the next pass (at :attr:`at`, seconds from the start) to the pass after it."""

    shell: Shell
    rest: list[Node]
    pacing: ScriptPacing
    log: TimedLog

    @property
    def at(self) -> float:
        return self.pacing.time

    def step(self) -> ScriptOutcome:
        self.pacing.horizon = self.pacing.time
        io_ = Io(Stdin(b""), self.log.write, self.log.write)
        try:
            code: int | None = self.shell.resume(self.rest, io_)
        except Suspended as pause:
            return _outcome(
                None,
                self.pacing,
                self.log,
                Continuation(pause.shell, pause.rest, self.pacing, self.log),
            )
        except Endless:
            code = None
        if code is not None and self.pacing.background_endless:
            code = None
        return _outcome(code, self.pacing, self.log, None)


def _outcome(
    code: int | None, pacing: ScriptPacing, log: TimedLog, resume: Continuation | None
) -> ScriptOutcome:
    lines = log.take(ended=resume is None)
    return ScriptOutcome(
        exit_code=code,
        after=max(pacing.time, 0.2),
        output=[line for _, line in lines],
        output_at=[at for at, _ in lines],
        listens=pacing.listens,
        http=pacing.http,
        resume=resume,
    )


def run(
    argv: list[str],
    *,
    files: ContainerFiles,
    env: dict[str, str],
    pod: str,
    binaries: set[str],
    stdin: bool,
    horizon: float = LOOP_SECONDS,
) -> ScriptOutcome:
    """Run the container's command line (a shell, or a program of the shell's image), its
    ``while`` loops up to ``horizon`` seconds (see the module docstring)."""
    pacing = ScriptPacing(binaries, stdin, horizon=horizon)
    environment = {"HOSTNAME": pod, "HOME": "/root", "PATH": "/usr/local/bin:/usr/bin:/bin"}
    environment.update(env)
    shell = Shell(files, environment, binaries, tools=pacing.tools(), pacing=pacing)
    log = TimedLog(pacing)
    program = argv[0].rsplit("/", 1)[-1]
    if program in SHELLS and stdin and len(argv) == 1:
        code: int | None = None  # an interactive shell with stdin open waits for input
    else:
        if program == "zsh":  # the lab's shell is busybox-like; zsh scripts rarely differ
            argv = ["sh", *argv[1:]]
        try:
            code = shell.run_argv(argv, Io(Stdin(b""), log.write, log.write))
        except Suspended as pause:
            return _outcome(None, pacing, log, Continuation(pause.shell, pause.rest, pacing, log))
        except Endless:
            code = None
        if code is not None and pacing.background_endless:
            code = None  # a job started with ``&`` runs on
    return _outcome(code, pacing, log, None)
