"""The applets of an image with a shell, as busybox prints them, for ``kubectl exec``.

Each takes the shell (its files, environment and working directory), the argv and the
command's streams, and returns the exit status.
"""

from __future__ import annotations

import gzip as gzip_module
import posixpath
import re
import time
from collections.abc import Callable

from lab.controllers import exec_net_tools
from lab.controllers.exec_shell import Io, Shell, b64, gzip_bytes, tar_create, tar_extract

Tool = Callable[[Shell, list[str], Io], int]


def _operands(argv: list[str]) -> list[str]:
    return [a for a in argv[1:] if not (a.startswith("-") and len(a) > 1)]


def _flags(argv: list[str]) -> str:
    return "".join(a[1:] for a in argv[1:] if a.startswith("-") and not a.startswith("--"))


def _read_inputs(shell: Shell, argv: list[str], io_: Io, name: str) -> tuple[bytes, int]:
    paths = _operands(argv)
    if not paths or paths == ["-"]:
        return io_.stdin.read_all(), 0
    data, status = bytearray(), 0
    for path in paths:
        found = shell.files.read(shell._path(path))
        if found is None:
            reason = (
                "Is a directory"
                if shell.files.is_dir(shell._path(path))
                else ("No such file or directory")
            )
            io_.err(f"{name}: can't open '{path}': {reason}\n".encode())
            status = 1
            continue
        data.extend(found)
    return bytes(data), status


def echo(shell: Shell, argv: list[str], io_: Io) -> int:
    args = argv[1:]
    newline = True
    while args and args[0] in ("-n", "-e", "-ne", "-en"):
        newline = newline and "n" not in args[0]
        args = args[1:]
    text = " ".join(args)
    if "-e" in argv[1:3] or "-ne" in argv[1:3] or "-en" in argv[1:3]:
        text = text.encode().decode("unicode_escape")
    io_.out((text + ("\n" if newline else "")).encode())
    return 0


def printf(shell: Shell, argv: list[str], io_: Io) -> int:
    if len(argv) < 2:
        io_.err(b"printf: usage: printf FORMAT [ARGUMENT]...\n")
        return 1
    text, values = argv[1], iter(argv[2:])
    text = re.sub(r"%[sdi]", lambda _m: next(values, ""), text)
    io_.out(text.encode().decode("unicode_escape").encode())
    return 0


def cat(shell: Shell, argv: list[str], io_: Io) -> int:
    if not _operands(argv):  # streams what it reads, as it arrives (``kubectl exec -i … cat``)
        while (line := io_.stdin.readline()) is not None:
            io_.out(line)
        return 0
    data, status = _read_inputs(shell, argv, io_, "cat")
    io_.out(data)
    return status


def ls(shell: Shell, argv: list[str], io_: Io) -> int:
    paths = _operands(argv) or ["."]
    flags = _flags(argv)
    status = 0
    for path in paths:
        full = shell._path(path)
        if shell.files.read(full) is not None:
            io_.out(f"{path}\n".encode())
            continue
        if not shell.files.is_dir(full):
            io_.err(f"ls: {path}: No such file or directory\n".encode())
            status = 1
            continue
        names = shell.files.listing(full)
        if "a" in flags:
            names = [".", "..", *names]
        if len(paths) > 1:
            io_.out(f"{path}:\n".encode())
        for name in names:
            if "l" in flags:
                child = posixpath.join(full, name)
                size = len(shell.files.read(child) or b"")
                kind = "d" if shell.files.is_dir(child) else "-"
                line = f"{kind}rw-r--r--    1 root     root    {size:>8} Jan  1 00:00 {name}\n"
                io_.out(line.encode())
            else:
                io_.out(f"{name}\n".encode())
    return status


def env(shell: Shell, argv: list[str], io_: Io) -> int:
    names = _operands(argv)
    if argv[0].endswith("printenv") and names:
        found = [shell.env[n] for n in names if n in shell.env]
        io_.out("".join(f"{v}\n" for v in found).encode())
        return 0 if len(found) == len(names) else 1
    io_.out("".join(f"{k}={v}\n" for k, v in shell.env.items()).encode())
    return 0


def sleep(shell: Shell, argv: list[str], io_: Io) -> int:
    total = 0.0
    for arg in argv[1:]:
        if arg in ("infinity", "inf"):
            total = float("inf")
            continue
        match = re.match(r"^(\d+(?:\.\d+)?)([smhd]?)$", arg)
        if match is None:
            io_.err(f"sleep: invalid number '{arg}'\n".encode())
            return 1
        total += (
            float(match.group(1)) * {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}[match.group(2)]
        )
    shell.stopped.wait(min(total, 86400.0))
    return 0


def seq(shell: Shell, argv: list[str], io_: Io) -> int:
    numbers = [int(a) for a in _operands(argv) if a.lstrip("-").isdigit()]
    first, step, last = (
        (1, 1, numbers[0])
        if len(numbers) == 1
        else (numbers[0], 1, numbers[1])
        if len(numbers) == 2
        else (numbers[0], numbers[1], numbers[2])
        if len(numbers) >= 3
        else (1, 1, 0)
    )
    io_.out("".join(f"{n}\n" for n in range(first, last + 1, step or 1)).encode())
    return 0


def _fixed(text: str) -> Tool:
    def tool(shell: Shell, argv: list[str], io_: Io) -> int:
        io_.out(text.format(**shell.env).encode())
        return 0

    return tool


def pwd(shell: Shell, argv: list[str], io_: Io) -> int:
    io_.out(f"{shell.cwd}\n".encode())
    return 0


def uptime(shell: Shell, argv: list[str], io_: Io) -> int:
    stamp = time.strftime("%H:%M:%S", time.gmtime())
    io_.out(f" {stamp} up 1 day,  2:03,  0 users,  load average: 0.10, 0.08, 0.05\n".encode())
    return 0


def date(shell: Shell, argv: list[str], io_: Io) -> int:
    io_.out(time.strftime("%a %b %e %H:%M:%S UTC %Y\n", time.gmtime()).encode())
    return 0


def test(shell: Shell, argv: list[str], io_: Io) -> int:
    args = [a for a in argv[1:] if not (argv[0] == "[" and a == "]")]
    if len(args) == 2 and args[0] in ("-f", "-e", "-s", "-d", "-r"):
        path = shell._path(args[1])
        if args[0] == "-d":
            return 0 if shell.files.is_dir(path) else 1
        if args[0] == "-e":
            return 0 if shell.files.exists(path) else 1
        data = shell.files.read(path)
        return 0 if data is not None and (args[0] != "-s" or data) else 1
    if len(args) == 2 and args[0] in ("-z", "-n"):
        return 0 if (not args[1]) == (args[0] == "-z") else 1
    if len(args) == 3 and args[1] in ("=", "==", "!="):
        return 0 if (args[0] == args[2]) == (args[1] != "!=") else 1
    if len(args) == 3 and args[1] in ("-eq", "-ne", "-lt", "-gt", "-le", "-ge"):
        a, b = int(args[0] or 0), int(args[2] or 0)
        ops = {"-eq": a == b, "-ne": a != b, "-lt": a < b, "-gt": a > b, "-le": a <= b}
        return 0 if ops.get(args[1], a >= b) else 1
    return 0 if len(args) == 1 and args[0] else 1 if len(args) <= 1 else 0


def mkdir(shell: Shell, argv: list[str], io_: Io) -> int:
    status = 0
    for path in _operands(argv):
        problem = shell.files.mkdir(shell._path(path), parents="p" in _flags(argv))
        if problem and not ("p" in _flags(argv) and shell.files.is_dir(shell._path(path))):
            io_.err(f"mkdir: can't create directory '{path}': {problem}\n".encode())
            status = 1
    return status


def touch(shell: Shell, argv: list[str], io_: Io) -> int:
    status = 0
    for path in _operands(argv):
        full = shell._path(path)
        problem = shell.files.write(full, b"", append=True)
        if problem:
            io_.err(f"touch: {path}: {problem}\n".encode())
            status = 1
    return status


def rm(shell: Shell, argv: list[str], io_: Io) -> int:
    status = 0
    for path in _operands(argv):
        if not shell.files.remove(shell._path(path)) and "f" not in _flags(argv):
            io_.err(f"rm: can't remove '{path}': No such file or directory\n".encode())
            status = 1
    return status


def wc(shell: Shell, argv: list[str], io_: Io) -> int:
    data, status = _read_inputs(shell, argv, io_, "wc")
    counts = {"l": data.count(b"\n"), "w": len(data.split()), "c": len(data)}
    wanted = [f for f in _flags(argv) if f in counts] or ["l", "w", "c"]
    io_.out((" ".join(f"{counts[f]:>7}" for f in wanted).strip() + "\n").encode())
    return status


def head_tail(shell: Shell, argv: list[str], io_: Io) -> int:
    count = 10
    rest = list(argv[1:])
    if "-n" in rest and rest.index("-n") + 1 < len(rest):
        at = rest.index("-n")
        count = int(rest[at + 1])
        del rest[at : at + 2]
    for arg in list(rest):
        if re.match(r"^-\d+$", arg):
            count = int(arg[1:])
            rest.remove(arg)
    data, status = _read_inputs(shell, [argv[0], *rest], io_, argv[0])
    lines = data.splitlines(keepends=True)
    io_.out(
        b"".join(lines[:count] if argv[0].endswith("head") else lines[-count:] if count else [])
    )
    return status


def grep(shell: Shell, argv: list[str], io_: Io) -> int:
    operands = _operands(argv)
    if not operands:
        io_.err(b"Usage: grep [-invc] PATTERN [FILE]...\n")
        return 2
    flags = _flags(argv)
    pattern = re.compile(operands[0], re.I if "i" in flags else 0)
    data, status = _read_inputs(shell, [argv[0], *operands[1:]], io_, "grep")
    matched = [
        line
        for line in data.decode("utf-8", "replace").splitlines()
        if bool(pattern.search(line)) != ("v" in flags)
    ]
    if "c" in flags:
        io_.out(f"{len(matched)}\n".encode())
    elif "q" not in flags:
        io_.out("".join(f"{line}\n" for line in matched).encode())
    return status or (0 if matched else 1)


def gzip(shell: Shell, argv: list[str], io_: Io) -> int:
    data, status = _read_inputs(shell, argv, io_, "gzip")
    if "d" in _flags(argv) or argv[0].endswith(("gunzip", "zcat")):
        try:
            io_.out(gzip_module.decompress(data))
        except (OSError, EOFError):
            io_.err(b"gzip: invalid magic\n")
            return 1
        return status
    io_.out(gzip_bytes(data))
    return status


def base64_tool(shell: Shell, argv: list[str], io_: Io) -> int:
    import base64 as codec

    data, status = _read_inputs(shell, argv, io_, "base64")
    if "d" in _flags(argv):
        io_.out(codec.b64decode(data))
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


def ps(shell: Shell, argv: list[str], io_: Io) -> int:
    io_.out(
        b"PID   USER     TIME  COMMAND\n    1 root      0:00 "
        + shell.env.get("_LAB_MAIN", "sh").encode()
        + b"\n"
    )
    return 0


def df(shell: Shell, argv: list[str], io_: Io) -> int:
    io_.out(
        b"Filesystem           1K-blocks      Used Available Use% Mounted on\n"
        b"overlay               61255492  12345678  45771382  21% /\n"
        b"tmpfs                    65536         0     65536   0% /dev\n"
    )
    return 0


TOOLS: dict[str, Tool] = {
    **exec_net_tools.TOOLS,
    "echo": echo,
    "printf": printf,
    "cat": cat,
    "ls": ls,
    "env": env,
    "printenv": env,
    "sleep": sleep,
    "seq": seq,
    "true": lambda _s, _a, _i: 0,
    ":": lambda _s, _a, _i: 0,
    "false": lambda _s, _a, _i: 1,
    "hostname": _fixed("{HOSTNAME}\n"),
    "whoami": _fixed("root\n"),
    "id": _fixed("uid=0(root) gid=0(root) groups=0(root)\n"),
    "uname": _fixed("Linux\n"),
    "pwd": pwd,
    "uptime": uptime,
    "date": date,
    "test": test,
    "[": test,
    "mkdir": mkdir,
    "touch": touch,
    "rm": rm,
    "wc": wc,
    "head": head_tail,
    "tail": head_tail,
    "grep": grep,
    "gzip": gzip,
    "gunzip": gzip,
    "zcat": gzip,
    "base64": base64_tool,
    "tar": tar,
    "ps": ps,
    "df": df,
}
