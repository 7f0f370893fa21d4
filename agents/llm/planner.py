"""The LLM planner: a diagnosis agent and a mitigation agent on autogen-agentchat.

Two agents rather than one with two phases: each has its own short system prompt and answer
schema (a diagnosis, then ranked candidates), each phase is retried on its own, and the
mitigation agent sees the catalog while the diagnosis agent does not need it. The order is
plain Python — the model never decides the control flow, and there is no team or handoff.

Both agents start from the telemetry context (``agents.llm.context``: the analyzers' findings
and the offline answer first, within a fixed token budget) and may call read tools only. What
they answer is validated (``agents.llm.answers``): only catalog actions on objects that exist
survive, and every drop is noted. The planner never executes, proposes or approves anything; it
returns a ``PlanResult`` and the workflow proposes its candidates through the proposal service.

Failure is cheap: no model configured → ``planner_from_env`` returns None; a timeout, or an
error or unusable answer twice in a phase → the offline planner's result, with a note saying
why. "Unusable" is anything the client or the agent could not turn into the answer's schema —
no choices, no message, a body that is not JSON or was cut off, a refusal, a call to a tool
that does not exist, an answer over ``budget.ANSWER_CHARS`` — whatever exception it raises.
Model calls and tokens (including thrown-away answers) are in ``PlanResult.usage``.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import warnings
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

import openai
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import StructuredMessage
from autogen_core.models import ChatCompletionClient
from pydantic import BaseModel, ValidationError

from agents.llm import answers, context, prompts
from agents.llm.config import LLMConfig, make_client
from agents.llm.metering import MeteredClient, too_large
from agents.llm.readtools import ToolLog, read_tools
from agents.llm.telemetry import clean
from agents.model import Candidate, Diagnosis, PlanResult, Usage
from agents.planner import PlanRequest
from tools.reads import ClusterReader

T = TypeVar("T")
A = TypeVar("A", bound=BaseModel)
TRIES = 2


class ModelFailed(Exception):
    """A phase could not get a usable answer (``reason`` is said in the notes)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


@dataclass
class _Run:
    request: PlanRequest
    client: MeteredClient
    ctx: context.Context
    notes: list[str] = field(default_factory=list)
    tools: ToolLog = field(default_factory=ToolLog)


class LLMPlanner:
    name = "llm"

    def __init__(
        self,
        client_factory: Callable[[], ChatCompletionClient],
        reader: ClusterReader,
        *,
        model: str = "",
        timeout: float = 60.0,
        diagnosis_tool_rounds: int = 3,
        mitigation_tool_rounds: int = 2,
    ) -> None:
        # A factory, not a client: each planning runs on its own event loop, and an HTTP
        # client's connections belong to the loop that opened them.
        self.client_factory = client_factory
        self.reader = reader
        self.model = model
        self.timeout = timeout
        self.diagnosis_tool_rounds = diagnosis_tool_rounds
        self.mitigation_tool_rounds = mitigation_tool_rounds

    def plan(self, request: PlanRequest) -> PlanResult:
        return run_sync(lambda: self.aplan(request))

    async def aplan(self, request: PlanRequest) -> PlanResult:
        ctx = context.build(request, model=self.model)
        notes: list[str] = []
        if ctx.flagged:
            notes.append(
                "telemetry contains text addressed to an agent (treated as data, not "
                f"instructions): {', '.join(ctx.flagged[:5])}"
            )
        if not request.findings and not context.unwell(request.snapshot):
            notes.append("nothing in the namespace looks unwell; the model was not asked")
            return _with(request.offline, notes=notes, usage=Usage(context_tokens=ctx.tokens))
        run = _Run(request, MeteredClient(self.client_factory()), ctx, notes)
        try:
            return await asyncio.wait_for(self._phases(run), timeout=self.timeout)
        except TimeoutError:
            return self._fallback(
                run, f"the model did not answer within {self.timeout:g}s; the offline plan is used"
            )
        except ModelFailed as failed:
            return self._fallback(run, failed.reason)
        except Exception as exc:  # any failure of a planning is the fallback's
            return self._fallback(
                run,
                f"the model planner failed ({type(exc).__name__}: {_first_line(exc)}); the "
                "offline plan is used",
            )
        finally:
            await run.client.close()

    # ------------------------------------------------------------------ phases

    async def _phases(self, run: _Run) -> PlanResult:
        request = run.request
        reader = request.reader or self.reader  # the incident's own cluster in a fleet
        tools = read_tools(reader, request.snapshot.namespace, model=self.model, log=run.tools)

        def diagnosis_of(answer: answers.DiagnosisAnswer) -> Diagnosis | None:
            if answer.healthy:
                return None
            return answers.to_diagnosis(answer, request.snapshot, request.findings)

        diagnosis = await self._ask(
            run,
            phase="diagnosis",
            system=prompts.DIAGNOSIS_SYSTEM,
            answer_type=answers.DiagnosisAnswer,
            task=lambda reason: prompts.diagnosis_task(run.ctx.text, reason),
            convert=diagnosis_of,
            tools=tools,
            rounds=self.diagnosis_tool_rounds,
        )
        if diagnosis is None:
            if request.offline.diagnosis is not None:
                run.notes.append("the model saw nothing wrong; the offline diagnosis is kept")
                return self._result(run, request.offline.diagnosis, request.offline.candidates)
            return self._result(run, None, [])
        excluded = set(request.tried) | {key for key, _ in request.rejected}
        shown = diagnosis.model_dump(mode="json", exclude={"findings", "history"})

        def candidates_of(answer: answers.MitigationAnswer) -> list[Candidate]:
            vetted = answers.to_candidates(
                answer,
                request.snapshot,
                mechanism=diagnosis.mechanism,
                evidence=diagnosis.evidence,
                excluded=excluded,
            )
            run.notes.extend(vetted.notes)
            if not vetted.candidates:
                raise answers.InvalidAnswer(
                    "no candidate was a catalog action on an object that exists: "
                    + "; ".join(vetted.notes[-3:])
                )
            return vetted.candidates

        try:
            candidates = await self._ask(
                run,
                phase="mitigation",
                system=prompts.MITIGATION_SYSTEM,
                answer_type=answers.MitigationAnswer,
                task=lambda reason: prompts.mitigation_task(
                    run.ctx.text, shown, sorted(excluded), reason
                ),
                convert=candidates_of,
                tools=[t for t in tools if t.name in ("rollout_history", "recent_changes")],
                rounds=self.mitigation_tool_rounds,
            )
        except ModelFailed as failed:
            if not request.offline.candidates:
                raise
            run.notes.append(f"{failed.reason}; the model's diagnosis is kept")
            return self._result(run, diagnosis, request.offline.candidates)
        return self._result(run, diagnosis, self._merged(run, candidates))

    async def _ask(
        self,
        run: _Run,
        *,
        phase: str,
        system: str,
        answer_type: type[A],
        task: Callable[[str], str],
        convert: Callable[[A], T],
        tools: list[Any],
        rounds: int,
    ) -> T:
        """One phase: up to ``TRIES`` runs of a fresh agent; garbage and errors are retried
        with the reason given back, then the phase fails."""
        reason = ""
        failures: list[str] = []
        for _ in range(TRIES):
            agent = AssistantAgent(
                f"stratus_{phase}",
                model_client=run.client,
                tools=tools,
                system_message=system,
                output_content_type=answer_type,
                reflect_on_tool_use=True,
                max_tool_iterations=rounds,
            )
            try:
                with warnings.catch_warnings():
                    # autogen-ext logs openai's parsed completion with model_dump(), which makes
                    # pydantic warn about the ``parsed`` field's type on every structured answer.
                    warnings.filterwarnings(
                        "ignore", message="Pydantic serializer warnings", category=UserWarning
                    )
                    # A server that names another model (or none) in its answer is no reason
                    # to warn on every call; the answer is judged on its content.
                    warnings.filterwarnings(
                        "ignore", message="Resolved model mismatch", category=UserWarning
                    )
                    result = await agent.run(task=task(reason))
                message = result.messages[-1] if result.messages else None
                if not isinstance(message, StructuredMessage) or not isinstance(
                    message.content, answer_type
                ):
                    raise answers.InvalidAnswer(f"the answer was not the {phase} JSON object")
                return convert(message.content)
            except openai.APITimeoutError:
                raise TimeoutError from None
            except (ValidationError, ValueError) as exc:  # InvalidAnswer is a ValueError
                reason = _first_line(exc)
                failures.append(f"unusable answer ({reason})")
            except (openai.APIError, ConnectionError) as exc:
                large = too_large(exc)  # refused by its size while it was read
                reason = _first_line(large) if large else "the request failed"
                failures.append(
                    f"unusable answer ({reason})" if large else f"error ({_first_line(exc)})"
                )
            except Exception as exc:
                # The client and the agent assume a well-formed answer (``choices[0]``, a
                # message, a dict): an answer that is not one surfaces as any exception at
                # all. Whatever it is, it is the model's failure, never a stuck incident.
                reason = "the answer could not be read"
                failures.append(f"unreadable answer ({type(exc).__name__}: {_first_line(exc)})")
        raise ModelFailed(
            f"the {phase} agent failed {TRIES} times: {'; '.join(failures)}; the offline plan "
            "is used"
        )

    # ------------------------------------------------------------------ results

    def _merged(self, run: _Run, candidates: list[Candidate]) -> list[Candidate]:
        """The model's candidates, then the offline planner's it did not repeat."""
        keys = {c.key() for c in candidates}
        offline = [c for c in run.request.offline.candidates if c.key() not in keys]
        if offline:
            run.notes.append(
                f"{len(offline)} offline candidate(s) kept after the model's {len(candidates)}"
            )
        low = min(c.score for c in candidates) if candidates else 0.0
        return candidates + [
            c.model_copy(update={"score": min(c.score, low - 1 - i)}) for i, c in enumerate(offline)
        ]

    def _usage(self, run: _Run) -> Usage:
        return Usage(
            model_calls=run.client.calls,
            prompt_tokens=run.client.prompt_tokens,
            completion_tokens=run.client.completion_tokens,
            context_tokens=run.ctx.tokens,
        )

    def _result(
        self, run: _Run, diagnosis: Diagnosis | None, candidates: list[Candidate]
    ) -> PlanResult:
        if run.tools.calls:
            run.notes.append(f"the model read: {', '.join(run.tools.calls)}")
        return PlanResult(
            diagnosis=diagnosis,
            candidates=candidates,
            planner=self.name,
            notes=run.notes,
            usage=self._usage(run),
        )

    def _fallback(self, run: _Run, reason: str) -> PlanResult:
        return _with(run.request.offline, notes=[*run.notes, reason], usage=self._usage(run))


def _with(result: PlanResult, *, notes: list[str], usage: Usage) -> PlanResult:
    return result.model_copy(update={"notes": [*result.notes, *notes], "usage": usage})


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return clean(text[0] if text else type(exc).__name__, 200)


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from synchronous code, even inside a running event loop
    (the bot's): then it runs on a loop of its own in a worker thread."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(make())
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(lambda: asyncio.run(make())).result()


def planner_from_env(
    reader: ClusterReader, env: Mapping[str, str] | None = None
) -> LLMPlanner | None:
    """The LLM planner the environment configures, or None (then the offline planner runs)."""
    config = LLMConfig.from_env(os.environ if env is None else env)
    if config is None:
        return None
    return LLMPlanner(
        lambda: make_client(config), reader, model=config.model, timeout=config.timeout
    )
