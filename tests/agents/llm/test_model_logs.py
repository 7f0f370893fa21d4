"""What the model client logs is bounded, and what was left out is counted (issue 16, item 25:
every request and answer was logged in full, so one 4 MB answer added about 40 MB of log).

The answer comes over real HTTP from the lab's fake server to the real OpenAI client, whose
autogen wrapper logs every call at INFO — the level ``stratus serve`` logs at.
"""

from __future__ import annotations

import logging
import re

import pytest

from agents.llm import planner_from_env
from agents.llm.logbounds import RECORD_CHARS, dropped
from agents.snapshot import Snapshot
from lab.llm import FakeChatServer
from tests.agents.llm.conftest import diagnosis_json, request_for
from tools.reads import ClusterReader

HUGE = 4 * 1024 * 1024
# The largest answer the client still reads (larger ones are refused by their size before
# anything reads or logs them, ``metering.BODY_BYTES``): what its log records must bound.
READ = 200_000


def test_a_huge_answer_adds_a_bounded_log_that_says_how_much_was_left_out(
    injected: Snapshot,
    reader: ClusterReader,
    fake_llm: FakeChatServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_llm.load([{"content": diagnosis_json(summary="x" * READ)}] * 4)
    planner = planner_from_env(
        reader, {"OPENAI_BASE_URL": fake_llm.url, "OPENAI_API_KEY": "sk-test"}
    )
    assert planner is not None
    before = dropped()
    caplog.set_level(logging.DEBUG)
    result = planner.plan(request_for(injected))

    assert result.planner == "offline"  # the answer itself is refused as too large
    texts = [r.getMessage() for r in caplog.records]
    total = sum(len(t) for t in texts)
    assert total < 20 * RECORD_CHARS, total  # was more than 400 KB for two such answers
    assert all(len(t) <= RECORD_CHARS + 200 for t in texts)
    said = [int(m) for t in texts for m in re.findall(r"(\d+) bytes left out", t)]
    assert said and max(said) >= READ // 2
    after = dropped()
    assert after.bytes - before.bytes >= 2 * READ * 0.9  # both tries were cut, and counted
    assert after.records > before.records


def test_an_answer_too_large_to_read_is_refused_before_anything_logs_it(
    injected: Snapshot,
    reader: ClusterReader,
    fake_llm: FakeChatServer,
    caplog: pytest.LogCaptureFixture,
) -> None:
    fake_llm.load([{"content": diagnosis_json(summary="x" * HUGE)}] * 4)
    planner = planner_from_env(
        reader, {"OPENAI_BASE_URL": fake_llm.url, "OPENAI_API_KEY": "sk-test"}
    )
    assert planner is not None
    caplog.set_level(logging.DEBUG)
    result = planner.plan(request_for(injected))
    assert result.planner == "offline" and "too large" in " ".join(result.notes)
    total = sum(len(r.getMessage()) for r in caplog.records)
    assert total < 20 * RECORD_CHARS, total


def test_every_string_of_a_record_is_cut_and_a_plain_record_is_cut_as_a_whole() -> None:
    from autogen_core.logging import LLMCallEvent

    from agents.llm.logbounds import MESSAGE_CHARS, bound

    event = LLMCallEvent(
        messages=[{"role": "user", "content": "é" * 10_000}, {"role": "tool", "content": "ok"}],
        response={"choices": [{"message": {"content": "y" * 50_000}}]},
        prompt_tokens=1,
        completion_tokens=1,
    )
    record = logging.LogRecord("autogen_core.events", logging.INFO, "", 0, event, None, None)
    text = bound(record)
    assert len(text) < 3 * MESSAGE_CHARS + 1_000
    assert f"[{(10_000 - MESSAGE_CHARS) * 2} bytes left out]" in text  # é is two bytes
    assert f"[{50_000 - MESSAGE_CHARS} bytes left out]" in text
    assert '"content": "ok"' in text  # small messages are kept whole

    plain = logging.LogRecord(
        "openai._base_client", logging.DEBUG, "", 0, "Request options: %s", ("z" * 100_000,), None
    )
    text = bound(plain)
    assert len(text) <= RECORD_CHARS + 100 and text.endswith("bytes left out]")
