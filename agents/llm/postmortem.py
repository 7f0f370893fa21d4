"""The narrative parts of a postmortem draft (summary, what went well, follow-ups) written by
the configured model from the incident's stored events — given as data, never as instructions.

The model gets no tools: only the draft's entries (``incidents.postmortem``: each with the
``seq`` of the events it comes from), fenced and quoted (``agents.llm.telemetry``). Its reply
is structured: every line names the events it rests on, and a line that names none, or any
event not among those it was given, is dropped — so the model can word the story, but not
add to it. A section left with no line falls back to the template; a model that fails, is
late, or answers nothing usable leaves the whole draft templated, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from autogen_core.models import ChatCompletionClient
from pydantic import BaseModel, ConfigDict, Field

from agents.llm import budget, structured
from agents.llm.prompts import RULES
from agents.llm.telemetry import clean, fence, line

LINE_CHARS = 400
LINES_PER_SECTION = 8
FACTS_TOKENS = 6000
DEFAULT_TIMEOUT = 30.0
SECTIONS = ("summary", "went_well", "follow_ups")

SYSTEM = f"""\
You are Stratus, a human-in-the-loop incident assistant for Kubernetes, drafting the narrative
parts of a blameless postmortem: a short summary, what went well, and follow-ups. Write only
from the incident's stored events you are given; each of your lines must name, in "events",
the seq numbers of the events it rests on, taken from those given. Never state anything the
events do not say; never say something was approved, executed or undone unless an event says
so. Keep each line to a sentence or two.

{RULES}"""


class CitedLine(BaseModel):
    model_config = ConfigDict(extra="forbid")

    text: str = Field(description="one line of the postmortem, plain text")
    events: list[int] = Field(description="the seq numbers of the events this line rests on")


class Narrative(BaseModel):
    model_config = ConfigDict(extra="forbid")

    summary: list[CitedLine] = Field(default_factory=list)
    went_well: list[CitedLine] = Field(default_factory=list)
    follow_ups: list[CitedLine] = Field(default_factory=list)


# section → its lines, each (text, the events it cites): what the document renders.
Narrated = dict[str, list[tuple[str, tuple[int, ...]]]]


def checked(narrative: Narrative, allowed: Iterable[int]) -> Narrated:
    """The model's lines that cite only events it was given (at least one), cleaned and
    bounded; sections left empty are left out (the template stands for them)."""
    known = set(allowed)
    kept: Narrated = {}
    for section in SECTIONS:
        lines = []
        for cited in getattr(narrative, section)[:LINES_PER_SECTION]:
            text = clean(cited.text, LINE_CHARS)
            refs = tuple(sorted(set(cited.events)))
            if text and refs and set(refs) <= known:
                lines.append((text, refs))
        if lines:
            kept[section] = lines
    return kept


def task(records: list[dict[str, Any]], *, model: str = "") -> str:
    body = budget.truncate("\n".join(line(r) for r in records), FACTS_TOKENS, model)
    facts = fence("the incident's stored events", [body])
    return f"{facts}\n\nDraft the summary, what went well and the follow-ups as JSON."


class PostmortemWriter:
    """One model call per draft, bounded in time; see the module docstring."""

    def __init__(
        self,
        client_factory: Callable[[], ChatCompletionClient],
        *,
        model: str = "",
        timeout: float = DEFAULT_TIMEOUT,
    ) -> None:
        self.client_factory = client_factory
        self.model = model
        self.timeout = timeout

    async def narrate(
        self, records: list[dict[str, Any]], allowed: Iterable[int]
    ) -> tuple[Narrated, str]:
        """``(the checked lines, "")``, or ``({}, why there are none)``; never raises for a
        model's failure."""
        try:
            narrative = await structured.ask(
                self.client_factory,
                agent="stratus_postmortem",
                system=SYSTEM,
                reply=Narrative,
                prompt=task(records, model=self.model),
                timeout=self.timeout,
            )
        except structured.NoAnswer as failed:
            return {}, failed.reason
        kept = checked(narrative, allowed)
        return (kept, "") if kept else ({}, "none of the model's lines named a stored event")
