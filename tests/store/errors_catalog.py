"""Every error class of the family, with a sample of each, for the surface tests."""

from __future__ import annotations

import importlib
import pkgutil

from store.errors import Remedy, StratusError, family

PRODUCT = ("store", "tools", "policies", "undo", "proposals", "agents", "bot", "cli")
FACT = "deployment/web in shop changed at 10:02 (resourceVersion 41 -> 42)"


def every_error_class() -> list[type[StratusError]]:
    """The whole family: every product module imported, then every subclass of the root."""
    for name in PRODUCT:
        package = importlib.import_module(name)
        for info in pkgutil.walk_packages(package.__path__, f"{name}."):
            if not info.name.endswith("__main__"):
                importlib.import_module(info.name)
    return family()


def sample(cls: type[StratusError], remedy: Remedy | None = None) -> StratusError:
    """An error of ``cls`` carrying a fact, a subject and details. Classes with constructors
    of their own (a diff, a plan) are built through the root's: surfaces read only the
    family's fields."""
    error = cls.__new__(cls)
    StratusError.__init__(
        error,
        FACT,
        subject="prop-subject1",
        remedy=remedy,
        details={"record": "proposal", "open": "prop-open1"},
    )
    return error


def samples() -> list[StratusError]:
    """One error of each class with its own remedy, and one root error per remedy (a raise
    site may name any remedy)."""
    return [sample(cls) for cls in every_error_class()] + [
        sample(StratusError, remedy) for remedy in Remedy
    ]
