"""The page's "inject a fault" menu: which lab scenarios it offers and what injecting one does.

The playground is a stand-in for Slack and knows nothing of the cluster. Whoever starts it with
a lab next to it (``stratus demo``) passes the scenarios to offer and a callback that injects
one — ``stratus demo`` calls the lab's control API (``/lab/v1/scenarios/NAME/inject``). Without
a menu the page shows no such control and the endpoints answer ``no_lab``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Json = dict[str, Any]


class InjectFailed(Exception):
    """The callback could not inject the scenario; the message is shown to the person."""


@dataclass(frozen=True)
class ScenarioChoice:
    name: str
    app: str
    namespace: str
    description: str

    def as_json(self) -> Json:
        return {
            "name": self.name,
            "app": self.app,
            "namespace": self.namespace,
            "description": self.description,
        }


@dataclass(frozen=True)
class FaultMenu:
    """The scenarios the page offers and the (blocking) callback that injects one by name; it
    runs on a worker thread and returns what it applied (``{"namespace", "applied", …}``) or
    raises ``InjectFailed``."""

    scenarios: tuple[ScenarioChoice, ...]
    inject: Callable[[str], Json]

    def find(self, name: str) -> ScenarioChoice | None:
        return next((s for s in self.scenarios if s.name == name), None)
