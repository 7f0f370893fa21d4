"""The shell and tools a command run with ``kubectl exec`` finds in an image that has a shell.

A busybox-like ``sh`` over :mod:`exec_syntax`: lists, pipes, ``&&``/``||``, ``for``/``while``/
``if``, ``$VAR``, ``$?`` and ``$(…)``, redirections to files and between descriptors; and the
everyday applets (``cat``, ``ls``, ``env``, ``echo``, ``grep``, ``wc``, ``tar`` for ``kubectl
cp`` …) over :class:`~lab.controllers.exec_files.ContainerFiles`. It runs in a worker thread:
``stdin`` blocks until the client sends more, ``sleep`` really waits (and stops when the
client goes away).
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import io
import posixpath
import re
import tarfile
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from lab.controllers import exec_syntax
from lab.controllers.exec_files import ContainerFiles
from lab.controllers.exec_syntax import Node, Word

_VARIABLE = re.compile(r"\$(?:\{(\w+)\}|(\w+|\?|#))")
_SUBSTITUTION = re.compile(r"\$\((.*)\)", re.S)


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
        self._execute(node, io_)
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
        kind, value = node
        if kind == "list":
            for connector, child in value:
                if (connector == "&&" and self.status != 0) or (
                    connector == "||" and self.status == 0
                ):
                    continue
                self._execute(child, io_)
        elif kind == "pipe":
            data: bytes | None = None
            for index, stage in enumerate(value):
                last = index == len(value) - 1
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
                data = bytes(captured)
        elif kind == "not":
            self._execute(value, io_)
            self.status = 0 if self.status else 1
        elif kind == "for":
            name, items, body = value
            for item in [w for word in items for w in self._expand(word)]:
                self.env[name] = item
                self._execute(body, io_)
        elif kind == "while":
            until, condition, body = value
            for _ in range(10_000):  # a loop that never ends still ends with the client
                if self.stopped.is_set():
                    break
                self._execute(condition, io_)
                if (self.status == 0) == until:
                    break
                self._execute(body, io_)
            self.status = 0
        elif kind == "if":
            for condition, body in value:
                if condition is not None:
                    self._execute(condition, io_)
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
            self._simple(value[0], value[1], io_)

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
        fields: list[str] = [""]
        quoted = False
        for kind, text in word:
            if kind == "lit":
                fields[-1] += text
                quoted = True
            elif kind == "dq":
                fields[-1] += self._substitute(text)
                quoted = True
            else:
                pieces = re.split(r"[ \t\n]+", self._substitute(text))
                fields[-1] += pieces[0]
                fields.extend(pieces[1:])
        return [f for f in fields if f or quoted]

    def _substitute(self, text: str) -> str:
        result: list[str] = []
        i = 0
        while i < len(text):
            if text.startswith("\\$", i):
                result.append("$")
                i += 2
            elif text.startswith("$(", i):
                depth, j = 0, i + 1
                while j < len(text):
                    depth += {"(": 1, ")": -1}.get(text[j], 0)
                    if depth == 0:
                        break
                    j += 1
                result.append(self._capture(text[i + 2 : j]))
                i = j + 1
            else:
                match = _VARIABLE.match(text, i)
                if match:
                    name = match.group(1) or match.group(2)
                    result.append(
                        str(self.status)
                        if name == "?"
                        else "0"
                        if name == "#"
                        else self.env.get(name, "")
                    )
                    i = match.end()
                else:
                    result.append(text[i])
                    i += 1
        return "".join(result)

    def _capture(self, script: str) -> str:
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
        tool = self.tools.get(name)
        if tool is not None:
            return tool(self, argv, io_)
        io_.err(f"sh: {argv[0]}: not found\n".encode())
        return 127

    def _sh(self, argv: list[str], io_: Io) -> int:
        rest = argv[1:]
        while rest and rest[0].startswith("-") and rest[0] != "-c":
            rest = rest[1:]
        inner = self._child(0)
        try:
            if rest and rest[0] == "-c":
                return inner.run_script(rest[1] if len(rest) > 1 else "", io_)
            if rest:
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


def gzip_bytes(data: bytes) -> bytes:
    return gzip.compress(data, mtime=0)


def b64(data: bytes) -> bytes:
    return base64.b64encode(data)


def tar_create(files: ContainerFiles, paths: list[str], cwd: str) -> bytes:
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w") as archive:
        for path in paths:
            full = posixpath.normpath(posixpath.join(cwd, path))
            for found in files.walk(full):
                data = files.read(found) or b""
                info = tarfile.TarInfo(
                    found.lstrip("/") if path.startswith("/") else posixpath.relpath(found, cwd)
                )
                info.size = len(data)
                info.mode = 0o644
                archive.addfile(info, io.BytesIO(data))
    return buffer.getvalue()


def tar_extract(files: ContainerFiles, data: bytes, directory: str) -> str | None:
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
            for member in archive.getmembers():
                target = posixpath.normpath(posixpath.join(directory, member.name))
                if member.isdir():
                    files.mkdir(target, parents=True)
                    continue
                extracted = archive.extractfile(member)
                if extracted is None:
                    continue
                files.mkdir(posixpath.dirname(target), parents=True)
                problem = files.write(target, extracted.read())
                if problem:
                    return f"tar: can't open '{member.name}': {problem}"
    except tarfile.TarError as error:
        return f"tar: {error}"
    return None
