"""A small ``awk``: what one-liners in runbooks use, as busybox awk runs them.

``awk [-F SEP] [-v NAME=VALUE] 'PROGRAM' [FILE…]`` where the program is rules of ``BEGIN``,
``END``, ``/regex/``, ``!/regex/``, an expression (``NR==2``, ``$3 > 100``, ``$1 ~ /^a/``,
``&&``, ``||``) or nothing, each with an action of ``print`` (with ``,`` for OFS and
juxtaposition for concatenation), ``printf``, assignments (``=``, ``+=``, ``-=``, ``++``),
``next`` and ``{ … }`` blocks; fields ``$0``, ``$N``, ``$NF``, ``$(expr)``; ``NR``, ``NF``,
``FS``, ``OFS``; ``length``, ``toupper``, ``tolower``, ``substr``. Anything else is busybox's
``awk: cmd. line:1: Unexpected token`` (exit 2).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from lab.controllers.exec_inputs import read_file, split_option
from lab.controllers.exec_shell import Io, Shell

_TOKEN = re.compile(
    r"\s*(?:(?P<num>\d+(?:\.\d+)?)|(?P<str>\"(?:[^\"\\]|\\.)*\")|(?P<name>[A-Za-z_]\w*)"
    r"|(?P<op>\+\+|--|\+=|-=|\*=|/=|==|!=|<=|>=|&&|\|\||!~|[-+*/%<>=!~(),;{}$\n]))"
)
_SPACE = re.compile(r"[ \t]*")
Value = str | float
Expr = Callable[["_State"], Value]


class AwkError(Exception):
    pass


class _Next(Exception):
    pass


class _State:
    def __init__(self, variables: dict[str, Value]) -> None:
        self.vars: dict[str, Value] = {"FS": " ", "OFS": " ", "NR": 0.0, **variables}
        self.fields: list[str] = [""]
        self.out: list[str] = []

    def set_record(self, line: str) -> None:
        separator = str(self.vars["FS"])
        parts = line.split() if separator == " " else re.split(separator, line)
        self.fields = [line, *parts] if line or separator != " " else [line]
        self.vars["NF"] = float(len(self.fields) - 1)

    def field(self, index: int) -> str:
        return self.fields[index] if 0 <= index < len(self.fields) else ""


def _number(value: Value) -> float:
    if isinstance(value, float):
        return value
    match = re.match(r"\s*[-+]?\d+(?:\.\d+)?", value)
    return float(match.group(0)) if match else 0.0


def _text(value: Value) -> str:
    if isinstance(value, float):
        return str(int(value)) if value == int(value) else f"{value:.6g}"
    return value


def _numeric_string(value: Value) -> bool:
    return isinstance(value, float) or bool(re.fullmatch(r"\s*[-+]?\d+(?:\.\d+)?\s*", value))


class _Parser:
    def __init__(self, program: str) -> None:
        self.tokens: list[tuple[str, str]] = []
        i = 0
        while i < len(program):
            i = _SPACE.match(program, i).end()  # type: ignore[union-attr]
            if i >= len(program):
                break
            last = self.tokens[-1] if self.tokens else ("op", "")
            if program[i] == "/" and last[0] == "op" and last[1] != ")":
                close = i + 1  # a regex literal, where a value cannot be: to the next /
                while close < len(program) and program[close] != "/":
                    close += 2 if program[close] == "\\" else 1
                self.tokens.append(("re", program[i + 1 : close]))
                i = close + 1
                continue
            match = _TOKEN.match(program, i)
            if match is None or match.end() == i:
                raise AwkError("Unexpected token")
            kind = match.lastgroup or ""
            self.tokens.append((kind, match.group(kind)))
            i = match.end()
        self.pos = 0

    def peek(self, value: str | None = None) -> bool:
        if self.pos >= len(self.tokens):
            return False
        return value is None or self.tokens[self.pos][1] == value

    def take(self, value: str | None = None) -> tuple[str, str]:
        if not self.peek(value):
            raise AwkError("Unexpected token")
        token = self.tokens[self.pos]
        self.pos += 1
        return token

    def skip_newlines(self) -> None:
        while self.peek("\n") or self.peek(";"):
            self.pos += 1

    # ------------------------------------------------------------ rules and actions

    def rules(self) -> list[tuple[str, Expr | None, list[Callable[[_State], None]]]]:
        rules: list[tuple[str, Expr | None, list[Callable[[_State], None]]]] = []
        self.skip_newlines()
        while self.pos < len(self.tokens):
            when, pattern = "main", None
            if self.peek("BEGIN") or self.peek("END"):
                when = self.take()[1]
            elif not self.peek("{"):
                pattern = self.expression()
            action = self.block() if self.peek("{") else [lambda s: s.out.append(s.field(0) + "\n")]
            rules.append((when, pattern, action))
            self.skip_newlines()
        return rules

    def block(self) -> list[Callable[[_State], None]]:
        self.take("{")
        statements: list[Callable[[_State], None]] = []
        self.skip_newlines()
        while not self.peek("}"):
            statements.append(self.statement())
            self.skip_newlines()
        self.take("}")
        return statements

    def statement(self) -> Callable[[_State], None]:
        if self.peek("{"):
            inner = self.block()

            def run_block(state: _State) -> None:
                for statement in inner:
                    statement(state)

            return run_block
        if self.peek("next"):
            self.take()

            def skip(_s: _State) -> None:
                raise _Next

            return skip
        if self.peek("print") or self.peek("printf"):
            formatted = self.take()[1] == "printf"
            items: list[Expr] = []
            while self.pos < len(self.tokens) and not (
                self.peek(";") or self.peek("}") or self.peek("\n")
            ):
                items.append(self.expression())
                if self.peek(","):
                    self.take()

            def show(state: _State) -> None:
                if formatted:
                    state.out.append(_printf(items, state))
                elif items:
                    state.out.append(str(state.vars["OFS"]).join(_text(i(state)) for i in items))
                    state.out.append("\n")
                else:
                    state.out.append(state.field(0) + "\n")

            return show
        target = self.expression()

        def evaluate(state: _State) -> None:
            target(state)

        return evaluate

    # ------------------------------------------------------------ expressions

    def expression(self) -> Expr:
        left = self.logical_and()
        while self.peek("||"):
            self.take()
            left = _combine(left, self.logical_and(), _either)
        return left

    def logical_and(self) -> Expr:
        left = self.comparison()
        while self.peek("&&"):
            self.take()
            left = _combine(left, self.comparison(), _both)
        return left

    def comparison(self) -> Expr:
        left = self.concatenation()
        for op in ("==", "!=", "<=", ">=", "<", ">", "~", "!~"):
            if self.peek(op):
                self.take()
                if op in ("~", "!~"):
                    kind, text = self.take()
                    return _matches(left, re.compile(text if kind == "re" else ""), op == "!~")
                return _combine(left, self.concatenation(), _comparing(op))
        return left

    def concatenation(self) -> Expr:
        parts = [self.additive()]
        while self.pos < len(self.tokens) and (
            self.tokens[self.pos][0] in ("num", "str", "name") or self.peek("$") or self.peek("(")
        ):
            if self.tokens[self.pos][0] == "name" and self.tokens[self.pos][1] in ("BEGIN", "END"):
                break
            parts.append(self.additive())
        if len(parts) == 1:
            return parts[0]

        def joined(state: _State) -> Value:
            return "".join(_text(p(state)) for p in parts)

        return joined

    def additive(self) -> Expr:
        left = self.term()
        while self.peek("+") or self.peek("-"):
            op = self.take()[1]
            left = _combine(left, self.term(), _arithmetic(op))
        return left

    def term(self) -> Expr:
        left = self.unary()
        while self.peek("*") or self.peek("/") or self.peek("%"):
            op = self.take()[1]
            left = _combine(left, self.unary(), _arithmetic(op))
        return left

    def unary(self) -> Expr:
        if self.peek("!"):
            self.take()
            inner = self.unary()
            return lambda s: 0.0 if _true(inner(s)) else 1.0
        if self.peek("-"):
            self.take()
            inner = self.unary()
            return lambda s: -_number(inner(s))
        return self.primary()

    def primary(self) -> Expr:
        kind, text = self.take()
        if kind == "num":
            return _constant(float(text))
        if kind == "str":
            value = text[1:-1].encode().decode("unicode_escape")
            return _constant(value)
        if kind == "re":
            pattern = re.compile(text)
            return lambda s: 1.0 if pattern.search(s.field(0)) else 0.0
        if text == "(":
            inner = self.expression()
            self.take(")")
            return inner
        if text == "$":
            index = self.primary()
            return self._assignable(lambda s: s.field(int(_number(index(s)))), index=index)
        if kind == "name":
            if self.peek("(") and text in _FUNCTIONS:
                self.take("(")
                args: list[Expr] = []
                while not self.peek(")"):
                    args.append(self.expression())
                    if self.peek(","):
                        self.take()
                self.take(")")
                function = _FUNCTIONS[text]
                return lambda s: function(s, [a(s) for a in args])
            if text == "length":
                return lambda s: float(len(s.field(0)))
            return self._assignable(lambda s: s.vars.get(text, ""), name=text)
        raise AwkError("Unexpected token")

    def _assignable(self, read: Expr, *, name: str = "", index: Expr | None = None) -> Expr:
        def write(state: _State, value: Value) -> Value:
            if index is None:
                state.vars[name] = value
            else:
                at = int(_number(index(state)))
                while len(state.fields) <= at:
                    state.fields.append("")
                state.fields[at] = _text(value)
            return value

        for op in ("=", "+=", "-=", "*=", "/="):
            if self.peek(op):
                self.take()
                value = self.expression()
                return _assignment(read, write, value, _arithmetic(op[0]) if op != "=" else None)
        for op in ("++", "--"):
            if self.peek(op):
                self.take()
                step = 1.0 if op == "++" else -1.0

                def bump(state: _State, delta: float = step) -> Value:
                    old = _number(read(state))
                    write(state, old + delta)
                    return old

                return bump
        return read


def _assignment(
    read: Expr,
    write: Callable[[_State, Value], Value],
    value: Expr,
    change: Callable[[Value, Value], Value] | None,
) -> Expr:
    def assign(state: _State) -> Value:
        new = value(state)
        return write(state, change(read(state), new) if change else new)

    return assign


def _constant(value: Value) -> Expr:
    def constant(_state: _State) -> Value:
        return value

    return constant


def _combine(left: Expr, right: Expr, how: Callable[[Value, Value], Value]) -> Expr:
    def combined(state: _State) -> Value:
        return how(left(state), right(state))

    return combined


def _either(a: Value, b: Value) -> Value:
    return 1.0 if _true(a) or _true(b) else 0.0


def _both(a: Value, b: Value) -> Value:
    return 1.0 if _true(a) and _true(b) else 0.0


def _arithmetic(op: str) -> Callable[[Value, Value], Value]:
    def compute(a: Value, b: Value) -> Value:
        return _arith(_number(a), _number(b), op)

    return compute


def _comparing(op: str) -> Callable[[Value, Value], Value]:
    def compare(a: Value, b: Value) -> Value:
        return _compare(a, b, op)

    return compare


def _matches(subject: Expr, pattern: re.Pattern[str], negate: bool) -> Expr:
    def match(state: _State) -> Value:
        return 1.0 if bool(pattern.search(_text(subject(state)))) != negate else 0.0

    return match


def _true(value: Value) -> bool:
    return _number(value) != 0 if _numeric_string(value) else value != ""


def _arith(a: float, b: float, op: str) -> float:
    if op in "/%" and b == 0:
        raise AwkError("Division by zero")
    return {"+": a + b, "-": a - b, "*": a * b}.get(op, a / b if op == "/" else a % b if b else 0)


def _compare(a: Value, b: Value, op: str) -> float:
    left: Any = a
    right: Any = b
    if _numeric_string(a) and _numeric_string(b):
        left, right = _number(a), _number(b)
    else:
        left, right = _text(a), _text(b)
    results = {
        "==": left == right,
        "!=": left != right,
        "<": left < right,
        ">": left > right,
        "<=": left <= right,
        ">=": left >= right,
    }
    return 1.0 if results[op] else 0.0


def _printf(items: list[Expr], state: _State) -> str:
    if not items:
        return ""
    values = [i(state) for i in items[1:]]
    fmt = _text(items[0](state))
    queue = iter(values)

    def one(match: re.Match[str]) -> str:
        spec = match.group(0)
        if spec == "%%":
            return "%"
        value = next(queue, "")
        if spec[-1] in "di":
            return (spec[:-1] + "d") % int(_number(value))
        if spec[-1] in "feg":
            return spec % _number(value)
        return (spec[:-1] + "s") % _text(value)

    return re.sub(r"%[-+ 0#]*\d*(?:\.\d+)?[sdifegc%]", one, fmt)


_FUNCTIONS: dict[str, Callable[[_State, list[Value]], Value]] = {
    "length": lambda s, a: float(len(_text(a[0]) if a else s.field(0))),
    "toupper": lambda _s, a: _text(a[0]).upper() if a else "",
    "tolower": lambda _s, a: _text(a[0]).lower() if a else "",
    "substr": lambda _s, a: (
        _text(a[0])[max(int(_number(a[1])) - 1, 0) :][: int(_number(a[2])) if len(a) > 2 else None]
        if len(a) >= 2
        else ""
    ),
    "int": lambda _s, a: float(int(_number(a[0]))) if a else 0.0,
}


def awk(shell: Shell, argv: list[str], io_: Io) -> int:
    separator, args = split_option(argv[1:], "-F")
    variables: dict[str, Value] = {}
    while "-v" in args and args.index("-v") + 1 < len(args):
        at = args.index("-v")
        name, _, value = args[at + 1].partition("=")
        variables[name] = value
        del args[at : at + 2]
    if not args:
        io_.err(b"Usage: awk [OPTIONS] [AWK_PROGRAM] [FILE]...\n")
        return 1
    program, paths = args[0], args[1:]
    if separator is not None:
        variables["FS"] = "\t" if separator == "t" else re.escape(separator)
    try:
        rules = _Parser(program).rules()
    except AwkError as error:
        io_.err(f"awk: cmd. line:1: {error}\n".encode())
        return 2
    state = _State(variables)
    status = 0
    try:
        for when, _, action in rules:
            if when == "BEGIN":
                for statement in action:
                    statement(state)
        for path in paths or ["-"]:
            data = read_file(shell, path, io_, "awk")
            if data is None:
                status = 2
                continue
            for line in data.decode("utf-8", "replace").splitlines():
                state.vars["NR"] = _number(state.vars["NR"]) + 1
                state.set_record(line)
                _record(rules, state)
        for when, _, action in rules:
            if when == "END":
                for statement in action:
                    statement(state)
    except AwkError as error:
        io_.out("".join(state.out).encode())
        io_.err(f"awk: cmd. line:1: {error}\n".encode())
        return 2
    io_.out("".join(state.out).encode())
    return status


def _record(
    rules: list[tuple[str, Expr | None, list[Callable[[_State], None]]]], state: _State
) -> None:
    try:
        for when, pattern, action in rules:
            if when != "main" or (pattern is not None and not _true(pattern(state))):
                continue
            for statement in action:
                statement(state)
    except _Next:
        return
