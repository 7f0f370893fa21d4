"""What the store says about the work done, read at once for one scrape.

Gauges and totals are computed from the database rather than counted as things happen, so
they survive a restart and agree with what the store (and the audit log) records: an
incident's state, a proposal's decision and who made it, executions and undos, the model's
calls and tokens per incident, the alert notifications taken in. ``operations.metrics`` turns
this into Prometheus families.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime

from incidents.moves import AGENT
from proposals.model import ProposalState
from store.clock import parse_stamp
from store.db import Store

# Open states whose age says whether Stratus keeps acting ("stopped acting": approved work
# not executed; "approvals pile up": proposals waiting for a person).
AGED_STATES = (
    ProposalState.AWAITING_APPROVAL.value,
    ProposalState.APPROVED.value,
    ProposalState.EXECUTING.value,
)


@dataclass
class Figures:
    incidents: Counter[str] = field(default_factory=Counter)  # state → count
    # (state, decision outcome, provenance: rule, grant, default, killswitch, store) → count
    proposals: Counter[tuple[str, str, str]] = field(default_factory=Counter)
    oldest_open: dict[str, float] = field(default_factory=dict)  # state → seconds
    approval_latencies: list[tuple[str, float]] = field(default_factory=list)  # (answer, s)
    executions: Counter[tuple[str, str]] = field(default_factory=Counter)  # (kind, state)
    undos: Counter[str] = field(default_factory=Counter)  # trigger (tnr, request) → count
    model_calls: int = 0
    tokens: Counter[str] = field(default_factory=Counter)  # prompt, completion → count
    alert_notifications: Counter[str] = field(default_factory=Counter)  # outcome → count


def _seconds(later: str, earlier: str) -> float | None:
    try:
        return max((parse_stamp(later) - parse_stamp(earlier)).total_seconds(), 0.0)
    except (TypeError, ValueError):
        return None  # a row written by hand or by an older version: left out, not a crash


def read(store: Store, *, now: datetime) -> Figures:
    figures = Figures()
    for row in store.query("SELECT state, count(*) AS n FROM incidents GROUP BY state"):
        figures.incidents[str(row["state"])] = int(row["n"])
    for row in store.query(
        "SELECT state, json_extract(body, '$.decision.outcome') AS outcome, "
        "json_extract(body, '$.decision.source') AS source, count(*) AS n "
        "FROM proposals WHERE body IS NOT NULL GROUP BY 1, 2, 3"
    ):
        key = (str(row["state"]), str(row["outcome"] or "none"), str(row["source"] or "none"))
        figures.proposals[key] += int(row["n"])
    marks = ",".join("?" * len(AGED_STATES))
    for row in store.query(
        f"SELECT state, min(created_at) AS oldest FROM proposals WHERE state IN ({marks}) "
        "GROUP BY state",
        AGED_STATES,
    ):
        age = _seconds(now.isoformat(), str(row["oldest"]))
        if age is not None:
            figures.oldest_open[str(row["state"])] = age
    for row in store.query(
        "SELECT created_at, json_extract(body, '$.votes') AS votes FROM proposals "
        "WHERE body IS NOT NULL AND json_array_length(body, '$.votes') > 0"
    ):
        # Opened → the first person's answer; the workflow's own answers are not waits.
        votes = [
            v for v in json.loads(row["votes"]) if not str(v.get("user", "")).startswith("agent:")
        ]
        if votes:
            waited = _seconds(str(votes[0].get("at", "")), str(row["created_at"]))
            if waited is not None:
                figures.approval_latencies.append((str(votes[0].get("choice", "")), waited))
    for row in store.query(
        "SELECT CASE WHEN inverse_of IS NULL THEN 'write' ELSE 'undo' END AS kind, state, "
        "count(*) AS n FROM executions GROUP BY 1, 2"
    ):
        figures.executions[(str(row["kind"]), str(row["state"]))] = int(row["n"])
    for row in store.query(
        "SELECT CASE WHEN p.requester = ? THEN 'tnr' ELSE 'request' END AS trigger, "
        "count(*) AS n FROM executions e LEFT JOIN proposals p ON p.id = e.proposal_id "
        "WHERE e.inverse_of IS NOT NULL AND e.state = 'applied' GROUP BY 1",
        (AGENT,),
    ):
        figures.undos[str(row["trigger"])] = int(row["n"])
    usage = store.query(
        "SELECT coalesce(sum(json_extract(body, '$.usage.model_calls')), 0) AS calls, "
        "coalesce(sum(json_extract(body, '$.usage.prompt_tokens')), 0) AS prompt, "
        "coalesce(sum(json_extract(body, '$.usage.completion_tokens')), 0) AS completion "
        "FROM incidents WHERE body IS NOT NULL"
    )[0]
    figures.model_calls = int(usage["calls"])
    figures.tokens["prompt"] = int(usage["prompt"])
    figures.tokens["completion"] = int(usage["completion"])
    for row in store.query(
        "SELECT event, count(*) AS n FROM audit_log WHERE event IN ('alert', 'alert_refused') "
        "GROUP BY event"
    ):
        outcome = "accepted" if row["event"] == "alert" else "refused"
        figures.alert_notifications[outcome] = int(row["n"])
    return figures
