"""The shell and tools a command run with ``kubectl exec`` finds in an image that has a shell.

A busybox-like ``sh`` over :mod:`exec_syntax`: lists, pipes, ``&&``/``||``, ``for``/``while``/
``if``, ``break``/``continue``, ``set -e``, ``read``, ``$VAR``, ``${VAR:-default}``, ``$?``,
``$(…)`` and ``$((…))``, redirections to files and between descriptors; and the
everyday applets (``cat``, ``ls``, ``env``, ``echo``, ``grep``, ``wc``, ``tar`` for ``kubectl
cp`` …) over :class:`~lab.controllers.exec_files.ContainerFiles`. It runs in a worker thread:
``stdin`` blocks until the client sends more, ``sleep`` really waits (and stops when the
client goes away). A container's own command runs on the same shell with a
:class:`Pacing` (``container_scripts``), which decides what time and endless loops mean there.
"""

from __future__ import annotations

import contextlib
import posixpath
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

from lab.controllers import exec_syntax, shell_expansion
from lab.controllers.exec_files import ContainerFiles
from lab.controllers.exec_syntax import Node, Word
from lab.controllers.shell_expansion import ShellError

# A while loop in ``kubectl exec`` that never ends still ends, with the client or here.
MAX_LOOPS = 10_000


class Stdin:
    """What a command reads: bytes the client sends, or the output of the stage before it."""

    def __init__(self, data: bytes | None = None) -> None:
        self._buffer = bytearray(data or b"")
        self._closed = data is not None
        self._ready = threading.Condition()

    def feed(self, data: bytes) -> None:
        with self._ready:
            self._buffer.extend(data)
            self._ready.notify_all()

    @property
    def closed(self) -> bool:
        return self._closed

    def close(self) -> None:
        with self._ready:
            self._closed = True
            self._ready.notify_all()

    def readline(self) -> bytes | None:
        """One line (with its newline), what is left at end of input, or None at the end."""
        with self._ready:
            while b"\n" not in self._buffer and not self._closed:
                self._ready.wait(0.5)
            if not self._buffer:
                return None
            end = self._buffer.find(b"\n")
            end = len(self._buffer) if end < 0 else end + 1
            line = bytes(self._buffer[:end])
            del self._buffer[:end]
            return line

    def read_all(self) -> bytes:
        with self._ready:
            while not self._closed:
                self._ready.wait(0.5)
            data = bytes(self._buffer)
            self._buffer.clear()
            return data


class ExitShell(Exception):
    def __init__(self, code: int) -> None:
        super().__init__(code)
        self.code = code


class _Break(Exception):
    def __init__(self, levels: int, *, skip: bool) -> None:
        super().__init__(levels)
        self.levels = levels
        self.skip = skip  # ``continue``: on with the next pass


class Suspended(Exception):
    """A paced ``while`` loop stopped between two passes, to go on later
    (``container_scripts``): ``rest`` is what is left to run, innermost first, in ``shell``.

    Only sequences, groups, ``if`` bodies and enclosing ``while`` loops can be taken up
    again; inside anything else (a pipeline, a subshell, ``$(…)``, a ``for``, a condition)
    the loop is taken as endless instead."""

    def __init__(self, shell: Shell) -> None:
        super().__init__("suspended")
        self.shell = shell
        self.rest: list[Node] = []


class Pacing(Protocol):
    """How a script meets time: ``kubectl exec`` has none (things run as they are written,
    ``sleep`` waits); a container's own command is paced by ``container_scripts``."""

    loop_limit: int

    def background(self, job: Callable[[], None]) -> None:
        """Run ``job`` as ``cmd &`` would: beside the rest, taking none of its time."""

    def endless(self) -> None:
        """A while loop reached ``loop_limit`` passes: it does not end by itself."""

    def pass_starts(self, shell: Shell) -> None:
        """Before each pass of a ``while`` loop: may stop the script here (:class:`Suspended`)."""

    def ends_run(self, error: Exception) -> bool:
        """Whether ``error`` is what :meth:`endless` raises (a program that runs on)."""


Writer = Callable[[bytes], None]


@dataclass
class Io:
    stdin: Stdin
    out: Writer
    err: Writer


@dataclass
class Shell:
    files: ContainerFiles
    env: dict[str, str]
    binaries: set[str] = field(default_factory=set)
    stopped: threading.Event = field(default_factory=threading.Event)
    status: int = 0
    cwd: str = "/"
    # The applets by name (exec_tools.TOOLS, handed in: that module builds on this one).
    tools: dict[str, Callable[[Shell, list[str], Io], int]] = field(default_factory=dict)
    network: Any = None  # exec_network.ClusterNetwork, for wget, curl and nslookup
    pacing: Pacing | None = None
    errexit: bool = False  # ``set -e``
    looping: int = 0  # how many while loops the command runs in
    # ``$0``, ``$1`` …: ``sh -c SCRIPT NAME ARG…`` names the script and passes its arguments.
    positional: list[str] = field(default_factory=lambda: ["sh"])
    _testing: int = 0  # inside a condition, where ``set -e`` does not apply

    # ------------------------------------------------------------ entry points

    def run_argv(self, argv: list[str], io_: Io) -> int:
        """Run one argv (what ``exec`` asks for) to its exit status."""
        try:
            self.status = self._program(argv, io_)
        except ExitShell as stop:
            self.status = stop.code
        return self.status

    def run_script(self, script: str, io_: Io) -> int:
        try:
            node = exec_syntax.parse(script)
        except exec_syntax.ShellSyntaxError as error:
            io_.err(f"sh: {error}\n".encode())
            return 2
        with contextlib.suppress(_Break):  # ``break`` outside a loop: sh ignores it
            self._execute(node, io_)
        return self.status

    def resume(self, rest: list[Node], io_: Io) -> int:
        """Go on with what a :class:`Suspended` left (innermost first) to the script's exit
        status; a new suspension carries what is still left after it."""
        try:
            for index, node in enumerate(rest):
                try:
                    with contextlib.suppress(_Break):
                        self._execute(node, io_)
                except Suspended as pause:
                    pause.rest.extend(rest[index + 1 :])
                    raise
        except ExitShell as stop:
            self.status = stop.code
        return self.status

    def interactive(self, io_: Io) -> int:
        """``sh`` reading commands from stdin, a line at a time, as they arrive."""
        try:
            while not self.stopped.is_set():
                line = io_.stdin.readline()
                if line is None:
                    break
                self.run_script(line.decode("utf-8", "replace"), io_)
        except ExitShell as stop:
            return stop.code
        return self.status

    # ------------------------------------------------------------ the tree

    def _execute(self, node: Node, io_: Io) -> None:
        if node[0] in _RESUMABLE:
            self._node(node, io_)
            return
        try:
            self._node(node, io_)
        except Suspended:
            self._endless()

    def _endless(self) -> None:
        assert self.pacing is not None  # only a pacing suspends
        self.pacing.endless()

    def _node(self, node: Node, io_: Io) -> None:
        kind, value = node
        if kind == "list":
            for index, (connector, child) in enumerate(value):
                if (connector == "&&" and self.status != 0) or (
                    connector == "||" and self.status == 0
                ):
                    continue
                following = value[index + 1][0] if index + 1 < len(value) else ";"
                guarded = following in ("&&", "||")
                self._testing += guarded
                try:
                    self._execute(child, io_)
                except Suspended as pause:
                    if index + 1 < len(value):
                        pause.rest.append(("list", value[index + 1 :]))
                    raise
                finally:
                    self._testing -= guarded
                if self.errexit and self.status and not guarded and not self._testing:
                    raise ExitShell(self.status)
        elif kind == "bg":
            self._background(value, io_)
        elif kind == "pipe":
            self._pipe(value, io_)
        elif kind == "not":
            self._condition(value, io_)
            self.status = 0 if self.status else 1
        elif kind == "for":
            name, items, body = value
            self.status = 0
            for item in [w for word in items for w in self._expand(word)]:
                self.env[name] = item
                if not self._pass(body, io_):
                    break
        elif kind == "while":
            self._while(*value, io_=io_)
        elif kind == "if":
            for condition, body in value:
                if condition is not None:
                    self._condition(condition, io_)
                    if self.status != 0:
                        continue
                self._execute(body, io_)
                return
            self.status = 0
        elif kind in ("group", "subshell"):
            try:
                self._execute(value, io_)
            except ExitShell as stop:
                if kind == "group":
                    raise
                self.status = stop.code
        else:
            try:
                self._simple(value[0], value[1], io_)
            except ShellError as error:
                io_.err(f"{error.message}\n".encode())
                raise ExitShell(error.code) from None

    def _pipe(self, stages: list[Node], io_: Io) -> None:
        data: bytes | None = None
        endless: Exception | None = None
        for index, stage in enumerate(stages):
            last = index == len(stages) - 1
            captured = bytearray()
            stage_io = Io(
                io_.stdin if index == 0 else Stdin(data or b""),
                io_.out if last else captured.extend,
                io_.err,
            )
            try:
                self._execute(stage, stage_io)
            except ExitShell as stop:  # each stage is a subshell
                self.status = stop.code
            except Exception as error:
                # A paced producer that never ends (``yes``, ``tail -f``) hands on what it
                # wrote so far; the pipeline ends only if ``head`` closes it.
                if last or self.pacing is None or not self.pacing.ends_run(error):
                    raise
                endless = error
            data = bytes(captured)
        if endless is not None and _program_name(stages[-1]) != "head":
            raise endless

    def _condition(self, node: Node, io_: Io) -> None:
        self._testing += 1
        try:
            self._execute(node, io_)
        except Suspended:
            self._endless()
        finally:
            self._testing -= 1

    def _pass(self, body: Node, io_: Io) -> bool:
        """One pass of a loop's body; False when ``break`` ends the loop."""
        try:
            self._execute(body, io_)
        except _Break as stop:
            if stop.levels > 1:
                raise _Break(stop.levels - 1, skip=stop.skip) from None
            return stop.skip
        return True

    def _while(self, until: bool, condition: Node, body: Node, *, io_: Io) -> None:
        limit = self.pacing.loop_limit if self.pacing is not None else MAX_LOOPS
        self.looping += 1
        try:
            for _ in range(limit):
                if self.stopped.is_set():
                    break
                if self.pacing is not None:
                    self.pacing.pass_starts(self)
                self._condition(condition, io_)
                if (self.status == 0) == until:
                    break
                if not self._pass(body, io_):
                    break
            else:
                if self.pacing is not None:
                    self.pacing.endless()
        except Suspended as pause:  # taken up again at this loop's next pass
            pause.rest.append(("while", (until, condition, body)))
            raise
        finally:
            self.looping -= 1
        self.status = 0

    def _background(self, node: Node, io_: Io) -> None:
        def job() -> None:
            inner = self._child(self.status)
            with contextlib.suppress(ExitShell, _Break):
                inner._execute(node, io_)

        if self.pacing is not None:
            self.pacing.background(job)
        else:  # ``kubectl exec`` has nothing to run beside it: the job runs first
            job()
        self.status = 0

    def _simple(
        self, words: list[Word], redirections: list[exec_syntax.Redirection], io_: Io
    ) -> None:
        argv = [w for word in words for w in self._expand(word)]
        assignments = []
        while argv and re.match(r"^[A-Za-z_]\w*=", argv[0]):
            assignments.append(argv.pop(0))
        if not argv:
            for assignment in assignments:
                name, _, value = assignment.partition("=")
                self.env[name] = value
            self.status = 0
            return
        streams = {0: io_.stdin, 1: io_.out, 2: io_.err}
        for fd, op, target in redirections:
            if op == "dup":
                if isinstance(target, int) and target in (1, 2):
                    streams[fd] = streams[target]
                continue
            path = self._path(" ".join(self._expand(target)) if isinstance(target, list) else "")
            if op == "<":
                data = self.files.read(path)
                if data is None:
                    io_.err(f"sh: can't open '{path}': No such file or directory\n".encode())
                    self.status = 1
                    return
                streams[0] = Stdin(data)
            elif path == "/dev/null":
                streams[fd] = lambda _data: None
            else:
                problem = self.files.write(path, b"", append=op == ">>")
                if problem:
                    io_.err(f"sh: can't create {path}: {problem}\n".encode())
                    self.status = 1
                    return
                streams[fd] = lambda data, p=path: self.files.write(p, data, append=True) and None
        saved = dict(self.env)
        for assignment in assignments:
            name, _, value = assignment.partition("=")
            self.env[name] = value
        stdin = streams[0]
        out, err = streams[1], streams[2]
        assert isinstance(stdin, Stdin) and callable(out) and callable(err)
        self.status = self._program(argv, Io(stdin, out, err))
        if assignments:
            self.env = saved

    def _path(self, path: str) -> str:
        return posixpath.normpath(posixpath.join(self.cwd, path)) if path else self.cwd

    # ------------------------------------------------------------ expansion

    def _expand(self, word: Word) -> list[str]:
        return shell_expansion.expand(self, word)

    def capture(self, script: str) -> str:
        """What ``$(script)`` prints (its status becomes ``$?``)."""
        captured = bytearray()
        saved = self.status
        inner = self._child(saved)
        with contextlib.suppress(ExitShell):
            inner.run_script(script, Io(Stdin(b""), captured.extend, lambda _d: None))
        self.status = inner.status
        return captured.decode("utf-8", "replace").rstrip("\n")

    # ------------------------------------------------------------ programs

    def _child(self, status: int) -> Shell:
        return Shell(
            self.files,
            dict(self.env),
            self.binaries,
            self.stopped,
            status,
            self.cwd,
            self.tools,
            self.network,
            self.pacing,
        )

    def _program(self, argv: list[str], io_: Io) -> int:
        name = argv[0].rsplit("/", 1)[-1]
        if name in ("sh", "ash", "bash", "dash"):
            return self._sh(argv, io_)
        if name == "exit":
            code = argv[1] if len(argv) > 1 else str(self.status)
            raise ExitShell(int(code) if code.lstrip("-").isdigit() else 2)
        if name == "cd":
            target = self._path(argv[1] if len(argv) > 1 else "/root")
            if not self.files.is_dir(target):
                io_.err(f"sh: cd: can't cd to {argv[1]}: No such file or directory\n".encode())
                return 2
            self.cwd = target
            return 0
        if name == "export":
            for item in argv[1:]:
                key, sep, value = item.partition("=")
                if sep:
                    self.env[key] = value
            return 0
        if name == "unset":
            for item in argv[1:]:
                self.env.pop(item, None)
            return 0
        if name == "exec":
            return self._program(argv[1:], io_) if len(argv) > 1 else 0
        if name in ("break", "continue"):
            levels = argv[1] if len(argv) > 1 else "1"
            raise _Break(int(levels) if levels.isdigit() else 1, skip=name == "continue")
        if name == "set":
            return self._set(argv[1:], io_)
        if name == "read":
            return self._read(argv[1:], io_)
        if name in ("trap", "wait", "ulimit", "umask") and name not in self.tools:
            return 0
        tool = self.tools.get(name)
        if tool is not None:
            return tool(self, argv, io_)
        io_.err(f"sh: {argv[0]}: not found\n".encode())
        return 127

    def _set(self, args: list[str], io_: Io) -> int:
        if not args:
            io_.out("".join(f"{k}='{v}'\n" for k, v in sorted(self.env.items())).encode())
            return 0
        for arg in args:
            if arg.startswith(("-", "+")) and "e" in arg[1:]:
                self.errexit = arg.startswith("-")
        return 0

    def _read(self, args: list[str], io_: Io) -> int:
        names = [a for a in args if not a.startswith("-")] or ["REPLY"]
        line = io_.stdin.readline()
        if line is None:
            for name in names:
                self.env[name] = ""
            return 1
        text = line.decode("utf-8", "replace").rstrip("\n")
        fields = text.split(None, len(names) - 1) if names != ["REPLY"] else [text]
        for index, name in enumerate(names):
            self.env[name] = fields[index] if index < len(fields) else ""
        return 0

    def _sh(self, argv: list[str], io_: Io) -> int:
        rest = argv[1:]
        errexit = False
        while rest and rest[0].startswith("-") and len(rest[0]) > 1 and rest[0] != "-c":
            errexit = errexit or "e" in rest[0][1:]
            if "c" in rest[0][1:]:  # ``sh -ec SCRIPT``
                rest = ["-c", *rest[1:]]
                break
            rest = rest[1:]
        inner = self._child(0)
        inner.errexit = errexit
        try:
            if rest and rest[0] == "-c":
                inner.positional = rest[2:] or [argv[0]]
                return inner.run_script(rest[1] if len(rest) > 1 else "", io_)
            if rest:
                inner.positional = rest
                script = self.files.read(self._path(rest[0]))
                if script is None:
                    io_.err(
                        f"{argv[0]}: can't open '{rest[0]}': No such file or directory\n".encode()
                    )
                    return 2
                return inner.run_script(script.decode("utf-8", "replace"), io_)
            return inner.interactive(io_)
        except ExitShell as stop:
            return stop.code


# The nodes a suspended loop can be taken up again inside (see :class:`Suspended`).
_RESUMABLE = frozenset({"list", "group", "if", "while"})


def _program_name(node: Node) -> str:
    """The program a simple command runs, when its name is plain text (else "")."""
    if node[0] != "cmd" or not node[1][0]:
        return ""
    first = node[1][0][0]
    return (
        "".join(t for _, t in first) if all(k != "bare" or "$" not in t for k, t in first) else ""
    )
