"""The LLM planner with autogen's replay client: tool calls, structured answers, garbage,
non-catalog actions and the environment switch — deterministic, no HTTP."""

from __future__ import annotations

import json
from typing import Any

from autogen_core import FunctionCall
from autogen_core.models import CreateResult, ModelFamily, ModelInfo, RequestUsage
from autogen_ext.models.replay import ReplayChatCompletionClient

from agents.llm import LLMPlanner, planner_from_env
from agents.llm.readtools import READ_TOOLS
from agents.snapshot import Snapshot
from tests.agents.llm.conftest import diagnosis_json, mitigation_json, request_for, step
from tools.actions import CATALOG
from tools.reads import ClusterReader

INFO = ModelInfo(
    vision=False,
    function_calling=True,
    json_output=True,
    structured_output=True,
    family=ModelFamily.UNKNOWN,
)


def tool_call(name: str, **arguments: Any) -> CreateResult:
    return CreateResult(
        finish_reason="function_calls",
        content=[FunctionCall(id=f"call-{name}", name=name, arguments=json.dumps(arguments))],
        usage=RequestUsage(prompt_tokens=100, completion_tokens=10),
        cached=False,
    )


def planner(
    replies: list[str | CreateResult], reader: ClusterReader
) -> tuple[LLMPlanner, ReplayChatCompletionClient]:
    client = ReplayChatCompletionClient(replies, model_info=INFO)
    return LLMPlanner(lambda: client, reader, timeout=30), client


def test_tool_calls_then_structured_answers_give_a_diagnosis_and_catalog_candidates(
    injected: Snapshot, reader: ClusterReader
) -> None:
    pod = next(
        p["metadata"]["name"] for p in injected.pods if p["metadata"]["name"].startswith("profile-")
    )
    llm, client = planner(
        [
            tool_call("logs", pod=pod, container="", previous=True),
            json.dumps(diagnosis_json()),
            tool_call("rollout_history", deployment="profile"),
            json.dumps(
                mitigation_json(
                    step("rollout-undo", "Deployment", "profile"),
                    step("set-env", "Deployment", "profile", variable="LOG_LEVEL", value="info"),
                )
            ),
        ],
        reader,
    )
    result = llm.plan(request_for(injected))

    assert result.planner == "llm" and result.diagnosis is not None
    assert (
        result.diagnosis.source == "llm" and str(result.diagnosis.resource) == "Deployment/profile"
    )
    keys = [c.key() for c in result.candidates]
    assert keys[0].startswith("rollout-undo Deployment/profile")
    assert keys[1].startswith("set-env Deployment/profile") and "'LOG_LEVEL'" in keys[1]
    assert len(keys) == 2  # the offline candidate is the model's first: not repeated
    assert result.candidates[1].steps[0].params == {"variable": "LOG_LEVEL", "value": "info"}
    assert result.usage.model_calls == 4 and result.usage.prompt_tokens > 0
    assert 0 < result.usage.context_tokens <= 2_000
    assert "the model read: logs, rollout_history" in result.notes
    # The tool's answer went back to the model fenced as untrusted data, from the real lab.
    tool_results = [
        m
        for call in client.create_calls
        for m in call["messages"]
        if m.type == "FunctionExecutionResultMessage"
    ]
    assert tool_results, "the tool result was not given back to the model"
    text = tool_results[0].content[0].content
    assert text.startswith("<<<UNTRUSTED CLUSTER DATA: result of read tool logs>>>")
    assert "invalid value" in text and "[flagged:" in text
    # Only read tools were offered, and the answers were asked for as JSON schemas.
    offered = {t["name"] for call in client.create_calls for t in call["tools"]}
    assert offered <= set(READ_TOOLS)
    assert client.create_calls[-1]["json_output"].__name__ == "MitigationAnswer"


def test_garbage_twice_falls_back_to_the_offline_plan_with_a_note(
    injected: Snapshot, reader: ClusterReader
) -> None:
    llm, _ = planner(["not json at all", '{"healthy": "maybe"}'], reader)
    request = request_for(injected)
    result = llm.plan(request)
    assert result.planner == "offline"
    assert result.candidates == request.offline.candidates
    assert any(
        "diagnosis agent failed 2 times" in n and "offline plan is used" in n for n in result.notes
    )
    assert result.usage.model_calls == 2


def test_garbage_once_is_retried_with_the_reason(injected: Snapshot, reader: ClusterReader) -> None:
    llm, client = planner(
        [
            "```json\n{oops",
            json.dumps(diagnosis_json()),
            json.dumps(mitigation_json(step("rollout-undo", "Deployment", "profile"))),
        ],
        reader,
    )
    result = llm.plan(request_for(injected))
    assert result.planner == "llm" and result.usage.model_calls == 3
    retry_task = client.create_calls[1]["messages"][-1].content
    assert "Your previous answer could not be used" in retry_task


def test_a_non_catalog_action_is_dropped_and_noted(
    injected: Snapshot, reader: ClusterReader
) -> None:
    llm, _ = planner(
        [
            json.dumps(diagnosis_json()),
            json.dumps(
                mitigation_json(
                    step("delete-namespace", "Namespace", "hotel"),
                    step("kubectl", "Deployment", "profile", args="delete ns hotel"),
                    step("scale", "Deployment", "no-such-deployment", replicas=2),
                    step("scale", "Deployment", "profile", replicas=-3),
                    step("rollout-undo", "Deployment", "profile"),
                )
            ),
        ],
        reader,
    )
    result = llm.plan(request_for(injected))
    assert [c.steps[0].action for c in result.candidates] == ["rollout-undo"]
    assert all(s.action in CATALOG for c in result.candidates for s in c.steps)
    notes = "\n".join(result.notes)
    assert "'delete-namespace' is not a catalog action" in notes
    assert "'kubectl' is not a catalog action" in notes
    assert "Deployment/no-such-deployment does not exist" in notes
    assert "replicas" in notes  # the catalog's own validation


def test_a_diagnosis_of_something_that_does_not_exist_is_garbage(
    injected: Snapshot, reader: ClusterReader
) -> None:
    llm, _ = planner(
        [
            json.dumps(diagnosis_json(name="ghost")),
            json.dumps(diagnosis_json(kind="Namespace", name="hotel")),
        ],
        reader,
    )
    result = llm.plan(request_for(injected))
    assert result.planner == "offline"
    assert any("Deployment/ghost, which is not in namespace hotel" in n for n in result.notes)


def test_a_healthy_namespace_does_not_ask_the_model(
    lab: object, kube: object, reader: ClusterReader
) -> None:
    from agents import snapshot as snapshots
    from agents.model import PlanResult
    from agents.planner import PlanRequest

    snap = snapshots.take(kube, "hotel")  # type: ignore[arg-type]
    llm, client = planner([], reader)
    result = llm.plan(PlanRequest(snapshot=snap, findings=[], offline=PlanResult(diagnosis=None)))
    assert result.diagnosis is None and not result.candidates
    assert client.create_calls == [] and result.usage.model_calls == 0
    assert "the model was not asked" in " ".join(result.notes)


def test_no_model_configured_means_no_llm_planner(reader: ClusterReader) -> None:
    assert planner_from_env(reader, {}) is None
    assert planner_from_env(reader, {"STRATUS_MODEL": "gpt-4o"}) is None
    configured = planner_from_env(
        reader,
        {
            "OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
            "STRATUS_MODEL": "llama3",
            "STRATUS_LLM_TIMEOUT": "5",
        },
    )
    assert configured is not None and configured.model == "llama3" and configured.timeout == 5
