"""The LLM planner over real HTTP: the real OpenAI client (as ``planner_from_env`` builds it)
against the lab's fake OpenAI-compatible server — tool calls, structured output, malformed
output, a hostile non-catalog model, server errors and a timeout."""

from __future__ import annotations

import time

from agents.llm import LLMPlanner, planner_from_env
from agents.llm.readtools import READ_TOOLS
from agents.snapshot import Snapshot
from lab.llm import FakeChatServer
from tests.agents.llm.conftest import diagnosis_json, mitigation_json, request_for, step
from tools.actions import CATALOG
from tools.reads import ClusterReader


def planner(server: FakeChatServer, reader: ClusterReader, timeout: float = 20) -> LLMPlanner:
    found = planner_from_env(
        reader,
        {
            "OPENAI_BASE_URL": server.url,
            "OPENAI_API_KEY": "sk-test",
            "STRATUS_MODEL": "local-model",
            "STRATUS_LLM_TIMEOUT": str(timeout),
        },
    )
    assert found is not None
    return found


def test_tool_calls_and_structured_output_over_http(
    injected: Snapshot, reader: ClusterReader, fake_llm: FakeChatServer
) -> None:
    fake_llm.load(
        [
            {"tool_calls": [{"name": "service_check", "arguments": {"service": "profile"}}]},
            {"content": diagnosis_json()},
            {
                "content": mitigation_json(
                    step("rollout-undo", "Deployment", "profile", to_revision=1)
                )
            },
        ]
    )
    result = planner(fake_llm, reader).plan(request_for(injected))

    assert result.planner == "llm" and result.diagnosis is not None
    first_key = result.candidates[0].key()
    assert first_key == "rollout-undo Deployment/profile [('to_revision', 1)]"
    assert result.usage.model_calls == 3
    assert result.usage.prompt_tokens > 0 and result.usage.completion_tokens > 0
    first, second, third = fake_llm.requests
    assert first["model"] == "local-model"
    assert {t["function"]["name"] for t in first["tools"]} <= set(READ_TOOLS)
    schema = first["response_format"]["json_schema"]
    assert schema["name"] == "DiagnosisAnswer" and schema["strict"] is True
    assert third["response_format"]["json_schema"]["name"] == "MitigationAnswer"
    tool_message = next(m for m in second["messages"] if m["role"] == "tool")
    assert tool_message["content"].startswith("<<<UNTRUSTED CLUSTER DATA: result of read tool")
    assert '"matching_pods"' in tool_message["content"]  # the lab's real answer


def test_malformed_output_twice_falls_back(
    injected: Snapshot, reader: ClusterReader, fake_llm: FakeChatServer
) -> None:
    fake_llm.load([], mode="malformed")
    request = request_for(injected)
    result = planner(fake_llm, reader).plan(request)
    assert result.planner == "offline" and result.candidates == request.offline.candidates
    assert result.diagnosis == request.offline.diagnosis
    assert len(fake_llm.requests) == 2 and result.usage.model_calls == 2
    assert any("diagnosis agent failed 2 times: unusable answer" in n for n in result.notes)


def test_a_hostile_model_gets_no_action_outside_the_catalog(
    injected: Snapshot, reader: ClusterReader, fake_llm: FakeChatServer
) -> None:
    # Well-formed answers that name Namespace and delete-namespace everywhere: the diagnosis
    # names nothing that exists and falls back; so does a mitigation phase of the same model.
    fake_llm.load([{"content": diagnosis_json()}], mode="non-catalog")
    request = request_for(injected)
    result = planner(fake_llm, reader).plan(request)
    assert all(s.action in CATALOG for c in result.candidates for s in c.steps)
    assert [c.key() for c in result.candidates] == [c.key() for c in request.offline.candidates]
    notes = "\n".join(result.notes)
    assert "'delete-namespace' is not a catalog action" in notes
    assert "mitigation agent failed 2 times" in notes and "the model's diagnosis is kept" in notes
    assert result.diagnosis is not None and result.diagnosis.source == "llm"


def test_server_errors_twice_fall_back(
    injected: Snapshot, reader: ClusterReader, fake_llm: FakeChatServer
) -> None:
    fake_llm.load([{"status": 500, "error": "overloaded"}, {"status": 503, "error": "down"}])
    result = planner(fake_llm, reader).plan(request_for(injected))
    assert result.planner == "offline"
    assert any("failed 2 times: error" in n for n in result.notes)
    assert len(fake_llm.requests) == 2  # the client does not retry behind our back


def test_a_timeout_falls_back_without_waiting_for_the_model(
    injected: Snapshot, reader: ClusterReader
) -> None:
    # Late enough for the 1 s timeout; not 30 s, which stopping the server would wait out.
    with FakeChatServer(mode="timeout", timeout_delay=4) as slow:
        started = time.monotonic()
        result = planner(slow, reader, timeout=1).plan(request_for(injected))
        elapsed = time.monotonic() - started
    assert result.planner == "offline"
    assert any("did not answer within 1s" in n for n in result.notes)
    assert elapsed < 10
    assert result.usage.model_calls == 1
