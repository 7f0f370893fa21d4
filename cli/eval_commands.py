"""``stratus eval``: the incident workflow judged on the lab's scenarios.

The harness (``lab.evaluation``) owns the labs, the oracle and the scores; this module is the
composition root's half: for each scenario it wires what ``stratus investigate`` wires — a
fresh SQLite store, the proposal service with the executor, the offline (or LLM) planner and
the workflow — under a policy that allows every action without a human, runs the incident to
its end and reports what it did. The workflow runs unmodified; only the policy and the way
time passes differ: on the lab's instant clock, letting time pass means asking the lab to
settle with that horizon (``/lab/v1/settle``), as ``agents.verify`` expects of a composition
root; on a realtime lab it is a sleep.
"""

from __future__ import annotations

import functools
import json
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import click

from agents.planner import Planner
from agents.planner.offline import OfflinePlanner
from cli.context import load_policy
from incidents.model import Incident
from incidents.settings import WorkflowConfig
from incidents.workflow import IncidentWorkflow
from lab import evaluation
from lab.client import LabClient
from lab.cluster.clock import INSTANT
from lab.prometheus import unavailable as prometheus_unavailable
from lab.runner import server_url_from_kubeconfig
from proposals.model import ProposalState
from proposals.service import ProposalService
from store.db import Store
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.reads import ClusterReader

REQUESTER = "eval:stratus"
# Every action allowed, irreversible ones too: the evaluation measures the agent, not the
# approvers. Written as a policy file and loaded by the real loader.
AUTO_APPROVE = """\
apiVersion: stratus/v1
kind: ApprovalPolicy
metadata: {name: eval-auto-approve}
rules:
  - name: eval-allows-everything
    description: The evaluation approves every action the agent proposes.
    decision: allow
    allow_irreversible: true
"""
EXECUTED = frozenset({ProposalState.EXECUTED, ProposalState.UNDONE})
# The workflow's own bound on one verification's wait, in seconds of wall time. On the instant
# clock each poll lets POLL_INTERVAL seconds pass on the lab's clock (a settle with that
# horizon), so two looks agree long before it. The interval is the workflow's default and must
# exceed the health score's log window (1 s), or a caller's last failed request before the fix
# would still count as "now".
SETTLE_TIMEOUT = 20.0
MOST_ERRORS_EXIT = 100  # exit status for that many scenarios not run, or more
POLL_INTERVAL = 2.0


def _require_model(planner: str) -> None:
    """``--planner llm`` without a model is a usage error, reported before any lab starts."""
    if planner != "llm":
        return
    # Imported here: the model client libraries take seconds to import, in every worker.
    from agents.llm.config import LLMConfig

    if LLMConfig.from_env(os.environ) is None:
        raise click.ClickException(
            "--planner llm needs a model: set OPENAI_API_KEY (and OPENAI_BASE_URL, "
            "STRATUS_MODEL for another server)"
        )


def _planner(name: str, kube: KubeClient) -> Planner | None:
    if name != "llm":
        return None
    _require_model(name)
    from agents.llm import planner_from_env

    return planner_from_env(ClusterReader(kube))


def _seconds(incident: Incident, at: Any) -> float | None:
    return None if at is None else round((at - incident.created_at).total_seconds(), 3)


def investigate(kubeconfig: Path, namespace: str, *, planner: str = "offline") -> dict[str, Any]:
    """One investigation of ``namespace`` run to its end, auto-approved, with a store of its
    own; what it did as ``lab.evaluation.Investigation`` fields."""
    control = LabClient(server_url_from_kubeconfig(kubeconfig))
    instant = control.get("/lab/v1/info")["mode"] == INSTANT

    def pause(seconds: float) -> None:
        if instant:
            control.post("/lab/v1/settle", {"horizon": seconds})
        else:
            time.sleep(seconds)

    with tempfile.TemporaryDirectory(prefix="stratus-eval-") as folder:
        policy_dir = Path(folder) / "policy"
        policy_dir.mkdir()
        (policy_dir / "eval.yaml").write_text(AUTO_APPROVE)
        policy = load_policy(policy_dir)
        store = Store(Path(folder) / "stratus.db")
        kube = KubeClient(kubeconfig=str(kubeconfig))
        try:
            service = ProposalService(
                store=store, executor=Executor(kube, store), policy=lambda: policy
            )
            flow = IncidentWorkflow(
                service=service,
                kube=kube,
                offline=OfflinePlanner(),
                llm=_planner(planner, kube),
                config=WorkflowConfig(settle_timeout=SETTLE_TIMEOUT, poll_interval=POLL_INTERVAL),
                pause=pause,
            )
            incident, _ = flow.start(namespace, requester=REQUESTER, source="eval")
            done = flow.advance(incident.id, budget=200)
            return _report(done, service)
        finally:
            kube.close()
            store.close()


def _report(incident: Incident, service: ProposalService) -> dict[str, Any]:
    undo_ids = {p for a in incident.attempts for p in a.undo_proposals}
    forward_ids = {p for a in incident.attempts for p in a.proposals}
    forward_ids |= {p.id for p in service.by_incident(incident.id) if p.action != "undo"}
    forward = [service.get(p) for p in sorted(forward_ids - undo_ids)]
    undos = [service.get(p) for p in sorted(undo_ids)]
    diagnosis = incident.diagnosis
    usage = incident.usage
    return {
        "incident": incident.id,
        "state": str(incident.state),
        "reason": incident.reason,
        "planner": incident.planner,
        "detected": incident.detected_at is not None,
        "diagnosis": None
        if diagnosis is None
        else {
            "kind": diagnosis.resource.kind,
            "name": diagnosis.resource.name,
            "category": str(diagnosis.category),
            "mechanism": diagnosis.mechanism,
            "summary": diagnosis.summary,
        },
        "proposals": len(forward),
        "actions": sum(p.state in EXECUTED for p in forward),
        "undos": sum(p.state in EXECUTED for p in undos),
        "attempts": len(incident.attempts),
        "time_to_detect": _seconds(incident, incident.detected_at),
        "time_to_mitigate": _seconds(incident, incident.mitigated_at),
        "model_calls": usage.model_calls,
        "tokens": usage.prompt_tokens + usage.completion_tokens,
        "context_tokens": usage.context_tokens,
    }


ALERT_RULES = Path(__file__).resolve().parent.parent / "manifests" / "prometheus" / "alerts.yaml"


@click.command("eval")
@click.option(
    "--scenarios",
    "pack",
    type=click.Path(path_type=Path),
    default=None,
    help="A scenario pack folder (DIR/*.yaml, faults in DIR/faults/); default: the bundled "
    "scenarios.",
)
@click.option(
    "--planner",
    type=click.Choice(["offline", "llm"]),
    default="offline",
    show_default=True,
    help="llm needs OPENAI_API_KEY (and falls back to offline as the workflow does).",
)
@click.option(
    "--json",
    "json_out",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write the full report as JSON to this file ('-' for standard output).",
)
@click.option(
    "--jobs",
    type=click.IntRange(1, 64),
    default=None,
    help="Scenarios run at once, each in its own process and lab [default: min(CPUs, 4)].",
)
@click.option(
    "--scenario",
    "names",
    multiple=True,
    help="Run only this scenario (repeatable); looked up in --scenarios DIR, then the "
    "bundled ones.",
)
@click.option(
    "--prometheus",
    is_flag=True,
    help="Also run a real Prometheus with the shipped alert rules beside each (real-time) lab "
    "and report which alerts fired after the fault and whether they cleared after the "
    "investigation (needs Debian's prometheus and prometheus-alertmanager).",
)
def eval_command(
    pack: Path | None,
    planner: str,
    json_out: Path | None,
    jobs: int | None,
    names: tuple[str, ...],
    prometheus: bool,
) -> None:
    """Run scenarios end to end on fresh labs and score the incident workflow.

    Each scenario: a lab of its own, the fault injected, an investigation auto-approved to its
    end, the oracle checked. Prints a table (and --json) of detection, localization, root-cause
    category, mitigation, collateral damage, times, actions, undos, attempts and tokens."""
    _require_model(planner)
    if prometheus and (missing := prometheus_unavailable()) is not None:
        raise click.ClickException(f"--prometheus: {missing}")
    try:
        chosen = evaluation.select(names, pack)
    except evaluation.EvalError as error:
        raise click.ClickException(str(error)) from error
    to_stdout = json_out is not None and str(json_out) == "-"
    if json_out is not None and not to_stdout:
        folder = json_out.resolve().parent
        if not folder.is_dir() or not os.access(folder, os.W_OK):
            # Say so before the run, not after it: the report would be lost.
            raise click.ClickException(
                f"cannot write the report to {json_out}: {folder} is not a writable folder"
            )
    say = functools.partial(click.echo, err=to_stdout)
    say(f"running {len(chosen)} scenario(s) with the {planner} planner")

    def progress(result: evaluation.ScenarioResult) -> None:
        outcome = result.error or (
            f"{'mitigated' if result.mitigated else 'NOT mitigated'}, {result.state}"
            if result.fault
            else f"{'FALSE POSITIVE' if result.false_positive else 'no action'}, {result.state}"
        )
        click.echo(f"  {result.scenario}: {outcome} ({result.seconds:.1f} s)", err=True)

    report = evaluation.evaluate(
        chosen,
        functools.partial(investigate, planner=planner),
        pack=pack,
        jobs=jobs,
        planner=planner,
        on_result=progress,
        alert_rules=ALERT_RULES if prometheus else None,
    )
    say("")
    say(evaluation.table(report))
    if json_out is not None:
        text = json.dumps(report.to_dict(), indent=2)
        if to_stdout:
            sys.stdout.write(text + "\n")
        else:
            json_out.write_text(text + "\n")
            say(f"report written to {json_out}")
    errors = report.totals()["errors"]
    if errors:  # scores are results; a scenario that could not run is a failed evaluation
        click.echo(
            f"Error: {errors} of {len(report.results)} scenario(s) could not be run; see the "
            "table's error column (the exit status is their number)",
            err=True,
        )
        # The exit status says how many (issue 22), capped where shells read it as a signal.
        sys.exit(min(errors, MOST_ERRORS_EXIT))
