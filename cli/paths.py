"""Where Stratus keeps its files when the user does not say."""

from __future__ import annotations

import os
from pathlib import Path


def data_dir() -> Path:
    """``$STRATUS_HOME``, else ``$XDG_DATA_HOME/stratus``, else ``~/.local/share/stratus``."""
    if os.environ.get("STRATUS_HOME"):
        return Path(os.environ["STRATUS_HOME"])
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / "stratus"


def lab_kubeconfig() -> Path:
    """The lab's kubeconfig: ``$STRATUS_LAB_KUBECONFIG`` or ``<data dir>/lab/kubeconfig``."""
    explicit = os.environ.get("STRATUS_LAB_KUBECONFIG")
    return Path(explicit) if explicit else data_dir() / "lab" / "kubeconfig"
