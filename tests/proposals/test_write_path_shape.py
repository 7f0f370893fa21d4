"""The shape of the write path (issue 17): one path, read top to bottom, with no callback from a
lower layer into a higher one and no second path that writes without a proposal. No sockets."""

from __future__ import annotations

import inspect
import typing
from pathlib import Path

import proposals
from proposals.service import ProposalService
from tools.executor import Executor, HeldObject
from undo.stack import UndoStack


def _public_methods(cls: type) -> dict[str, typing.Any]:
    return {
        name: member
        for name, member in inspect.getmembers(cls, inspect.isfunction)
        if not name.startswith("_")
    }


def test_the_executor_takes_no_callbacks_from_its_callers() -> None:
    for cls in (Executor, HeldObject):
        for name, method in _public_methods(cls).items():
            hints = typing.get_type_hints(method)
            for parameter, hint in hints.items():
                if parameter == "return":
                    continue
                text = str(hint)
                assert "Callable" not in text, f"{cls.__name__}.{name}({parameter}: {text})"
            assert not {"guard", "on_applied", "on_resolved"} & set(hints), f"{cls.__name__}.{name}"


def test_there_is_no_second_write_path() -> None:
    assert not hasattr(Executor, "execute") and not hasattr(Executor, "run")
    assert not hasattr(UndoStack, "undo") and not hasattr(UndoStack, "undo_transaction")
    assert not (Path(proposals.__file__).parent / "aio.py").exists()


def test_the_facade_keeps_every_call_the_surfaces_make() -> None:
    assert set(_public_methods(ProposalService)) == {
        "propose",
        "answer",
        "approve_with_plan",
        "undo_conflict",
        "refusal",
        "execute",
        "propose_undo",
        "undo_target",
        "drop_undo_entry",
        "cancel",
        "withdraw",
        "expire",
        "reconcile",
        "settle_earlier_writes",
        "get",
        "pending",
        "by_incident",
        "recent",
        "undo_entries",
        "undo_refusal",
        # An outside agent's (MCP client's) asks: proposals/intake.py (issue 20).
        "propose_for",
        "client_turn",
        "take_turn",
        "give_back",
        "check_for",
        "propose_checked",
        "undo_for",
        "own",
    }
    # Each call is one statement: the use-case lives in its own module.
    for name, method in _public_methods(ProposalService).items():
        body = inspect.getsource(method).split(")", 1)[-1]
        assert body.count("self.deps") == 1, name
