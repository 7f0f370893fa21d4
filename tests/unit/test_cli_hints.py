"""Every hint the terminal prints names real ids and real commands (issue 18 §6): with or
without a subject and details, no placeholder (``ID``, ``DIR``, ``<id>``) and no bare ``policy
explain`` that needs arguments it does not give."""

from __future__ import annotations

import re

import pytest

from cli import text
from store.errors import Remedy, StratusError

PLACEHOLDER = re.compile(r"\b(ID|DIR|PATH|NAME|NAMESPACE)\b|<[a-z-]+>")


def errors() -> list[StratusError]:
    made = []
    for remedy in Remedy:
        for code in ["error", *text.CODE_WORDS]:
            for subject, details in (("", {}), ("prop-1a2b", {"open": "prop-9z"})):
                error = StratusError("facts", subject=subject, remedy=remedy, details=details)
                error.code = code  # as each subclass sets it
                made.append(error)
    return made


@pytest.mark.parametrize("error", errors(), ids=lambda e: f"{e.code}-{e.remedy}-{e.subject}")
def test_no_hint_holds_a_placeholder(error: StratusError) -> None:
    said = text.hint(error)
    assert not PLACEHOLDER.search(said), said
    assert "`stratus policy explain`" not in said, said


def test_a_denial_names_the_explain_command_for_its_own_request() -> None:
    denied = StratusError(
        "denied: rule freeze",
        subject="prop-1a2b",
        remedy=Remedy.FIX_POLICY,
        details={"action": "scale", "namespace": "hotel", "resource": "deployment/geo"},
    )
    assert text.hint(denied) == (
        "`stratus policy explain --action scale -n hotel --resource deployment/geo` shows "
        "every rule that applies"
    )
