"""The shell grammar of the lab's containers: what ``sh -c`` reads, for ``kubectl exec`` and for
a container's own command alike, keeping what a command prints and where it goes.

Words keep their quoting, so expansion can tell ``"$X"`` from ``$X`` and ``'$X'``;
redirections (``>``, ``>>``, ``<``, ``2>&1``, ``>&2``) stay on their command. The tree:
``("list", [(connector, node)…])``, ``("pipe", [node…])``, ``("cmd", (words, redirections))``,
``("for", (name, words, body))``, ``("if", [(condition | None, body)…])``,
``("while", (until, condition, body))``, ``("group", body)``, ``("bg", node)`` (``node &``).
"""

from __future__ import annotations

from typing import Any

# A word is a list of parts: ("lit", text) quoted with '…' or \\, ("dq", text) inside "…",
# ("bare", text) unquoted. Only bare parts split into several words.
Word = list[tuple[str, str]]
Node = tuple[str, Any]
Redirection = tuple[int, str, Word | int]  # (fd, ">" | ">>" | "<" | "dup", target)

_OPERATORS = ("&&", "||", ";;", ";", "&", "|", "\n", "(", ")")
_RESERVED_END = frozenset({"do", "done", "then", "else", "elif", "fi", "}", ")"})


class ShellSyntaxError(Exception):
    pass


def tokens(script: str) -> list[Any]:
    """Operators as ``str``, words as :data:`Word`, redirections as :data:`Redirection`."""
    out: list[Any] = []
    i, n = 0, len(script)
    while i < n:
        c = script[i]
        if c in " \t":
            i += 1
            continue
        if c == "#" and (i == 0 or script[i - 1] in " \t\n;"):
            while i < n and script[i] != "\n":
                i += 1
            continue
        redirect = _redirection(script, i)
        if redirect is not None:
            fd, op, target, i = redirect
            if target is None:
                while i < n and script[i] in " \t":
                    i += 1
                word, i = _word(script, i)
                if not word:
                    raise ShellSyntaxError("syntax error: unexpected newline")
                out.append((fd, op, word))
            else:
                out.append((fd, "dup", target))
            continue
        operator = next((op for op in _OPERATORS if script.startswith(op, i)), None)
        if operator is not None:
            out.append(operator)
            i += len(operator)
            continue
        word, i = _word(script, i)
        out.append(word)
    return out


def _redirection(script: str, i: int) -> tuple[int, str, int | None, int] | None:
    j = i
    fd = None
    if script[j].isdigit() and j + 1 < len(script) and script[j + 1] in "<>":
        fd = int(script[j])
        j += 1
    if j >= len(script) or script[j] not in "<>":
        return None
    if script.startswith(">>", j):
        op, j = ">>", j + 2
    elif script[j] == ">":
        op, j = ">", j + 1
    else:
        op, j = "<", j + 1
    default = 0 if op == "<" else 1
    if script.startswith("&", j) and j + 1 < len(script) and script[j + 1].isdigit():
        return (fd if fd is not None else default), op, int(script[j + 1]), j + 2
    return (fd if fd is not None else default), op, None, j


def _word(script: str, i: int) -> tuple[Word, int]:
    parts: Word = []
    bare: list[str] = []
    n = len(script)

    def flush() -> None:
        if bare:
            parts.append(("bare", "".join(bare)))
            bare.clear()

    while i < n:
        c = script[i]
        if c in " \t\n;&|()<>" and not (c in "()" and bare and bare[-1] == "$"):
            break
        if c == "'":
            end = script.find("'", i + 1)
            if end < 0:
                raise ShellSyntaxError("syntax error: unterminated quoted string")
            flush()
            parts.append(("lit", script[i + 1 : end]))
            i = end + 1
        elif c == '"':
            flush()
            text, i = _double_quoted(script, i + 1)
            parts.append(("dq", text))
        elif c == "\\" and i + 1 < n:
            flush()
            if script[i + 1] != "\n":
                parts.append(("lit", script[i + 1]))
            i += 2
        elif c == "$" and script.startswith("$(", i):
            end = _matching(script, i + 1)
            bare.append(script[i : end + 1])
            i = end + 1
        elif c == "`":
            end = script.find("`", i + 1)
            if end < 0:
                raise ShellSyntaxError("syntax error: unterminated backquote")
            bare.append(f"$({script[i + 1 : end]})")
            i = end + 1
        else:
            bare.append(c)
            i += 1
    flush()
    return parts, i


def _double_quoted(script: str, i: int) -> tuple[str, int]:
    text: list[str] = []
    while i < len(script):
        c = script[i]
        if c == '"':
            return "".join(text), i + 1
        if c == "\\" and i + 1 < len(script) and script[i + 1] in '$`"\\\n':
            text.append("\\" + script[i + 1] if script[i + 1] == "$" else script[i + 1])
            i += 2
            continue
        if script.startswith("$(", i):
            end = _matching(script, i + 1)
            text.append(script[i : end + 1])
            i = end + 1
            continue
        text.append(c)
        i += 1
    raise ShellSyntaxError("syntax error: unterminated quoted string")


def _matching(script: str, open_at: int) -> int:
    depth = 0
    for j in range(open_at, len(script)):
        if script[j] == "(":
            depth += 1
        elif script[j] == ")":
            depth -= 1
            if depth == 0:
                return j
    raise ShellSyntaxError("syntax error: unterminated $(")


def _plain(token: Any) -> str | None:
    """A word that is one unquoted literal (a keyword candidate), else None."""
    if isinstance(token, list) and len(token) == 1 and token[0][0] == "bare":
        return str(token[0][1])
    return None


def parse(script: str) -> Node:
    parser = _Parser(tokens(script))
    node = parser.list_until(frozenset())
    if parser.pos < len(parser.tokens):
        raise ShellSyntaxError(f"syntax error: unexpected {parser.describe()}")
    return node


class _Parser:
    def __init__(self, items: list[Any]) -> None:
        self.tokens = items
        self.pos = 0

    def describe(self) -> str:
        token = self.tokens[self.pos]
        return f'"{token}"' if isinstance(token, str) else f'"{_plain(token) or "word"}"'

    def peek(self) -> Any:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def at_keyword(self, words: frozenset[str]) -> bool:
        word = _plain(self.peek())
        return word is not None and word in words

    def expect(self, keyword: str) -> None:
        self.skip_separators()
        if _plain(self.peek()) != keyword:
            found = self.describe() if self.peek() is not None else "end of file"
            raise ShellSyntaxError(f'syntax error: unexpected {found} (expecting "{keyword}")')
        self.pos += 1

    def skip_separators(self) -> None:
        while self.peek() in (";", "\n"):
            self.pos += 1

    def list_until(self, stop: frozenset[str]) -> Node:
        items: list[tuple[str, Node]] = []
        connector = ";"
        while True:
            self.skip_separators()
            token = self.peek()
            if token is None or token == ")" or self.at_keyword(stop | _RESERVED_END):
                break
            items.append((connector, self.pipeline()))
            token = self.peek()
            if token in ("&&", "||"):
                connector = token
                self.pos += 1
            elif token in (";", "\n", "&"):
                if token == "&":  # ``cmd &``: it runs beside what follows
                    items[-1] = (items[-1][0], ("bg", items[-1][1]))
                connector = ";"
                self.pos += 1
            else:
                break
        return ("list", items)

    def pipeline(self) -> Node:
        negate = False
        if _plain(self.peek()) == "!":
            negate, self.pos = True, self.pos + 1
        stages = [self.command()]
        while self.peek() == "|":
            self.pos += 1
            self.skip_separators()
            stages.append(self.command())
        node: Node = ("pipe", stages) if len(stages) > 1 else stages[0]
        return ("not", node) if negate else node

    def command(self) -> Node:
        word = _plain(self.peek())
        if word == "for":
            self.pos += 1
            name = _plain(self.peek()) or ""
            self.pos += 1
            items: list[Word] = []
            if _plain(self.peek()) == "in":
                self.pos += 1
                while isinstance(self.peek(), list):
                    items.append(self.peek())
                    self.pos += 1
            self.expect("do")
            body = self.list_until(frozenset({"done"}))
            self.expect("done")
            return ("for", (name, items, body))
        if word in ("while", "until"):
            self.pos += 1
            condition = self.list_until(frozenset({"do"}))
            self.expect("do")
            body = self.list_until(frozenset({"done"}))
            self.expect("done")
            return ("while", (word == "until", condition, body))
        if word == "if":
            self.pos += 1
            branches: list[tuple[Node | None, Node]] = []
            condition = self.list_until(frozenset({"then"}))
            self.expect("then")
            branches.append((condition, self.list_until(frozenset({"else", "elif", "fi"}))))
            while _plain(self.peek()) == "elif":
                self.pos += 1
                condition = self.list_until(frozenset({"then"}))
                self.expect("then")
                branches.append((condition, self.list_until(frozenset({"else", "elif", "fi"}))))
            if _plain(self.peek()) == "else":
                self.pos += 1
                branches.append((None, self.list_until(frozenset({"fi"}))))
            self.expect("fi")
            return ("if", branches)
        if word == "{":
            self.pos += 1
            body = self.list_until(frozenset({"}"}))
            self.expect("}")
            return ("group", body)
        if self.peek() == "(":
            self.pos += 1
            body = self.list_until(frozenset())
            if self.peek() != ")":
                raise ShellSyntaxError('syntax error: unexpected end of file (expecting ")")')
            self.pos += 1
            return ("subshell", body)
        words: list[Word] = []
        redirections: list[Redirection] = []
        while True:
            token = self.peek()
            if isinstance(token, list):
                words.append(token)
            elif isinstance(token, tuple):
                redirections.append(token)
            else:
                break
            self.pos += 1
        if not words and not redirections:
            found = self.describe() if self.peek() is not None else "end of file"
            raise ShellSyntaxError(f"syntax error: unexpected {found}")
        return ("cmd", (words, redirections))
