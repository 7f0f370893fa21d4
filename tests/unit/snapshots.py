"""The recorded snapshots of tests/fixtures/snapshots/ (see record_snapshots.py there)."""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from agents.snapshot import Snapshot

FOLDER = Path(__file__).resolve().parent.parent / "fixtures" / "snapshots"
NAMES = sorted(p.stem for p in FOLDER.glob("*.json"))


@dataclass(frozen=True)
class Recorded:
    scenario: str
    root_cause: dict[str, Any] | None  # {"category": …, "resources": [[kind, name], …]}
    raw: dict[str, Any]  # the snapshot's fields as recorded

    def snapshot(self) -> Snapshot:
        """A fresh Snapshot each time: a test may not see another test's changes."""
        raw = json.loads(json.dumps(self.raw))
        return Snapshot(
            namespace=raw["namespace"],
            objects=raw["objects"],
            cluster=raw["cluster"],
            logs=raw["logs"],
            previous_logs=raw["previous_logs"],
            unavailable=tuple(raw["unavailable"]),
        )


@cache
def recorded(name: str) -> Recorded:
    document = json.loads((FOLDER / f"{name}.json").read_text())
    return Recorded(document["scenario"], document["root_cause"], document["snapshot"])
