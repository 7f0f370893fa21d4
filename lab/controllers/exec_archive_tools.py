"""The archive applets: ``tar`` (what ``kubectl cp`` runs: ``tar cf - PATH`` out of the
container, ``tar xf - -C DIR`` into it), ``gzip``/``gunzip``/``zcat`` and ``base64``."""

from __future__ import annotations

import base64
import gzip as gzip_module
import io
import posixpath
import tarfile
from collections.abc import Callable

from lab.controllers.exec_files import ContainerFiles
from lab.controllers.exec_inputs import flags, read_inputs
from lab.controllers.exec_shell import Io, Shell

Tool = Callable[[Shell, list[str], Io], int]


def gzip_bytes(data: bytes) -> bytes:
    return gzip_module.compress(data, mtime=0)


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


def gzip(shell: Shell, argv: list[str], io_: Io) -> int:
    data, status = read_inputs(shell, argv, io_, "gzip")
    if "d" in flags(argv) or argv[0].endswith(("gunzip", "zcat")):
        try:
            io_.out(gzip_module.decompress(data))
        except (OSError, EOFError):
            io_.err(b"gzip: invalid magic\n")
            return 1
        return status
    io_.out(gzip_bytes(data))
    return status


def base64_tool(shell: Shell, argv: list[str], io_: Io) -> int:
    data, status = read_inputs(shell, argv, io_, "base64")
    if "d" in flags(argv):
        io_.out(base64.b64decode(data))
    else:
        io_.out(b64(data) + b"\n")
    return status


def tar(shell: Shell, argv: list[str], io_: Io) -> int:
    """``tar cf - PATH`` and ``tar xf - -C DIR``: what ``kubectl cp`` runs."""
    args = argv[1:]
    mode = args[0].lstrip("-") if args else ""
    rest = args[1:]
    directory = shell.cwd
    if "-C" in rest and rest.index("-C") + 1 < len(rest):
        at = rest.index("-C")
        directory = shell._path(rest[at + 1])
        del rest[at : at + 2]
    paths = [a for a in rest if a != "-" and not a.startswith("-")]
    if "c" in mode:
        missing = [p for p in paths if not shell.files.exists(shell._path(p))]
        for path in missing:
            io_.err(f"tar: {path}: No such file or directory\n".encode())
        io_.out(tar_create(shell.files, [p for p in paths if p not in missing], shell.cwd))
        return 1 if missing else 0
    if "x" in mode:
        problem = tar_extract(shell.files, io_.stdin.read_all(), directory)
        if problem:
            io_.err(f"{problem}\n".encode())
            return 1
        return 0
    io_.err(b"tar: need to specify one of -c, -t, -x\n")
    return 1


TOOLS: dict[str, Tool] = {
    "gzip": gzip,
    "gunzip": gzip,
    "zcat": gzip,
    "base64": base64_tool,
    "tar": tar,
}
