"""``UndoConflict``: the object moved since Stratus wrote it, so undoing would overwrite
someone's change. It carries fields — what happened, the diff, the resourceVersion Stratus
wrote and the one there now, and who changed it since — for each surface to put in its own
words (the CLI offers ``--force``; Slack has no such flag). Its message is a neutral sentence
for logs and for surfaces that have no words of their own yet.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any

from tools import errors

MOVED = "moved"  # a replace: the object changed since Stratus wrote it
DELETED = "deleted"  # a replace: the object was deleted since
RECREATED = "recreated"  # a delete: an object of that name was created again since


class UndoConflict(errors.UndoConflict):
    """Undo refused because the object moved; ``force`` overrides it.

    ``changed_by`` names the later Stratus writes to the object as ``actor (intent)``; empty
    means it was changed outside Stratus; None means nobody looked yet."""

    def __init__(
        self,
        *,
        situation: str,
        label: str,
        diff: str = "",
        written_rv: str | None = None,
        current_rv: str | None = None,
        changed_by: tuple[str, ...] | None = None,
        **fields: Any,
    ) -> None:
        self.situation = situation
        self.label = label
        self.written_rv = written_rv
        self.current_rv = current_rv
        self.changed_by = changed_by
        fields.setdefault("subject", label)
        fields.setdefault(
            "details",
            {
                "situation": situation,
                "written_rv": written_rv,
                "current_rv": current_rv,
                "changed_by": list(changed_by) if changed_by is not None else None,
            },
        )
        super().__init__(self._sentence(), diff, **fields)

    @property
    def digest(self) -> str:
        """What a person is shown of this conflict (the object, what moved, the diff, the
        resourceVersion there now), as a short digest: a Force offered for it is bound to it,
        so a Force pressed after the object moved again overwrites nothing unseen."""
        material = json.dumps(
            [self.situation, self.label, self.diff, self.written_rv, self.current_rv]
        )
        return hashlib.sha256(material.encode()).hexdigest()[:16]

    def naming(self, changed_by: tuple[str, ...]) -> UndoConflict:
        """The same conflict, saying who changed the object since."""
        return UndoConflict(
            situation=self.situation,
            label=self.label,
            diff=self.diff,
            written_rv=self.written_rv,
            current_rv=self.current_rv,
            changed_by=changed_by,
        )

    def _sentence(self) -> str:
        if self.situation == RECREATED:
            what = f"{self.label} was re-created since Stratus deleted it; undo would replace it"
        elif self.situation == DELETED:
            what = f"{self.label} was deleted since Stratus changed it; undo would re-create it"
        else:
            what = (
                f"{self.label} changed since Stratus wrote it (resourceVersion "
                f"{self.written_rv or '?'} → {self.current_rv or '?'}); undo would overwrite "
                "that change"
            )
        if self.changed_by is None:
            return what
        if not self.changed_by:
            return f"{what}; it was changed outside Stratus"
        return f"{what}; changed since by " + ", ".join(self.changed_by)
