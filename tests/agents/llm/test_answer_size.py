"""An answer too large to be one is refused by its size before anything parses it, whatever its
shape (issue 16 follow-up, item 12: a 5 MB answer that was not JSON was reported as "1
validation error for DiagnosisAnswer", the structured client having parsed it first)."""

from __future__ import annotations

import pytest

from agents.llm import planner_from_env
from agents.snapshot import Snapshot
from lab.llm import FakeChatServer
from tests.agents.llm.conftest import diagnosis_json, request_for
from tools.reads import ClusterReader

FIVE_MB = 5 * 1024 * 1024


@pytest.mark.parametrize(
    "content",
    ["not json at all " * (FIVE_MB // 16), diagnosis_json(summary="x" * FIVE_MB)],
    ids=["not-json", "json"],
)
def test_a_five_megabyte_answer_is_refused_for_its_size(
    injected: Snapshot, reader: ClusterReader, fake_llm: FakeChatServer, content: str
) -> None:
    fake_llm.load([{"content": content}] * 4)
    planner = planner_from_env(
        reader, {"OPENAI_BASE_URL": fake_llm.url, "OPENAI_API_KEY": "sk-test"}
    )
    assert planner is not None
    result = planner.plan(request_for(injected))
    assert result.planner == "offline"
    said = " ".join(result.notes)
    assert "too large" in said and "validation error" not in said, said
