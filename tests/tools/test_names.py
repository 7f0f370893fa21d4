"""Names are checked whole: ``re.match`` with ``$`` lets a trailing newline through (``$``
also matches before a final ``\\n``), so a name like ``"geo\\n"`` would reach a URL, a lock
key or an audit row. Every anchored check uses ``fullmatch``."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from tools import errors
from tools.names import check_name, check_namespace

REPO = Path(__file__).resolve().parents[2]
PRODUCT = ("agents", "bot", "cli", "gateway", "incidents", "policies", "proposals", "store",
           "tools", "undo")  # fmt: skip
_COMPILED = re.compile(r"(\w+) = re\.compile\(\s*r?[\"'](.*?)[\"']\s*[,)]", re.DOTALL)


@pytest.mark.parametrize("name", ["geo\n", "geo\r\n", "geo ", "\ngeo", "geo\x00"])
def test_a_name_with_a_trailing_newline_is_refused(name: str) -> None:
    with pytest.raises(errors.Invalid):
        check_name("Deployment", name)
    with pytest.raises(errors.Invalid):
        check_name("Service", name)
    with pytest.raises(errors.Invalid):
        check_namespace(name.replace("geo", "hotel"))


def test_no_anchored_pattern_is_checked_with_match() -> None:
    """A compiled pattern that ends in ``$`` is never used with ``.match(``; and no
    ``re.match`` call carries a ``$``."""
    found: list[str] = []
    for package in PRODUCT:
        for path in sorted((REPO / package).rglob("*.py")):
            text = path.read_text()
            for name, pattern in _COMPILED.findall(text):
                if pattern.endswith("$") and re.search(rf"\b{name}\.match\(", text):
                    found.append(f"{path.relative_to(REPO)}: {name}.match")
            for call in re.findall(r"re\.match\(\s*r?[\"']([^\"']*)", text):
                if "$" in call:
                    found.append(f"{path.relative_to(REPO)}: re.match({call!r})")
    assert found == [], found
