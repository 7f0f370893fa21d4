"""Lower layers say facts, never a surface's words: no string a package below the surfaces
writes (docstrings and comments aside) names a CLI flag or command, a slash command or a
button. The words live in ``cli/text.py`` and ``bot/text/``, keyed on the error's code and
remedy (socket-free: the sources are read, nothing runs)."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from tests.conftest import REPO

LOWER = ("proposals", "policies", "undo", "tools", "store", "agents")
SURFACE_WORDS = re.compile(
    r"--(force|yes|last|list|reason|drop|dry-run|kubeconfig)\b"
    r"|`stratus |/stratus|\bbuttons?\b|cancel it first|\bclick (it|the)\b"
    r"|\bstratus (act|undo|proposals|policy|audit|incidents|investigate|lab|demo)\b",
    re.IGNORECASE,
)


def _docstrings(tree: ast.Module) -> set[int]:
    owners = (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, owners) and node.body and isinstance(node.body[0], ast.Expr):
            found.add(id(node.body[0].value))
    return found


def test_lower_layers_write_no_surface_words() -> None:
    found = []
    for package in LOWER:
        for path in sorted((REPO / package).rglob("*.py")):
            tree = ast.parse(path.read_text(encoding="utf-8"))
            docstrings = _docstrings(tree)
            for node in ast.walk(tree):
                if (
                    isinstance(node, ast.Constant)
                    and isinstance(node.value, str)
                    and id(node) not in docstrings
                    and SURFACE_WORDS.search(node.value)
                ):
                    found.append(f"{Path(path).relative_to(REPO)}:{node.lineno}: {node.value!r}")
    assert found == []
