"""Questions in an incident thread ("why geo?", "what else could it be?"), answered from the
stored diagnosis, candidates and events — quoted as data, never followed as instructions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agents.incident import Incident
from bot import blocks as b
from bot import text

if TYPE_CHECKING:
    from agents.llm.questions import QuestionAnswerer

ALTERNATIVES = ("else", "other", "alternative", "instead", "options")
SUMMARY = ("summary", "summarize", "summarise", "recap")
STATUS = ("status", "state", "doing", "progress", "where")


def kind(question: str) -> str:
    words = question.lower()
    if any(w in words for w in SUMMARY):
        return "summary"
    if any(w in words for w in ALTERNATIVES):
        return "alternatives"
    if any(w in words for w in STATUS):
        return "status"
    return "why"


def answer(incident: Incident, question: str, latest: str) -> str:
    asked = kind(question)
    if asked == "alternatives":
        done = set(incident.tried) | {key for key, _ in incident.rejected}
        lines = [
            f"{c.intent}"
            + (f" — {c.why}" if c.why else "")
            + (" (tried)" if c.key() in done else "")
            for c in incident.candidates
        ]
        return text.answer_alternatives(lines[:10])
    if asked == "status":
        return text.answer_state(incident.state.value, latest)
    diagnosis = incident.diagnosis
    if diagnosis is None:
        return text.QUESTION_NO_DIAGNOSIS
    evidence = [text.evidence(e.source, e.ref, b.cut(e.text, 300)) for e in diagnosis.evidence[:6]]
    return text.answer_why(str(diagnosis.resource), diagnosis.summary, evidence)


async def reply(
    answerer: QuestionAnswerer | None, incident: Incident, question: str, events: list[str]
) -> str:
    """The thread's reply: the model's answer when one is configured and answers (its markup
    escaped, labelled as a model's), else the answer from the stored facts."""
    latest = next((m for m in reversed(events) if m), "")
    from_facts = answer(incident, question, latest)
    if answerer is None:
        return from_facts + "\n" + text.ANSWER_DATA_NOTE
    said, failure = await answerer.answer(incident, question, events)
    if not said:
        return from_facts + "\n" + text.model_fallback(failure)
    return text.model_answer(said)
