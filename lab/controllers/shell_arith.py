"""Shell arithmetic, ``$((…))``: integers, the C operators sh knows, variables by name.

sh evaluates ``$((i + 1))`` with ``i`` read from the environment (bare or as ``$i``), an
unset or empty name counting as 0; division truncates towards zero as in C, and a comparison
is 1 or 0. Anything else is the error busybox prints (``sh: arithmetic syntax error``).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Callable

_NAME = re.compile(r"\b[A-Za-z_]\w*\b")


class ShellArithmeticError(Exception):
    """The expression is not arithmetic sh can evaluate (the message is busybox's)."""


def evaluate(expression: str, env: dict[str, str]) -> int:
    def value(match: re.Match[str]) -> str:
        text = env.get(match.group(0), "") or "0"
        return text if re.fullmatch(r"-?\d+", text.strip()) else "0"

    text = _NAME.sub(value, expression)
    text = text.replace("&&", " and ").replace("||", " or ").replace("!=", "\0")
    text = text.replace("!", " not ").replace("\0", "!=")
    try:
        tree = ast.parse(text.strip() or "0", mode="eval")
    except SyntaxError as error:
        raise ShellArithmeticError("arithmetic syntax error") from error
    return _eval(tree.body)


def _eval(node: ast.expr) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return int(node.value)
    if isinstance(node, ast.UnaryOp):
        operand = _eval(node.operand)
        if isinstance(node.op, ast.USub):
            return -operand
        if isinstance(node.op, ast.UAdd):
            return operand
        if isinstance(node.op, ast.Not):
            return int(not operand)
        if isinstance(node.op, ast.Invert):
            return ~operand
    if isinstance(node, ast.BinOp):
        return _binary(node.op, _eval(node.left), _eval(node.right))
    if isinstance(node, ast.BoolOp):
        values = [_eval(v) for v in node.values]
        return int(all(values) if isinstance(node.op, ast.And) else any(values))
    if isinstance(node, ast.Compare) and len(node.ops) == 1:
        left, right = _eval(node.left), _eval(node.comparators[0])
        comparisons = {
            ast.Eq: left == right,
            ast.NotEq: left != right,
            ast.Lt: left < right,
            ast.LtE: left <= right,
            ast.Gt: left > right,
            ast.GtE: left >= right,
        }
        found = comparisons.get(type(node.ops[0]))
        if found is not None:
            return int(found)
    if isinstance(node, ast.IfExp):
        return _eval(node.body) if _eval(node.test) else _eval(node.orelse)
    raise ShellArithmeticError("arithmetic syntax error")


def _binary(op: ast.operator, left: int, right: int) -> int:
    if isinstance(op, (ast.Div, ast.FloorDiv, ast.Mod)):
        if right == 0:
            raise ShellArithmeticError("divide by zero")
        quotient = abs(left) // abs(right) * (1 if (left < 0) == (right < 0) else -1)
        return quotient if not isinstance(op, ast.Mod) else left - right * quotient
    operations: dict[type[ast.operator], Callable[[], int]] = {
        ast.Add: lambda: left + right,
        ast.Sub: lambda: left - right,
        ast.Mult: lambda: left * right,
        ast.Pow: lambda: left**right if 0 <= right < 64 else 0,
        ast.LShift: lambda: left << right if 0 <= right < 64 else 0,
        ast.RShift: lambda: left >> right if right >= 0 else 0,
        ast.BitAnd: lambda: left & right,
        ast.BitOr: lambda: left | right,
        ast.BitXor: lambda: left ^ right,
    }
    found = operations.get(type(op))
    if found is None:
        raise ShellArithmeticError("arithmetic syntax error")
    return found()
