"""One bounded model call whose answer must be a given JSON object: the thread's answers and
the postmortem's narrative both ask the model this way.

The call gets no tools. It is bounded by ``timeout``; the client is closed however it ends;
and every way it can fail (late, a transport or API error, an answer that is not the object)
becomes ``NoAnswer`` with the reason the caller's fallback notes, so a surface never sees a
model's exception.
"""

from __future__ import annotations

import asyncio
import warnings
from collections.abc import Callable
from typing import TypeVar

import openai
from autogen_agentchat.agents import AssistantAgent
from autogen_agentchat.messages import StructuredMessage
from autogen_core.models import ChatCompletionClient
from pydantic import BaseModel, ValidationError

Reply = TypeVar("Reply", bound=BaseModel)


class NoAnswer(Exception):
    """The model gave no usable answer (``reason`` says why, for the fallback's note)."""

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


async def ask(
    client_factory: Callable[[], ChatCompletionClient],
    *,
    agent: str,
    system: str,
    reply: type[Reply],
    prompt: str,
    timeout: float,
) -> Reply:
    """The model's answer to ``prompt`` as a ``reply`` object, or ``NoAnswer``."""
    client = client_factory()
    try:
        return await asyncio.wait_for(
            _structured(client, agent, system, reply, prompt), timeout=timeout
        )
    except (TimeoutError, openai.APITimeoutError):
        raise NoAnswer(f"the model did not answer within {timeout:g}s") from None
    except (openai.APIError, ConnectionError) as exc:
        raise NoAnswer(f"the model request failed ({type(exc).__name__})") from None
    except (ValidationError, ValueError) as exc:
        raise NoAnswer(f"the model's answer was unusable ({type(exc).__name__})") from None
    finally:
        await client.close()


async def _structured(
    client: ChatCompletionClient, name: str, system: str, reply: type[Reply], prompt: str
) -> Reply:
    agent = AssistantAgent(
        name, model_client=client, system_message=system, output_content_type=reply
    )
    with warnings.catch_warnings():
        # autogen serializes the structured content through a union that warns for it.
        warnings.filterwarnings(
            "ignore", message="Pydantic serializer warnings", category=UserWarning
        )
        result = await agent.run(task=prompt)
    message = result.messages[-1] if result.messages else None
    if not isinstance(message, StructuredMessage) or not isinstance(message.content, reply):
        raise ValueError(f"the answer was not the {reply.__name__} JSON object")
    return message.content
