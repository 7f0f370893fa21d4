"""Where Stratus keeps its files when the user does not say."""

from __future__ import annotations

import os
from pathlib import Path

from store import db


def data_dir() -> Path:
    """``$STRATUS_HOME``, else ``$XDG_DATA_HOME/stratus``, else ``~/.local/share/stratus``;
    read in one place (``store.db``) so the database and the CLI's files agree."""
    return db.data_dir()


def lab_kubeconfig() -> Path:
    """The lab's kubeconfig: ``$STRATUS_LAB_KUBECONFIG`` or ``<data dir>/lab/kubeconfig``."""
    explicit = os.environ.get("STRATUS_LAB_KUBECONFIG")
    return Path(explicit) if explicit else data_dir() / "lab" / "kubeconfig"
