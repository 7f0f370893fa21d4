"""Questions in an incident thread ("why geo?", "what else could it be?"), answered from the
stored diagnosis, candidates and events — quoted as data, never followed as instructions.
"""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from bot import blocks as b
from bot.text import thread_words
from incidents.model import Incident
from proposals.model import Proposal, ProposalState

if TYPE_CHECKING:
    from agents.llm.questions import QuestionAnswerer

# "was anything undone?", "did you roll it back?" — asked before the others: "undo anything
# else?" is about undoing.
UNDONE = re.compile(r"\bundo|\bundid|\brevert|\brollback|\broll(ed)?\b[^?.]*\bback\b")
ALTERNATIVES = ("else", "other", "alternative", "instead", "options")
SUMMARY = ("summary", "summarize", "summarise", "recap")
POSTMORTEM = ("postmortem", "post-mortem", "post mortem")
STATUS = ("status", "state", "doing", "progress", "where")


def kind(question: str) -> str:
    words = question.lower()
    if any(w in words for w in POSTMORTEM):
        return "postmortem"
    if UNDONE.search(words):
        return "undone"
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
        return thread_words.answer_alternatives(lines[:10])
    if asked == "status":
        return thread_words.answer_state(incident.state.value, latest)
    diagnosis = incident.diagnosis
    if diagnosis is None:
        return thread_words.QUESTION_NO_DIAGNOSIS
    evidence = [
        thread_words.evidence(e.source, e.ref, b.cut(e.text, 300)) for e in diagnosis.evidence[:6]
    ]
    return thread_words.answer_why(str(diagnosis.resource), diagnosis.summary, evidence)


def undone(proposals: list[Proposal]) -> str:
    """What was undone in the incident, from its proposals' states (the store's answer: an
    undo made from a card, a terminal or by TNR all leave the original ``undone``)."""
    writes = [p for p in proposals if p.action != "undo"]
    undos = [p for p in proposals if p.action == "undo"]
    return thread_words.answer_undone(
        undone=[p.intent for p in writes if p.state == ProposalState.UNDONE],
        waiting=[p.intent for p in undos if p.state == ProposalState.AWAITING_APPROVAL],
        refused=[
            f"{p.intent} ({p.state.value})"
            for p in undos
            if p.state in (ProposalState.REJECTED, ProposalState.DENIED, ProposalState.FAILED)
        ],
        kept=[p.intent for p in writes if p.state == ProposalState.EXECUTED],
    )


async def reply(
    answerer: QuestionAnswerer | None,
    incident: Incident,
    question: str,
    events: list[str],
    undone_answer: str | None = None,
) -> str:
    """The thread's reply: the model's answer when one is configured and answers (its markup
    escaped, labelled as a model's), else the answer from the stored facts."""
    latest = next((m for m in reversed(events) if m), "")
    if undone_answer is not None:
        # A question of fact the store answers exactly; a model could only guess at it.
        return undone_answer + "\n" + thread_words.ANSWER_UNDONE_NOTE
    from_facts = answer(incident, question, latest)
    if answerer is None:
        return from_facts + "\n" + thread_words.ANSWER_DATA_NOTE
    said, failure = await answerer.answer(incident, question, events)
    if not said:
        return from_facts + "\n" + thread_words.model_fallback(failure)
    return thread_words.model_answer(said)
