"""The file applets of an image with a shell, as busybox prints them: ``ls`` (with ``-l``'s
modes, sizes and dates), ``mkdir``, ``touch``, ``rm``, ``cp`` and ``mv`` over the container's
files (:class:`~lab.controllers.exec_files.ContainerFiles`)."""

from __future__ import annotations

import posixpath
import time
from collections.abc import Callable

from lab.controllers.exec_inputs import flags, operands
from lab.controllers.exec_shell import Io, Shell

Tool = Callable[[Shell, list[str], Io], int]
# When the image was built: the date ``ls -l`` shows for the files the image brought along.
IMAGE_BUILT = time.mktime((2024, 11, 12, 9, 30, 0, 0, 0, 0)) - time.timezone
_SIX_MONTHS = 182 * 86400


def _stamp(when: float, now: float) -> str:
    """``Dec  3 14:05`` for a recent time, ``Nov 12  2024`` for an older one (as ls does)."""
    moment = time.gmtime(when)
    if abs(now - when) < _SIX_MONTHS:
        return time.strftime("%b %e %H:%M", moment)
    return time.strftime("%b %e  %Y", moment)


def _long_line(shell: Shell, path: str, shown: str) -> str:
    files = shell.files
    directory = files.is_dir(path)
    if directory:
        mode = "drwxrwxrwt" if path == "/tmp" else "drwxr-xr-x"
        size, links = (
            4096,
            2 + sum(1 for n in files.listing(path) if files.is_dir(posixpath.join(path, n))),
        )
    else:
        mode = "-rw-r--r--"
        size, links = len(files.read(path) or b""), 1
    modified = files.modified(path)
    when = _stamp(modified if modified is not None else IMAGE_BUILT, time.time())
    return f"{mode} {links:>4} {'root':<8} {'root':<8} {size:>9} {when} {shown}\n"


def ls(shell: Shell, argv: list[str], io_: Io) -> int:
    paths = operands(argv) or ["."]
    found_flags = flags(argv)
    long = "l" in found_flags
    status = 0
    for index, path in enumerate(paths):
        full = shell._path(path)
        if shell.files.read(full) is not None or ("d" in found_flags and shell.files.exists(full)):
            io_.out((_long_line(shell, full, path) if long else f"{path}\n").encode())
            continue
        if not shell.files.is_dir(full):
            io_.err(f"ls: {path}: No such file or directory\n".encode())
            status = 1
            continue
        names = shell.files.listing(full)
        if "a" in found_flags:
            names = [".", "..", *names]
        elif "A" not in found_flags:
            names = [n for n in names if not n.startswith(".")]
        if len(paths) > 1:
            io_.out(f"{chr(10) if index else ''}{path}:\n".encode())
        if long:
            io_.out(f"total {4 * len(names)}\n".encode())
        for name in names:
            child = posixpath.normpath(posixpath.join(full, name))
            io_.out((_long_line(shell, child, name) if long else f"{name}\n").encode())
    return status


def mkdir(shell: Shell, argv: list[str], io_: Io) -> int:
    status = 0
    parents = "p" in flags(argv)
    for path in operands(argv):
        full = shell._path(path)
        if shell.files.exists(full):
            if not parents:
                io_.err(f"mkdir: can't create directory '{path}': File exists\n".encode())
                status = 1
            continue
        problem = shell.files.mkdir(full, parents=parents)
        if problem:
            io_.err(f"mkdir: can't create directory '{path}': {problem}\n".encode())
            status = 1
    return status


def touch(shell: Shell, argv: list[str], io_: Io) -> int:
    status = 0
    for path in operands(argv):
        full = shell._path(path)
        if shell.files.is_dir(full):
            continue
        problem = shell.files.write(full, b"", append=True)
        if problem:
            io_.err(f"touch: {path}: {problem}\n".encode())
            status = 1
    return status


def rm(shell: Shell, argv: list[str], io_: Io) -> int:
    status = 0
    found_flags = flags(argv)
    for path in operands(argv):
        full = shell._path(path)
        if shell.files.is_dir(full):
            if "r" in found_flags.lower():
                if shell.files.rmdir(full):
                    continue
                reason = "Read-only file system" if not shell.files.writable(full) else "Busy"
            else:
                reason = "Is a directory"
            io_.err(f"rm: can't remove '{path}': {reason}\n".encode())
            status = 1
            continue
        if shell.files.remove(full):
            continue
        if shell.files.read(full) is not None:
            io_.err(f"rm: can't remove '{path}': Read-only file system\n".encode())
            status = 1
        elif "f" not in found_flags:
            io_.err(f"rm: can't remove '{path}': No such file or directory\n".encode())
            status = 1
    return status


def _copy(shell: Shell, source: str, target: str, *, name: str, recursive: bool, io_: Io) -> bool:
    files = shell.files
    if files.is_dir(source):
        if not recursive:
            io_.err(f"{name}: omitting directory '{source}'\n".encode())
            return False
        files.mkdir(target, parents=True)
        return all(
            _copy(
                shell,
                posixpath.join(source, child),
                posixpath.join(target, child),
                name=name,
                recursive=True,
                io_=io_,
            )
            for child in files.listing(source)
        )
    data = files.read(source)
    if data is None:
        io_.err(f"{name}: can't stat '{source}': No such file or directory\n".encode())
        return False
    problem = files.write(target, data)
    if problem:
        io_.err(f"{name}: can't create '{target}': {problem}\n".encode())
        return False
    return True


def cp_mv(shell: Shell, argv: list[str], io_: Io) -> int:
    """``cp [-r] SRC… DEST`` and ``mv SRC… DEST``: into DEST when it is a directory."""
    name = argv[0].rsplit("/", 1)[-1]
    paths = operands(argv)
    if len(paths) < 2:
        io_.err(f"{name}: missing file operand\n".encode() if paths else b"")
        io_.err(f"BusyBox v1.36.1 multi-call binary.\n\nUsage: {name} [-rf] SOURCE DEST\n".encode())
        return 1
    *sources, destination = paths
    into = shell.files.is_dir(shell._path(destination))
    if len(sources) > 1 and not into:
        io_.err(f"{name}: '{destination}' is not a directory\n".encode())
        return 1
    recursive = name == "mv" or any(f in flags(argv) for f in "rRa")
    status = 0
    for source in sources:
        full = shell._path(source)
        target = shell._path(destination)
        if into:
            target = posixpath.join(target, posixpath.basename(full.rstrip("/")))
        if not shell.files.exists(full):
            verb = "can't rename" if name == "mv" else "can't stat"
            io_.err(f"{name}: {verb} '{source}': No such file or directory\n".encode())
            status = 1
            continue
        if not _copy(shell, full, target, name=name, recursive=recursive, io_=io_):
            status = 1
            continue
        if name == "mv" and not (shell.files.remove(full) or shell.files.rmdir(full)):
            io_.err(f"mv: can't remove '{source}': Read-only file system\n".encode())
            status = 1
    return status


TOOLS: dict[str, Tool] = {
    "ls": ls,
    "mkdir": mkdir,
    "touch": touch,
    "rm": rm,
    "cp": cp_mv,
    "mv": cp_mv,
}
