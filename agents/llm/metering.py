"""Counting what the model costs: calls and tokens, including calls whose answers were thrown
away (garbage, timeouts), so the usage recorded per incident is what was really spent — and
refusing an answer larger than ``budget.ANSWER_CHARS`` before anything parses or keeps it."""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from typing import Any, Literal

import openai
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


# The most an HTTP body holding an answer of ``ANSWER_CHARS`` characters can take: each
# character escaped in JSON (``\\uXXXX``, six bytes), plus the envelope around it.
BODY_BYTES = ANSWER_CHARS * 6 + 64 * 1024


class BodyTooLarge(AnswerTooLarge):
    """The model's HTTP answer is larger than any answer of ``ANSWER_CHARS`` characters can be:
    refused while it is read, before the client or the agent parses it (as JSON, or into the
    answer's schema), whatever its shape."""

    def __init__(self, size: int) -> None:
        ValueError.__init__(
            self,
            f"the answer was too large: more than {size} bytes, where an answer of at most "
            f"{ANSWER_CHARS} characters takes at most {BODY_BYTES}",
        )
        self.size = size


async def _refuse_large(response: Any) -> None:
    """The HTTP client's response hook: a body over ``BODY_BYTES`` (announced, or once read)
    raises ``BodyTooLarge`` before the client parses it. A stream is left to be read as it
    comes: its chunks are measured by ``MeteredClient.create_stream``."""
    if str(response.headers.get("content-type", "")).startswith("text/event-stream"):
        return
    announced = str(response.headers.get("content-length", ""))
    if announced.isdigit() and int(announced) > BODY_BYTES:
        await response.aclose()
        raise BodyTooLarge(int(announced))
    body = await response.aread()
    if len(body) > BODY_BYTES:
        raise BodyTooLarge(len(body))


def too_large(error: BaseException) -> AnswerTooLarge | None:
    """The size refusal behind ``error`` (the client wraps what its transport raises)."""
    seen: BaseException | None = error
    for _ in range(8):
        if seen is None:
            return None
        if isinstance(seen, AnswerTooLarge):
            return seen
        seen = seen.__cause__ or seen.__context__
    return None


def bounded_http_client(timeout: float) -> openai.DefaultAsyncHttpxClient:
    """The model client's HTTP client: an answer too large to be one is refused by its size
    (``_refuse_large``) whatever its shape, before the client parses it into a schema."""
    return openai.DefaultAsyncHttpxClient(
        timeout=timeout, event_hooks={"response": [_refuse_large]}
    )


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
