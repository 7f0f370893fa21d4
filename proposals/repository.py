"""Proposals in the store: the whole aggregate as a versioned JSON body, with the columns
queries need, written only by compare-and-set on ``version``."""

from __future__ import annotations

import json
from typing import Any

from proposals.errors import ProposalNotFound, StaleProposal
from proposals.model import OPEN, Proposal, ProposalState
from store.db import Store


class ProposalRepository:
    def __init__(self, store: Store) -> None:
        self.store = store

    def insert(self, proposal: Proposal) -> None:
        with self.store.immediate() as db:
            db.table("proposals").insert(self._columns(proposal))

    def save(self, proposal: Proposal, *, expected_version: int) -> Proposal:
        """Store ``proposal`` as the next version, only if nobody saved since we loaded it."""
        saved = proposal.model_copy(update={"version": expected_version + 1})
        with self.store.immediate() as db:
            cursor = db.execute(
                "UPDATE proposals SET state = ?, body = ?, version = ?, updated_at = ?, "
                "plan = ? WHERE id = ? AND version = ?",
                [
                    saved.state.value,
                    saved.body(),
                    saved.version,
                    saved.updated_at.isoformat(),
                    json.dumps({"digest": saved.plan.digest}),
                    saved.id,
                    expected_version,
                ],
            )
            if not cursor.rowcount:
                raise StaleProposal(
                    f"proposal {proposal.id} was changed by someone else first", subject=proposal.id
                )
        return saved

    def get(self, proposal_id: str) -> Proposal:
        rows = self.store.query(
            "SELECT body FROM proposals WHERE id = ? AND body IS NOT NULL", [proposal_id]
        )
        if not rows:
            raise ProposalNotFound(f"no proposal {proposal_id}", subject=proposal_id)
        return Proposal.model_validate_json(rows[0]["body"])

    def find(
        self,
        *,
        states: frozenset[ProposalState] | None = None,
        incident_id: str | None = None,
        undo_entry: str | None = None,
        limit: int = 100,
    ) -> list[Proposal]:
        sql = "SELECT body FROM proposals WHERE body IS NOT NULL"
        params: list[Any] = []
        if states:
            sql += f" AND state IN ({', '.join('?' for _ in states)})"
            params.extend(s.value for s in sorted(states))
        if incident_id:
            sql += " AND incident_id = ?"
            params.append(incident_id)
        if undo_entry:
            sql += " AND json_extract(body, '$.undo_entry') = ?"
            params.append(undo_entry)
        sql += " ORDER BY created_at DESC, id LIMIT ?"
        params.append(limit)
        return [Proposal.model_validate_json(r["body"]) for r in self.store.query(sql, params)]

    def open_ones(self) -> list[Proposal]:
        return self.find(states=OPEN, limit=10_000)

    @staticmethod
    def _columns(proposal: Proposal) -> dict[str, Any]:
        return {
            "id": proposal.id,
            "incident_id": proposal.incident_id,
            "action": proposal.action,
            "target": str(proposal.target),
            "state": proposal.state.value,
            "plan": json.dumps({"digest": proposal.plan.digest}),
            "created_at": proposal.created_at.isoformat(),
            "updated_at": proposal.updated_at.isoformat(),
            "version": proposal.version,
            "requester": proposal.requester,
            "body": proposal.body(),
        }
