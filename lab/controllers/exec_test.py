"""``test`` / ``[``, as busybox's: ``!``, ``-a``, ``-o``, parentheses, the file tests over the
container's files, string and integer comparisons; exit 0 (true), 1 (false) or 2 (an error,
with busybox's message on stderr).

POSIX decides by the number of arguments first (one argument: is it non-empty; two: ``!``
or a unary test; three: a binary test, or ``!`` before two), which is what makes ``[ -f ]``
true and ``[ ! = x ]`` a comparison; longer expressions are parsed with ``-o`` binding
loosest, then ``-a``, then ``!``.
"""

from __future__ import annotations

from lab.controllers.exec_shell import Io, Shell

_FILE_TESTS = frozenset(
    {"-e", "-f", "-d", "-s", "-r", "-w", "-x", "-L", "-h", "-p", "-S", "-b", "-c"}
)
_STRING_TESTS = frozenset({"-n", "-z"})
_UNARY = _FILE_TESTS | _STRING_TESTS
_STRINGS = frozenset({"=", "==", "!="})
_INTEGERS = frozenset({"-eq", "-ne", "-lt", "-gt", "-le", "-ge"})
_BINARY = _STRINGS | _INTEGERS


class TestError(Exception):
    """An expression ``test`` cannot evaluate (exit 2)."""


def test(shell: Shell, argv: list[str], io_: Io) -> int:
    args = argv[1:]
    if argv[0] == "[":
        if not args or args[-1] != "]":
            io_.err(b"sh: [: missing ]\n")
            return 2
        args = args[:-1]
    try:
        return 0 if _decide(shell, args) else 1
    except TestError as error:
        io_.err(f"sh: {argv[0]}: {error}\n".encode())
        return 2


def _decide(shell: Shell, args: list[str]) -> bool:
    count = len(args)
    if count == 0:
        return False
    if count == 1:
        return args[0] != ""
    if count == 2:
        if args[0] == "!":
            return args[1] == ""
        if args[0] in _UNARY:
            return _unary(shell, args[0], args[1])
        raise TestError(f"{args[0]}: unknown operand")
    if count == 3:
        if args[1] in _BINARY:
            return _binary(args[0], args[1], args[2])
        if args[1] in ("-a", "-o"):
            left, right = args[0] != "", args[2] != ""
            return (left and right) if args[1] == "-a" else (left or right)
        if args[0] == "!":
            return not _decide(shell, args[1:])
        if args[0] == "(" and args[2] == ")":
            return args[1] != ""
    if count == 4 and args[0] == "!":
        return not _decide(shell, args[1:])
    parser = _Parser(shell, args)
    value = parser.either()
    if parser.at < len(args):
        raise TestError(f"{args[parser.at]}: unexpected operator")
    return value


class _Parser:
    """``-o`` over ``-a`` over ``!`` over primaries, left to right."""

    def __init__(self, shell: Shell, args: list[str]) -> None:
        self.shell, self.args, self.at = shell, args, 0

    def _peek(self, offset: int = 0) -> str | None:
        index = self.at + offset
        return self.args[index] if index < len(self.args) else None

    def either(self) -> bool:
        value = self.both()
        while self._peek() == "-o":
            self.at += 1
            right = self.both()
            value = value or right
        return value

    def both(self) -> bool:
        value = self.negation()
        while self._peek() == "-a":
            self.at += 1
            right = self.negation()
            value = value and right
        return value

    def negation(self) -> bool:
        if self._peek() == "!":
            self.at += 1
            return not self.negation()
        return self.primary()

    def primary(self) -> bool:
        token = self._peek()
        if token is None:
            raise TestError("argument expected")
        if token == "(":
            self.at += 1
            value = self.either()
            if self._peek() != ")":
                raise TestError("closing paren expected")
            self.at += 1
            return value
        following = self._peek(1)
        if following in _BINARY and self._peek(2) is not None:
            self.at += 3
            return _binary(token, following, self.args[self.at - 1])
        if token in _UNARY and following is not None:
            self.at += 2
            return _unary(self.shell, token, following)
        self.at += 1
        return token != ""


def _unary(shell: Shell, op: str, operand: str) -> bool:
    if op == "-n":
        return operand != ""
    if op == "-z":
        return operand == ""
    path = shell._path(operand)
    files = shell.files
    if op == "-d":
        return files.is_dir(path)
    if op in ("-e", "-r", "-w"):
        return files.exists(path)
    if op == "-x":
        return files.is_dir(path) or path.startswith(("/bin/", "/usr/bin/", "/usr/local/bin/"))
    if op in ("-f", "-s"):
        data = None if files.is_dir(path) else files.read(path)
        return data is not None and (op == "-f" or bool(data))
    return False  # no links, pipes, sockets or devices among the modelled files


def _binary(left: str, op: str, right: str) -> bool:
    if op in _STRINGS:
        return (left == right) == (op != "!=")
    a, b = _number(left), _number(right)
    return {
        "-eq": a == b,
        "-ne": a != b,
        "-lt": a < b,
        "-gt": a > b,
        "-le": a <= b,
        "-ge": a >= b,
    }[op]


def _number(text: str) -> int:
    try:
        return int(text.strip())
    except ValueError:
        raise TestError(f"{text}: bad number") from None
