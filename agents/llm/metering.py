"""Counting what the model costs: calls and tokens, including calls whose answers were thrown
away (garbage, timeouts), so the usage recorded per incident is what was really spent — and
refusing an answer larger than ``budget.ANSWER_CHARS`` before anything parses or keeps it."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, Literal

from autogen_core import CancellationToken
from autogen_core.models import (
    ChatCompletionClient,
    CreateResult,
    LLMMessage,
    ModelCapabilities,
    ModelInfo,
    RequestUsage,
)
from autogen_core.tools import Tool, ToolSchema
from pydantic import BaseModel

from agents.llm.budget import ANSWER_CHARS


class AnswerTooLarge(ValueError):
    """The model answered more than ``budget.ANSWER_CHARS`` characters (an unusable answer)."""

    def __init__(self, size: int) -> None:
        super().__init__(f"the answer was {size} characters, more than the {ANSWER_CHARS} allowed")
        self.size = size


def _size(result: CreateResult) -> int:
    if isinstance(result.content, str):
        return len(result.content)
    return sum(len(call.name) + len(call.arguments) for call in result.content)


class MeteredClient(ChatCompletionClient):
    """Wraps a client: every ``create`` is counted, whatever it returns or raises."""

    def __init__(self, inner: ChatCompletionClient) -> None:
        self.inner = inner
        self.calls = 0
        self.prompt_tokens = 0
        self.completion_tokens = 0

    def _count(self, usage: RequestUsage | None) -> None:
        if usage is not None:
            self.prompt_tokens += usage.prompt_tokens
            self.completion_tokens += usage.completion_tokens

    async def create(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = [],
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> CreateResult:
        self.calls += 1
        result = await self.inner.create(
            messages,
            tools=tools,
            tool_choice=tool_choice,
            json_output=json_output,
            extra_create_args=extra_create_args,
            cancellation_token=cancellation_token,
        )
        self._count(result.usage)
        if _size(result) > ANSWER_CHARS:
            raise AnswerTooLarge(_size(result))
        return result

    async def create_stream(
        self,
        messages: Sequence[LLMMessage],
        *,
        tools: Sequence[Tool | ToolSchema] = [],
        tool_choice: Tool | Literal["auto", "required", "none"] = "auto",
        json_output: bool | type[BaseModel] | None = None,
        extra_create_args: Mapping[str, Any] = {},
        cancellation_token: CancellationToken | None = None,
    ) -> AsyncGenerator[str | CreateResult, None]:
        self.calls += 1
        async for chunk in self.inner.create_stream(
            messages,
            tools=tools,
            tool_choice=tool_choice,
            json_output=json_output,
            extra_create_args=extra_create_args,
            cancellation_token=cancellation_token,
        ):
            if isinstance(chunk, CreateResult):
                self._count(chunk.usage)
                if _size(chunk) > ANSWER_CHARS:
                    raise AnswerTooLarge(_size(chunk))
            yield chunk

    async def close(self) -> None:
        await self.inner.close()

    def actual_usage(self) -> RequestUsage:
        return self.inner.actual_usage()

    def total_usage(self) -> RequestUsage:
        return RequestUsage(
            prompt_tokens=self.prompt_tokens, completion_tokens=self.completion_tokens
        )

    def count_tokens(
        self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []
    ) -> int:
        return self.inner.count_tokens(messages, tools=tools)

    def remaining_tokens(
        self, messages: Sequence[LLMMessage], *, tools: Sequence[Tool | ToolSchema] = []
    ) -> int:
        return self.inner.remaining_tokens(messages, tools=tools)

    @property
    def capabilities(self) -> ModelCapabilities:
        return self.inner.capabilities

    @property
    def model_info(self) -> ModelInfo:
        return self.inner.model_info
