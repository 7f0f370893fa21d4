"""Which tier a test belongs to: ``unit``, ``service`` or ``e2e``.

- ``unit``: no network sockets (pytest-socket blocks them; Unix socket pairs stay allowed because
  every asyncio event loop wakes itself through one) and no processes. The whole tier runs in
  under a minute.
- ``service``: an in-process lab, a fake model server or a Prometheus over real HTTP.
- ``e2e``: the Slack playground, a browser, the kubectl matrix, or a ``stratus`` process.

A test says its tier with a marker (``pytestmark = pytest.mark.service``) when it wants to; most
say nothing and are classified here from what they use, so nobody has to edit sixty files and
the tiers stay true when a test gains a fixture. What a test uses is read from its code and
from the code of every fixture it needs: the global names those functions reference, followed
into helper functions defined in the test suite. A name that resolves to something that opens a
socket (the lab's server, an HTTP client, the Kubernetes client …) makes the test ``service``; one
that starts a process, a browser or the playground makes it ``e2e``. Anything unsure errs towards
a slower tier, never towards ``unit``: a misfiled unit test would fail on the blocked socket.
"""

from __future__ import annotations

import types
from collections.abc import Callable, Iterator
from typing import Any

import pytest

TIERS = ("unit", "service", "e2e")

# Fixtures that by themselves put a test in a tier, whatever their code references.
E2E_FIXTURES = frozenset({"kubectl", "playground"})
SERVICE_FIXTURES = frozenset({"lab_session", "fake_llm"})

# Modules whose objects start a process, a browser or the Slack playground.
E2E_MODULES = (
    "subprocess",
    "multiprocessing",
    "playwright",
    "lab.slack.server",
    "tests.bot.demo_process",
    "tests.conftest.stratus",
)
# Modules whose objects open a network socket.
SERVICE_MODULES = (
    "socket",
    "ssl",
    "http",
    "urllib.request",
    "requests",
    "aiohttp",
    "websocket",
    "kubernetes",
    "slack_sdk.web",
    "lab.runner",
    "lab.evaluation",
    "lab.eval_alerts",
    "lab.client",
    "lab.llm",
    "lab.prometheus",
    "lab.slack.client",
    "tools.k8s",
    "tools.prometheus",
    "tests.faultproxy",
    "tests.prometheus_lab",
    "tests.tools.promservers",
)


def _origin(value: Any) -> str:
    """The dotted place a referenced global comes from: a module's name, or an object's module
    and name (``tests.conftest.stratus``)."""
    if isinstance(value, types.ModuleType):
        return value.__name__
    module = getattr(value, "__module__", None) or ""
    name = getattr(value, "__qualname__", None) or getattr(value, "__name__", "")
    return f"{module}.{name}" if module else ""


def _under(origin: str, prefixes: tuple[str, ...]) -> bool:
    return any(origin == p or origin.startswith(p + ".") for p in prefixes)


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _references(func: Callable[..., Any], seen: set[int]) -> Iterator[str]:
    """The origins of the globals ``func`` references, following helpers of the test suite."""
    func = getattr(func, "__wrapped__", func)
    code = getattr(func, "__code__", None)
    if code is None or id(code) in seen:
        return
    seen.add(id(code))
    namespace: dict[str, Any] = getattr(func, "__globals__", {})
    for inner in _codes(code):
        for name in inner.co_names:
            if name not in namespace:
                continue
            value = namespace[name]
            origin = _origin(value)
            yield origin
            if origin.startswith("tests.") and callable(value):
                target = value.__init__ if isinstance(value, type) else value
                yield from _references(target, seen)
                if isinstance(value, type):
                    for attribute in vars(value).values():
                        if callable(attribute):
                            yield from _references(attribute, seen)


def _fixture_functions(item: pytest.Item) -> Iterator[Callable[..., Any]]:
    info = getattr(item, "_fixtureinfo", None)
    if info is None:
        return
    for definitions in info.name2fixturedefs.values():
        for definition in definitions:
            yield definition.func


def classify(item: pytest.Item) -> str:
    for tier in TIERS:
        if item.get_closest_marker(tier) is not None:
            return tier
    if item.path.parent.name == "unit" and item.path.parent.parent.name == "tests":
        return "unit"  # tests/unit/ holds only unit tests, whatever they import
    names = set(getattr(item, "fixturenames", ()))
    if names & E2E_FIXTURES:
        return "e2e"
    seen: set[int] = set()
    functions = [getattr(item, "function", None), *_fixture_functions(item)]
    origins = {o for f in functions if f is not None for o in _references(f, seen)}
    if any(_under(o, E2E_MODULES) for o in origins):
        return "e2e"
    if names & SERVICE_FIXTURES or any(_under(o, SERVICE_MODULES) for o in origins):
        return "service"
    return "unit"


def mark(items: list[pytest.Item]) -> None:
    """Give every test its tier marker; unit tests also get pytest-socket's ``disable_socket``,
    so the tier is enforced in every run, not only when the unit tier runs alone."""
    for item in items:
        tier = classify(item)
        if item.get_closest_marker(tier) is None:
            item.add_marker(getattr(pytest.mark, tier))
        if tier == "unit":
            item.add_marker(pytest.mark.disable_socket)


def slowest_files_first(items: list[pytest.Item]) -> None:
    """Order the files by their slowest tier (e2e, then service, then unit), each file's tests
    kept together and in their own order. xdist's ``--dist loadfile`` hands files out in this
    order: a long e2e file handed out last kept one worker busy while the others idled (about
    two minutes of a run on four workers); started first, it runs beside the short ones."""
    rank = {tier: position for position, tier in enumerate(reversed(TIERS))}  # e2e first
    first: dict[str, int] = {}
    for item in items:
        marker = next((t for t in TIERS if item.get_closest_marker(t) is not None), "e2e")
        path = str(item.path)
        first[path] = min(first.get(path, len(TIERS)), rank[marker])
    order = {path: index for index, path in enumerate(dict.fromkeys(str(i.path) for i in items))}
    items.sort(key=lambda item: (first[str(item.path)], order[str(item.path)]))
