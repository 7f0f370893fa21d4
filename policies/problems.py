"""A policy problem at ``file:line:column``, and the error that carries every problem found.

Kept apart from the loader so that finding the files (``policies.files``) and reading them
(``policies.loader``) report the same way.
"""

from __future__ import annotations

from dataclasses import dataclass

from store.errors import Remedy, StratusError


@dataclass(frozen=True)
class Problem:
    path: str
    line: int
    column: int
    message: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}:{self.column}: {self.message}"


class PolicyError(StratusError):
    """One or more policy files are invalid; ``problems`` lists each with its position.
    Nothing is allowed while the policy does not load (fail closed)."""

    code = "policy"
    default_remedy = Remedy.FIX_POLICY

    def __init__(self, problems: list[Problem]) -> None:
        super().__init__(
            "the policy does not load (nothing is allowed until it does):\n"
            + "\n".join(str(p) for p in problems)
        )
        self.problems = problems
