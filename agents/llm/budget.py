"""Counting tokens with a real tokenizer, offline, and the fixed budgets the planner keeps.

``tiktoken`` downloads its encodings on first use, which a cluster without internet cannot do;
``bpe-openai`` ships the same BPE files (``o200k_base``, ``cl100k_base``) inside its wheel
and exposes a tiktoken-compatible API, so the count is the one OpenAI's models see, with no
network. The encoding follows the model name where the tokenizer knows it (``gpt-4o`` →
o200k_base, ``gpt-4`` → cl100k_base) and is o200k_base otherwise: for other models' tokenizers
it is an estimate, which the budgets below leave room for.
"""

from __future__ import annotations

import contextlib
import functools
import warnings
from typing import Protocol

import tiktoken.model

# The telemetry context given to a model: findings, the offline answer, workloads, pods,
# events and logs, quoted and bounded. Fixed whatever the namespace size (issue 9, section 3).
CONTEXT_TOKENS = 2_000
# One read-tool answer given back to the model.
TOOL_RESULT_TOKENS = 600
# One answer of the model (its text, or its tool calls' names and arguments), in characters.
# A diagnosis or five ranked candidates fit in a few thousand; an answer far larger is a model
# gone wrong (or a hostile server), and is refused as unusable rather than parsed and kept.
ANSWER_CHARS = 32_000
DEFAULT_ENCODING = "o200k_base"


class _Encoding(Protocol):
    name: str

    def encode_ordinary(self, text: str) -> list[int]: ...

    def decode(self, tokens: list[int]) -> str: ...


@functools.cache
def encoding(model: str = "") -> _Encoding:
    """The tokenizer for ``model`` (o200k_base when the name is not one it knows)."""
    name = DEFAULT_ENCODING
    if model:
        # tiktoken's table of names is plain Python: it downloads nothing
        with contextlib.suppress(KeyError):
            name = tiktoken.model.encoding_name_for_model(model)
    # bpe-openai reads its bundled files with a deprecated importlib call; that is its
    # business, not a warning for our callers. Imported here: loading the files takes time.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import bpe_openai  # type: ignore[import-untyped]

        if name not in bpe_openai.list_encoding_names():
            name = DEFAULT_ENCODING
        found: _Encoding = bpe_openai.get_encoding(name)
    return found


def count(text: str, model: str = "") -> int:
    return len(encoding(model).encode_ordinary(text))


def truncate(text: str, limit: int, model: str = "") -> str:
    """``text`` cut to at most ``limit`` tokens (with a marker saying so)."""
    tokens = encoding(model).encode_ordinary(text)
    if len(tokens) <= limit:
        return text
    marker = " …[cut]"
    keep = max(limit - count(marker, model), 0)
    return encoding(model).decode(tokens[:keep]) + marker
