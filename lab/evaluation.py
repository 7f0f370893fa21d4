"""The evaluation harness: every scenario end to end on a lab of its own, scored.

For each scenario the harness starts a fresh lab (its own server on a free port, instant clock,
only the scenario's app), writes a kubeconfig for it, injects the scenario (which takes the
oracle's baseline first), hands the kubeconfig and namespace to an ``investigate`` callback,
then runs the oracle and scores what the callback reported against the scenario's root cause.

The lab knows nothing of the product: ``investigate`` is supplied by the composition root
(``cli/eval_commands.py``), talks to the lab only through the kubeconfig (and, if it wants, the
lab's control API at the kubeconfig's URL), and returns a plain dict (``Investigation``). So
the same harness judges the offline planner, the LLM planner or any other agent.

Scenarios run in parallel in worker processes (``jobs``), since the lab and the agent of one
scenario are Python threads that share one interpreter lock: a process per worker is what lets
two scenarios use two cores. The ``investigate`` callback must therefore be picklable (a
module-level function, or a ``functools.partial`` of one).
"""

from __future__ import annotations

import contextlib
import multiprocessing
import os
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, as_completed
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from lab import scenarios
from lab.client import LabClient
from lab.cluster.clock import INSTANT, REALTIME
from lab.eval_alerts import AlertProbe
from lab.runner import LabServer, write_kubeconfig

Investigate = Callable[[Path, str], dict[str, Any]]
MULTIPLE = "multiple"  # a scenario category: several faults, each with its own category


class EvalError(Exception):
    """The evaluation cannot run as asked (an unknown scenario, an unreadable pack)."""


class DiagnosisReport(BaseModel):
    """What the agent named as the cause."""

    model_config = ConfigDict(extra="forbid")
    kind: str
    name: str
    category: str
    mechanism: str = ""
    summary: str = ""


class Investigation(BaseModel):
    """What an ``investigate`` callback reports about one investigation, run to its end.

    Times are seconds from the start of the investigation; ``None`` when it never happened.
    ``proposals`` counts every action the agent proposed (executed or not), ``actions`` the
    forward actions executed, ``undos`` the undo actions executed."""

    model_config = ConfigDict(extra="forbid")
    incident: str = ""
    state: str
    reason: str = ""
    planner: str = ""
    detected: bool
    diagnosis: DiagnosisReport | None = None
    proposals: int = 0
    actions: int = 0
    undos: int = 0
    attempts: int = 0
    time_to_detect: float | None = None
    time_to_mitigate: float | None = None
    model_calls: int = 0
    tokens: int = 0
    context_tokens: int = 0
    notes: list[str] = []


@dataclass
class ScenarioResult:
    """One scenario's row: what was expected, what the agent did, what the oracle said."""

    scenario: str
    app: str
    namespace: str
    fault: bool  # False for a noop scenario (nothing injected)
    expected_category: str
    expected_resources: list[str]
    # "escalated" when no catalog action can fix the fault (the scenario says so): the right
    # end is an escalation, and the oracle stays unmitigated.
    expected: str = "mitigated"
    state: str = ""
    reason: str = ""
    planner: str = ""
    detected: bool = False
    false_positive: bool = False  # a noop scenario on which the agent proposed anything
    diagnosis: str = ""  # "Kind/name"
    category: str = ""
    mechanism: str = ""
    localized: bool | None = None  # None on a noop scenario
    category_correct: bool | None = None
    mitigated: bool = False  # the oracle
    collateral_damage: bool = False
    problems: list[str] = field(default_factory=list)
    damage: list[str] = field(default_factory=list)
    time_to_detect: float | None = None
    time_to_mitigate: float | None = None
    proposals: int = 0
    actions: int = 0
    undos: int = 0
    attempts: int = 0
    tokens: int = 0
    model_calls: int = 0
    context_tokens: int = 0
    seconds: float = 0.0  # the whole run: lab start, inject, investigate, oracle
    # With --prometheus (lab.eval_alerts): the shipped alerts that fired after the fault, and
    # whether they all cleared after the investigation. None: not measured ("n/a").
    alerts_fired: list[str] | None = None
    alerts_cleared: bool | None = None
    error: str = ""  # the harness could not run it (the lab, the callback)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass
class EvalReport:
    results: list[ScenarioResult]
    planner: str
    jobs: int
    seconds: float  # wall time of the whole evaluation

    def totals(self) -> dict[str, Any]:
        faults = [r for r in self.results if r.fault]
        noops = [r for r in self.results if not r.fault]
        mitigated = [r for r in faults if r.mitigated]
        detect_times = [r.time_to_detect for r in faults if r.time_to_detect is not None]
        mitigate_times = [r.time_to_mitigate for r in mitigated if r.time_to_mitigate is not None]
        return {
            "scenarios": len(self.results),
            "fault_scenarios": len(faults),
            "noop_scenarios": len(noops),
            "detected": sum(r.detected for r in faults),
            "false_positives": sum(r.false_positive for r in noops),
            "localized": sum(bool(r.localized) for r in faults),
            "category_correct": sum(bool(r.category_correct) for r in faults),
            "mitigated": len(mitigated),
            "escalated_as_expected": sum(
                r.expected == "escalated" and r.state == "escalated" for r in faults
            ),
            "mitigated_rate": round(len(mitigated) / len(faults), 4) if faults else None,
            "collateral_damage": sum(r.collateral_damage for r in self.results),
            "errors": sum(bool(r.error) for r in self.results),
            "median_time_to_detect": _median(detect_times),
            "median_time_to_mitigate": _median(mitigate_times),
            "actions": sum(r.actions for r in self.results),
            "undos": sum(r.undos for r in self.results),
            "attempts": sum(r.attempts for r in self.results),
            "tokens": sum(r.tokens for r in self.results),
            "model_calls": sum(r.model_calls for r in self.results),
            "alerts": _alert_totals(self.results),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "planner": self.planner,
            "jobs": self.jobs,
            "seconds": round(self.seconds, 2),
            "totals": self.totals(),
            "scenarios": [r.to_dict() for r in self.results],
        }


def _alert_totals(results: Sequence[ScenarioResult]) -> str:
    """ "n/a" without --prometheus, else "cleared/fired" over the scenarios whose alerts fired."""
    measured = [r for r in results if r.alerts_fired is not None]
    if not measured:
        return "n/a"
    fired = [r for r in measured if r.alerts_fired]
    return f"{sum(bool(r.alerts_cleared) for r in fired)}/{len(fired)} cleared"


def _median(values: Sequence[float]) -> float | None:
    return round(statistics.median(values), 3) if values else None


# ------------------------------------------------------------------ choosing scenarios


def _check_pack(pack: Path) -> None:
    if not pack.exists():
        raise EvalError(f"scenario directory {pack} does not exist")
    if not pack.is_dir():
        raise EvalError(f"{pack} is not a directory (--scenarios takes a scenario pack folder)")
    if not os.access(pack, os.R_OK | os.X_OK):
        raise EvalError(f"scenario directory {pack} cannot be read (permission denied)")


def select(names: Sequence[str] = (), pack: Path | None = None) -> list[str]:
    """The scenarios to run: ``names`` (looked up in the pack, then the bundled library), or
    every scenario of the pack, or every bundled scenario. Each is loaded and validated here,
    so a bad name or file fails before any lab starts."""
    if pack is not None:
        _check_pack(pack)
    folders = [pack, scenarios.SCENARIOS_DIR] if pack is not None else [scenarios.SCENARIOS_DIR]
    try:
        if not names:
            found = scenarios.list_scenarios(pack or scenarios.SCENARIOS_DIR)
            if not found:
                raise EvalError(f"no scenarios (*.yaml) in {pack or scenarios.SCENARIOS_DIR}")
            return [s.name for s in found]
        chosen: list[str] = []
        for name in names:
            if scenarios.find_scenario(name, folders) is None:
                where = f"{pack} or the bundled library" if pack else "the bundled library"
                raise EvalError(
                    f'unknown scenario "{name}" (not in {where}); '
                    'run "stratus lab scenarios" for the list'
                )
            scenarios.scenario_request(name, pack)  # validates it and its faults
            if name not in chosen:
                chosen.append(name)
        return chosen
    except scenarios.ScenarioError as error:
        raise EvalError(str(error)) from error
    except OSError as error:
        raise EvalError(f"cannot read the scenarios: {error}") from error


# ------------------------------------------------------------------ one scenario


def _expected(request: dict[str, Any]) -> tuple[str, set[str], list[str], set[str]]:
    """(category, accepted categories, resources as "Kind/name", accepted keys lower-cased)."""
    scenario = scenarios.Scenario.model_validate(request["scenario"])
    if scenario.root_cause is None:
        return "none", set(), [], set()
    category = scenario.root_cause.category
    accepted = {category}
    if category == MULTIPLE:  # any one of the faults' own categories names a real cause
        accepted |= {str(fault["category"]) for fault in request["faults"].values()}
    resources = [f"{r.kind}/{r.name}" for r in scenario.root_cause.resources]
    return category, accepted, resources, {r.lower() for r in resources}


def _blank(request: dict[str, Any]) -> ScenarioResult:
    """A result with what the scenario expects and nothing measured yet."""
    scenario = scenarios.Scenario.model_validate(request["scenario"])
    category, _, resources, _ = _expected(request)
    return ScenarioResult(
        scenario=scenario.name,
        app=scenario.app,
        namespace=scenario.namespace,
        fault=not scenario.is_noop,
        expected_category=category,
        expected_resources=resources,
        expected=scenario.expected,
    )


def _named_row(name: str, pack: Path | None) -> ScenarioResult:
    """The row of a scenario whose request cannot be built (now): its name and nothing else."""
    try:
        return _blank(scenarios.scenario_request(name, pack))
    except Exception:  # the row is what is kept; the error that made it is the caller's
        return ScenarioResult(
            scenario=name,
            app="",
            namespace="",
            fault=True,
            expected_category="",
            expected_resources=[],
        )


def _reason(stage: str, error: BaseException) -> str:
    """A row's ``error``: which part of its run failed, and the error's own words."""
    said = " ".join(str(error).split()) or "(no message)"
    if isinstance(error, ValidationError):
        said = f"the investigation's report is not valid: {said}"
    return f"{stage}: {type(error).__name__}: {said}"


def run_scenario(
    name: str,
    investigate: Investigate,
    *,
    pack: Path | None = None,
    mode: str = INSTANT,
    alert_rules: Path | None = None,
) -> ScenarioResult:
    """Run one scenario on a lab of its own and score it. Whatever fails in any part of it —
    loading the scenario, the lab, the injection, the callback, its report, the oracle, the
    scoring, stopping the lab — is the row's ``error``, saying which part and why; nothing is
    raised: one broken scenario never costs an evaluation a row (issue 22)."""
    started = time.perf_counter()
    stage = "loading the scenario"
    result = _named_row(name, pack)
    server = None
    try:
        request = scenarios.scenario_request(name, pack)
        result = _blank(request)
        scenario = scenarios.Scenario.model_validate(request["scenario"])
        _, accepted, _, keys = _expected(request)
        stage = "starting the lab"
        # Alerts need time to pass as it does for Prometheus: a real-time lab.
        server = LabServer(mode=REALTIME if alert_rules else mode, apps=[scenario.app]).start()
        control = LabClient(server.url)
        with contextlib.ExitStack() as cleanup:
            folder = cleanup.enter_context(tempfile.TemporaryDirectory(prefix="stratus-eval-"))
            probe = None
            if alert_rules is not None:
                probe = cleanup.enter_context(
                    AlertProbe(
                        lab_url=server.url,
                        namespace=scenario.namespace,
                        rules=alert_rules,
                        workdir=Path(folder) / "prometheus",
                    )
                )
            stage = "injecting the fault"
            control.post(f"/lab/v1/scenarios/{scenario.name}/inject", request)
            if probe is not None:
                result.alerts_fired = probe.fired()
            kubeconfig = write_kubeconfig(
                Path(folder) / "kubeconfig", server.url, scenario.namespace
            )
            stage = "the investigation"
            raw = investigate(kubeconfig, scenario.namespace)
            if probe is not None:
                stage = "the alerts"
                result.alerts_cleared = probe.cleared() if result.alerts_fired else None
        stage = "the oracle's check"
        verdict = control.get(f"/lab/v1/scenarios/{scenario.name}/check")
        stage = "scoring the investigation's report"
        _score(result, Investigation.model_validate(raw), accepted, keys)
        result.mitigated = bool(verdict["mitigated"])
        result.collateral_damage = not verdict["no_collateral_damage"]
        result.problems = list(verdict["problems"])
        result.damage = list(verdict["collateral_damage"])
    except (Exception, SystemExit) as error:  # a callback's sys.exit is its failure too
        result.error = _reason(stage, error)
    finally:
        if server is not None:
            try:
                server.stop()
            except Exception as error:
                result.error = result.error or _reason("stopping the lab", error)
        result.seconds = round(time.perf_counter() - started, 3)
    return result


def _score(
    result: ScenarioResult, report: Investigation, accepted: set[str], keys: set[str]
) -> None:
    result.state = report.state
    result.reason = report.reason
    result.planner = report.planner
    result.detected = report.detected
    result.proposals = report.proposals
    result.actions = report.actions
    result.undos = report.undos
    result.attempts = report.attempts
    result.time_to_detect = report.time_to_detect
    result.time_to_mitigate = report.time_to_mitigate
    result.tokens = report.tokens
    result.model_calls = report.model_calls
    result.context_tokens = report.context_tokens
    if report.diagnosis is not None:
        named = f"{report.diagnosis.kind}/{report.diagnosis.name}"
        result.diagnosis = named
        result.category = report.diagnosis.category
        result.mechanism = report.diagnosis.mechanism
    if result.fault:
        diagnosis = report.diagnosis
        result.localized = diagnosis is not None and result.diagnosis.lower() in keys
        result.category_correct = diagnosis is not None and diagnosis.category in accepted
    else:
        result.false_positive = report.proposals > 0


# ------------------------------------------------------------------ all of them


def default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 4))


def evaluate(
    names: Sequence[str],
    investigate: Investigate,
    *,
    pack: Path | None = None,
    jobs: int | None = None,
    planner: str = "",
    on_result: Callable[[ScenarioResult], None] | None = None,
    alert_rules: Path | None = None,
) -> EvalReport:
    """Run the scenarios (already ``select``-ed), ``jobs`` at a time, each in its own lab;
    ``on_result`` sees each result as it finishes. Results come back in ``names`` order."""
    workers = max(1, min(jobs or default_jobs(), len(names) or 1))
    started = time.perf_counter()
    results: list[ScenarioResult | None] = [None] * len(names)

    def done(index: int, result: ScenarioResult) -> None:
        results[index] = result
        if on_result is not None:
            # Progress is for the eye: a progress line that cannot be written (a closed
            # terminal) must not cost the evaluation its rows.
            with contextlib.suppress(Exception):
                on_result(result)

    if workers == 1:
        for index, name in enumerate(names):
            done(index, run_scenario(name, investigate, pack=pack, alert_rules=alert_rules))
    else:
        # spawn: a fresh interpreter per worker, not a fork of a process that runs threads.
        context = multiprocessing.get_context("spawn")
        with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
            futures: dict[Future[ScenarioResult], int] = {
                pool.submit(
                    run_scenario, name, investigate, pack=pack, alert_rules=alert_rules
                ): index
                for index, name in enumerate(names)
            }
            for future in as_completed(futures):
                index = futures[future]
                try:
                    done(index, future.result())
                except Exception as error:  # the worker itself died (killed, out of memory)
                    done(index, _crashed(names[index], pack, error))
    finished = [
        r if r is not None else _crashed(names[i], pack, RuntimeError("no result came back"))
        for i, r in enumerate(results)
    ]
    return EvalReport(finished, planner, workers, time.perf_counter() - started)


def _crashed(name: str, pack: Path | None, error: BaseException) -> ScenarioResult:
    result = _named_row(name, pack)
    result.error = _reason("the worker process", error)
    return result


# ------------------------------------------------------------------ the table


def _mark(value: bool | None) -> str:
    return "-" if value is None else ("yes" if value else "NO")


def _seconds(value: float | None) -> str:
    return "-" if value is None else f"{value:.2f}"


ERROR_WIDTH = 100  # of a row's error in the table; the JSON has all of it
COLUMNS = (
    "scenario",
    "detected",
    "localized",
    "category",
    "mitigated",
    "damage",
    "ttd s",
    "ttm s",
    "actions",
    "undos",
    "attempts",
    "tokens",
    "calls",
    "alerts",
    "end",
)


def _row(r: ScenarioResult) -> list[str]:
    if r.error:
        return [str(r.scenario), "error", *[""] * (len(COLUMNS) - 3), r.error[:ERROR_WIDTH]]
    detected = ("FP" if r.false_positive else "no") if not r.fault else _mark(r.detected)
    if not r.fault and not r.false_positive and r.detected:
        detected = "noted"  # saw something unhealthy but proposed nothing
    return [
        r.scenario,
        detected,
        _mark(r.localized),
        _mark(r.category_correct),
        "escalated" if _escalated_as_expected(r) else _mark(r.mitigated),
        "YES" if r.collateral_damage else "no",
        _seconds(r.time_to_detect),
        _seconds(r.time_to_mitigate),
        str(r.actions),
        str(r.undos),
        str(r.attempts),
        str(r.tokens),
        str(r.model_calls),
        _alerts(r),
        f"{r.state} ({r.reason})" if r.reason else r.state,
    ]


def _safe_row(r: ScenarioResult) -> list[str]:
    """A row of the table; one whose values cannot be shown is shown as an error, never
    dropped (the JSON keeps what was measured)."""
    try:
        return _row(r)
    except Exception as error:
        shown = replace(r, error=_reason("showing the row", error))
        return _row(shown)


def _escalated_as_expected(r: ScenarioResult) -> bool:
    return r.expected == "escalated" and r.state == "escalated" and not r.mitigated


def _alerts(r: ScenarioResult) -> str:
    if r.alerts_fired is None:
        return "n/a"
    if not r.alerts_fired:
        return "none"
    cleared = {True: "cleared", False: "NOT cleared", None: "?"}[r.alerts_cleared]
    return f"{len(r.alerts_fired)} fired, {cleared}"


def _fraction(count: int, total: int) -> str:
    return f"{count}/{total}" if total else "-"


def table(report: EvalReport) -> str:
    """The report as an aligned plain-text table with a totals line."""
    t = report.totals()
    faults = t["fault_scenarios"]
    total = [
        f"total ({t['scenarios']})",
        f"{_fraction(t['detected'], faults)} FP {t['false_positives']}",
        _fraction(t["localized"], faults),
        _fraction(t["category_correct"], faults),
        _fraction(t["mitigated"], faults),
        str(t["collateral_damage"]),
        _seconds(t["median_time_to_detect"]),
        _seconds(t["median_time_to_mitigate"]),
        str(t["actions"]),
        str(t["undos"]),
        str(t["attempts"]),
        str(t["tokens"]),
        str(t["model_calls"]),
        t["alerts"],
        f"{t['errors']} error(s)" if t["errors"] else "",
    ]
    rows = [list(COLUMNS), *(_safe_row(r) for r in report.results), total]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]

    def line(row: list[str]) -> str:
        cells = [
            cell.ljust(widths[i]) if i in (0, len(row) - 1) else cell.rjust(widths[i])
            for i, cell in enumerate(row)
        ]
        return "  ".join(cells).rstrip()

    rule = "  ".join("-" * w for w in widths)
    rate = f"{t['mitigated_rate']:.0%}" if t["mitigated_rate"] is not None else "-"
    summary = (
        f"{t['mitigated']} of {faults} fault scenarios mitigated ({rate}), "
        + (
            f"{t['escalated_as_expected']} escalated as expected (no catalog action fixes them), "
            if t["escalated_as_expected"]
            else ""
        )
        + f"{t['false_positives']} false positive(s) on {t['noop_scenarios']} noop scenario(s), "
        f"{t['collateral_damage']} with collateral damage; {report.seconds:.1f} s with "
        f"{report.jobs} job(s), planner {report.planner or '-'}"
    )
    return "\n".join(
        [line(rows[0]), rule, *(line(r) for r in rows[1:-1]), rule, line(rows[-1]), "", summary]
    )
