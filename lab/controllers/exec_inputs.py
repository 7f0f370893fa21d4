"""What every applet reads the same way: its operands, its single-letter flags, and its input
(the named files, or stdin when there are none or the name is ``-``), with busybox's message for
a file it cannot open."""

from __future__ import annotations

from lab.controllers.exec_shell import Io, Shell


def operands(argv: list[str]) -> list[str]:
    return [a for a in argv[1:] if not (a.startswith("-") and len(a) > 1)]


def flags(argv: list[str]) -> str:
    return "".join(a[1:] for a in argv[1:] if a.startswith("-") and not a.startswith("--"))


def read_file(shell: Shell, path: str, io_: Io, name: str) -> bytes | None:
    """One input: stdin for ``-``, else the file, or None after busybox's complaint."""
    if path == "-":
        return io_.stdin.read_all()
    found = shell.files.read(shell._path(path))
    if found is None:
        directory = shell.files.is_dir(shell._path(path))
        reason = "Is a directory" if directory else "No such file or directory"
        io_.err(f"{name}: can't open '{path}': {reason}\n".encode())
    return found


def read_inputs(shell: Shell, argv: list[str], io_: Io, name: str) -> tuple[bytes, int]:
    """All the inputs, joined (stdin when there are no operands), and 1 if one was missing."""
    paths = operands(argv)
    if not paths:
        return io_.stdin.read_all(), 0
    data, status = bytearray(), 0
    for path in paths:
        found = read_file(shell, path, io_, name)
        if found is None:
            status = 1
            continue
        data.extend(found)
    return bytes(data), status


def split_option(args: list[str], option: str) -> tuple[str | None, list[str]]:
    """``-d X``, ``-dX``: the value of a one-letter option, and the other arguments."""
    rest: list[str] = []
    value: str | None = None
    index = 0
    while index < len(args):
        arg = args[index]
        if arg == option and index + 1 < len(args):
            value = args[index + 1]
            index += 2
            continue
        if arg.startswith(option) and len(arg) > len(option) and not arg.startswith("--"):
            value = arg[len(option) :]
        else:
            rest.append(arg)
        index += 1
    return value, rest
