"""Word expansion in the lab's shell: parameters (``$X``, ``${X:-word}``, ``$?``, ``$1``,
``$#``), arithmetic (``$((…))``), command substitution (``$(…)``, run by the shell) and
field splitting of unquoted text. Split from ``exec_shell``, whose :class:`Shell` it reads
through :class:`Expanding`."""

from __future__ import annotations

import re
from typing import Protocol

from lab.controllers import shell_arith
from lab.controllers.exec_syntax import Word

_VARIABLE = re.compile(r"\$(?:\{(#?)(\w+)(?:(:?[-=+?])([^}]*))?\}|(\d|\w+|\?|#|\$|@|\*))")


class ShellError(Exception):
    """An expansion sh refuses (``$((1/0))``, ``${X:?}``): it says why and the shell exits."""

    def __init__(self, message: str, code: int) -> None:
        super().__init__(message)
        self.message = message
        self.code = code


class Expanding(Protocol):
    """What expansion reads and sets on the shell (``exec_shell.Shell``)."""

    env: dict[str, str]
    positional: list[str]
    status: int

    def capture(self, script: str) -> str: ...


def expand(shell: Expanding, word: Word) -> list[str]:
    """A word's fields: quoted parts expand whole, unquoted ones split at blanks."""
    fields: list[str] = [""]
    quoted = False
    for kind, text in word:
        if kind == "lit":
            fields[-1] += text
            quoted = True
        elif kind == "dq":
            fields[-1] += _substitute(shell, text)
            quoted = True
        else:
            pieces = re.split(r"[ \t\n]+", _substitute(shell, text))
            fields[-1] += pieces[0]
            fields.extend(pieces[1:])
    return [f for f in fields if f or quoted]


def _substitute(shell: Expanding, text: str) -> str:
    result: list[str] = []
    i = 0
    while i < len(text):
        if text.startswith("\\$", i):
            result.append("$")
            i += 2
        elif text.startswith("$((", i) and _arithmetic_end(text, i) > 0:
            end = _arithmetic_end(text, i)
            expression = _substitute(shell, text[i + 3 : end])
            try:
                result.append(str(shell_arith.evaluate(expression, shell.env)))
            except shell_arith.ShellArithmeticError as error:
                raise ShellError(f"sh: {error}", 2) from None
            i = end + 2
        elif text.startswith("$(", i):
            depth, j = 0, i + 1
            while j < len(text):
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                if depth == 0:
                    break
                j += 1
            result.append(shell.capture(text[i + 2 : j]))
            i = j + 1
        else:
            match = _VARIABLE.match(text, i)
            if match:
                result.append(_parameter(shell, match))
                i = match.end()
            else:
                result.append(text[i])
                i += 1
    return "".join(result)


def _arithmetic_end(text: str, start: int) -> int:
    """Where the ``))`` closing ``$((`` at ``start`` is (0: it is ``$( (…) )``)."""
    depth, j = 0, start + 1
    while j < len(text):
        depth += {"(": 1, ")": -1}.get(text[j], 0)
        if depth == 0:
            return j - 1 if text[j - 1] == ")" and j - 1 > start + 2 else 0
        j += 1
    return 0


def _parameter(shell: Expanding, match: re.Match[str]) -> str:
    """``$X``, ``${X}``, ``${#X}``, ``${X:-word}`` and the other ``${X op word}``."""
    length, name, op, word = match.group(1), match.group(2), match.group(3), match.group(4)
    name = name or match.group(5)
    if name == "?":
        return str(shell.status)
    if name == "#":
        return str(len(shell.positional) - 1)
    if name in ("@", "*"):
        return " ".join(shell.positional[1:])
    if name == "$":
        return "1"
    if name.isdigit():
        index = int(name)
        return shell.positional[index] if index < len(shell.positional) else ""
    found = shell.env.get(name)
    if length:
        return str(len(found or ""))
    if not op:
        return found or ""
    unset = found is None or (op.startswith(":") and found == "")
    word = _substitute(shell, word or "")
    if op.endswith("-"):
        return word if unset else found or ""
    if op.endswith("="):
        if unset:
            shell.env[name] = word
        return shell.env.get(name, "")
    if op.endswith("+"):
        return "" if unset else word
    if unset:  # ``${X:?message}``
        raise ShellError(f"sh: {name}: {word or 'parameter not set'}", 1)
    return found or ""
