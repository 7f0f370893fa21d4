"""The applets of an image with a shell, as busybox prints them, for ``kubectl exec``.

Each takes the shell (its files, environment and working directory), the argv and the
command's streams, and returns the exit status.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

from lab.controllers import (
    exec_archive_tools,
    exec_awk,
    exec_file_tools,
    exec_net_tools,
    exec_test,
    exec_text_tools,
)
from lab.controllers.exec_inputs import operands, read_inputs
from lab.controllers.exec_shell import Io, Shell

Tool = Callable[[Shell, list[str], Io], int]


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
    if not operands(argv):  # streams what it reads, as it arrives (``kubectl exec -i … cat``)
        while (line := io_.stdin.readline()) is not None:
            io_.out(line)
        return 0
    data, status = read_inputs(shell, argv, io_, "cat")
    io_.out(data)
    return status


def env(shell: Shell, argv: list[str], io_: Io) -> int:
    names = operands(argv)
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
    numbers = [int(a) for a in operands(argv) if a.lstrip("-").isdigit()]
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
    **exec_text_tools.TOOLS,
    **exec_file_tools.TOOLS,
    **exec_archive_tools.TOOLS,
    "awk": exec_awk.awk,
    "echo": echo,
    "printf": printf,
    "cat": cat,
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
    "test": exec_test.test,
    "[": exec_test.test,
    "ps": ps,
    "df": df,
}
