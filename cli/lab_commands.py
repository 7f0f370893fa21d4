"""``stratus lab …``: run the sandbox cluster, inject faults and scenarios, check oracles."""

from __future__ import annotations

import json
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from cli import paths
from lab import scenarios
from lab.client import LabClient, LabRequestFailed, is_lab_version, served_version
from lab.cluster.clock import INSTANT, REALTIME
from lab.cluster.tls import TlsUnavailable
from lab.cluster_sim import available_apps
from lab.runner import LAB_TOKEN, LabNotRunning, LabServer, server_url_from_kubeconfig
from lab.slack.server import PlaygroundServer
from lab.slack.workspace import PlaygroundConfig

# The shipped alert rules, loaded by `lab up --prometheus` when this checkout has them.
ALERT_RULES = Path(__file__).resolve().parent.parent / "manifests" / "prometheus" / "alerts.yaml"

_KUBECONFIG = click.option(
    "--kubeconfig",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The lab's kubeconfig (default: $STRATUS_LAB_KUBECONFIG, else $KUBECONFIG when it "
    "points at a lab, else ~/.local/share/stratus/lab/kubeconfig).",
)


def _lab_kubeconfig(explicit: Path | None) -> tuple[Path, str]:
    """The kubeconfig a lab command talks through, and how to name where it came from."""
    if explicit is not None:
        return explicit, "--kubeconfig"
    if os.environ.get("STRATUS_LAB_KUBECONFIG") or not os.environ.get("KUBECONFIG"):
        return paths.lab_kubeconfig(), "the lab's kubeconfig"
    # A terminal set up for the demo (its env file) or for kubectl against the lab has only
    # $KUBECONFIG; several files joined with ':' are read like kubectl reads the first.
    named = [Path(p) for p in os.environ["KUBECONFIG"].split(os.pathsep) if p]
    found = next((p for p in named if p.is_file()), named[0])
    return found, "$KUBECONFIG"


def _client(kubeconfig: Path | None) -> LabClient:
    """A client for the lab the kubeconfig points at; anything that is not a lab (by what it
    answers on /version) is refused before a request that could change it is sent."""
    path, source = _lab_kubeconfig(kubeconfig)
    try:
        client = LabClient(server_url_from_kubeconfig(path))
        version = served_version(client)
    except LabNotRunning as error:
        raise click.ClickException(str(error)) from error
    if not is_lab_version(version):
        said = f"its /version says {version}" if version else "it answers no /version"
        raise click.ClickException(
            f"{source} ({path}) points at {client.url}, which is not a Stratus lab ({said}); "
            "stratus lab only talks to a lab: pass --kubeconfig with the lab's kubeconfig "
            "(stratus lab up prints it)"
        )
    return client


def _call(
    kubeconfig: Path | None, method: str, path: str, body: dict[str, Any] | None = None
) -> Any:
    client = _client(kubeconfig)
    try:
        return client.request(method, path, body)
    except (LabNotRunning, LabRequestFailed) as error:
        raise click.ClickException(str(error)) from error


@click.group()
def lab() -> None:
    """The sandbox: a Kubernetes API emulator with sample apps, faults and scenarios."""


@lab.command()
@click.option(
    "--app",
    "apps",
    multiple=True,
    default=("hotel",),
    show_default=True,
    help=f"Sample app to deploy (repeatable): {', '.join(available_apps())}, or none.",
)
@click.option(
    "--port",
    type=click.IntRange(0, 65535),
    default=0,
    help="Port on 127.0.0.1 (default: a free port).",
)
@_KUBECONFIG
@click.option(
    "--clock",
    type=click.Choice([REALTIME, INSTANT]),
    default=REALTIME,
    show_default=True,
    help="realtime: pods take seconds to start, as in a cluster; instant: every write "
    "settles the cluster at once (for scripts and tests).",
)
@click.option(
    "--rbac/--no-rbac",
    default=True,
    show_default=True,
    help="Authorize every request with RBAC over HTTPS, as kind and minikube do: the "
    "kubeconfig written is the cluster admin's, and `kubectl create token SA` makes identities "
    "to try. --no-rbac serves plain HTTP and allows every request.",
)
@click.option(
    "--prometheus",
    "with_prometheus",
    is_flag=True,
    help="Also run a real Prometheus scraping the lab (and an Alertmanager with the shipped "
    "alert rules); needs Debian's prometheus and prometheus-alertmanager.",
)
@click.option(
    "--alert-webhook",
    metavar="URL",
    default=None,
    help="With --prometheus: where Alertmanager posts alerts (Bearer token from "
    "$STRATUS_ALERTS_TOKEN when set).",
)
def up(
    apps: tuple[str, ...],
    port: int,
    kubeconfig: Path | None,
    clock: str,
    rbac: bool,
    with_prometheus: bool,
    alert_webhook: str | None,
) -> None:
    """Start the lab cluster and write its kubeconfig; runs until interrupted."""
    chosen = [a for a in apps if a != "none"]
    unknown = [a for a in chosen if a not in available_apps()]
    if unknown:
        raise click.ClickException(
            f"unknown app {unknown[0]!r}; available: {', '.join(available_apps())}"
        )
    if alert_webhook and not with_prometheus:
        raise click.ClickException("--alert-webhook needs --prometheus")
    if with_prometheus:
        from lab.prometheus import unavailable

        reason = unavailable()
        if reason is not None:
            raise click.ClickException(f"--prometheus: {reason}")
    path = kubeconfig or paths.lab_kubeconfig()
    try:
        server = LabServer(mode=clock, apps=chosen, port=port, rbac=rbac)
    except TlsUnavailable as error:
        raise click.ClickException(str(error)) from error
    namespace = "hotel" if "hotel" in chosen else (chosen[0] if chosen else "default")

    def ready_line(running: LabServer, extra: str = "") -> str:
        return (
            f"lab ready: {running.url} kubeconfig={path} apps={','.join(chosen) or '-'} "
            f"clock={clock}{' rbac=on' if rbac else ''}{extra} (export KUBECONFIG={path})"
        )

    if with_prometheus:
        _up_with_prometheus(server, path, namespace, ready_line, alert_webhook)
        return

    def ready(running: LabServer) -> None:
        running.write_kubeconfig(path, namespace)
        click.echo(ready_line(running), nl=True)

    try:
        server.run_forever(ready)
    except OSError as error:
        raise click.ClickException(f"cannot start the lab on port {port}: {error}") from error


def _up_with_prometheus(
    server: LabServer,
    kubeconfig: Path,
    namespace: str,
    ready_line: Callable[[LabServer, str], str],
    alert_webhook: str | None,
) -> None:
    """The lab on a background thread, Prometheus (and Alertmanager) beside it, until
    SIGINT or SIGTERM; both stop together, whichever way this ends."""
    from lab.prometheus import (
        PrometheusError,
        PrometheusStack,
        RuleFileError,
        WebhookTarget,
        unavailable,
    )

    reason = unavailable()
    if reason is not None:
        raise click.ClickException(f"--prometheus: {reason}")
    try:
        server.start()
    except RuntimeError as error:
        raise click.ClickException(str(error)) from error
    stack: PrometheusStack | None = None
    stop = threading.Event()
    previous = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        for sig in previous:
            signal.signal(sig, lambda signum, frame: stop.set())
        ca_file = None
        if server.ca_pem:
            ca_file = kubeconfig.parent / "lab-ca.pem"
            ca_file.parent.mkdir(parents=True, exist_ok=True)
            ca_file.write_text(server.ca_pem)
        token = os.environ.get("STRATUS_ALERTS_TOKEN") or None
        stack = PrometheusStack(
            lab_url=server.url,
            token=LAB_TOKEN,
            ca_file=ca_file,
            rule_files=[ALERT_RULES] if ALERT_RULES.is_file() else [],
            webhook=WebhookTarget(alert_webhook, token) if alert_webhook else None,
        )
        try:
            stack.start()
        except (PrometheusError, RuleFileError) as error:
            raise click.ClickException(f"Prometheus did not start: {error}") from error
        server.write_kubeconfig(kubeconfig, namespace)
        extra = f" prometheus={stack.prometheus_url}"
        if stack.alertmanager_url:
            extra += f" alertmanager={stack.alertmanager_url}"
        click.echo(ready_line(server, extra), nl=True)
        while not stop.wait(0.5):
            pass
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)
        if stack is not None:
            stack.stop()
        server.stop()


_SCENARIOS = click.option(
    "--scenarios",
    "pack",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="A directory of your own scenarios (faults in DIR/faults/, then the bundled ones).",
)


@lab.command("scenarios")
@click.option("--json", "as_json", is_flag=True, help="Print JSON instead of a table.")
@_SCENARIOS
def list_scenarios(as_json: bool, pack: Path | None) -> None:
    """List the bundled scenarios, or those in --scenarios DIR (no running lab needed)."""
    try:
        found = scenarios.list_scenarios(pack) if pack else scenarios.list_scenarios()
    except scenarios.ScenarioError as error:
        raise click.ClickException(str(error)) from error
    if as_json:
        click.echo(json.dumps([s.model_dump() for s in found], indent=2))
        return
    width = max((len(s.name) for s in found), default=0)
    for scenario in found:
        category = scenario.root_cause.category if scenario.root_cause else "none"
        click.echo(
            f"{scenario.name:<{width}}  {scenario.app:<6} {category:<24} {scenario.description}"
        )


@lab.command("faults")
@_SCENARIOS
def list_faults(pack: Path | None) -> None:
    """List the fault library (no running lab needed)."""
    for fault in scenarios.list_faults(scenarios.fault_dirs(pack)):
        params = ", ".join(fault.params) or "-"
        click.echo(f"{fault.name:<28} params: {params:<28} {fault.description}")


def _parse_params(pairs: tuple[str, ...]) -> dict[str, Any]:
    params: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise click.BadParameter(f"expected KEY=VALUE, got {pair!r}", param_hint="--param")
        params[key] = int(value) if value.isdigit() else value
    return params


@lab.command()
@click.argument("name")
@click.option("-n", "--namespace", default=None, help="Namespace for a single fault.")
@click.option("--param", "params", multiple=True, help="Fault parameter KEY=VALUE (repeatable).")
@_SCENARIOS
@_KUBECONFIG
def inject(
    name: str,
    namespace: str | None,
    params: tuple[str, ...],
    pack: Path | None,
    kubeconfig: Path | None,
) -> None:
    """Inject a scenario (by name) or a single fault (with -n and --param)."""
    scenario_dirs = [pack, scenarios.SCENARIOS_DIR] if pack else [scenarios.SCENARIOS_DIR]
    fault_file = scenarios.find_fault(name, scenarios.fault_dirs(pack))
    if scenarios.find_scenario(name, scenario_dirs) is not None:
        if params or namespace:
            raise click.UsageError("--param and --namespace apply to single faults, not scenarios")
        try:  # the lab may run elsewhere: send the scenario and its faults, not a path
            body = scenarios.scenario_request(name, pack) if pack else {}
        except scenarios.ScenarioError as error:
            raise click.ClickException(str(error)) from error
        result = _call(kubeconfig, "POST", f"/lab/v1/scenarios/{name}/inject", body)
        target = f"scenario {result['scenario']} in namespace {result['namespace']}"
    elif fault_file is not None:
        if not namespace:
            raise click.UsageError("a single fault needs --namespace")
        fault_body: dict[str, Any] = {"namespace": namespace, "params": _parse_params(params)}
        if fault_file.parent != scenarios.FAULTS_DIR:
            try:
                fault_body["fault"] = scenarios.load_fault(name, fault_file.parent).model_dump(
                    mode="json"
                )
            except scenarios.ScenarioError as error:
                raise click.ClickException(str(error)) from error
        result = _call(kubeconfig, "POST", f"/lab/v1/faults/{name}/inject", fault_body)
        target = f"fault {result['fault']} in namespace {result['namespace']}"
    else:
        raise click.ClickException(
            f"no scenario or fault named {name!r}; see 'stratus lab "
            "scenarios' and 'stratus lab faults'"
        )
    click.echo(f"injected {target}")
    for line in result["applied"]:
        click.echo(f"  {line}")


@lab.command()
@click.argument("scenario")
@click.option("--json", "as_json", is_flag=True, help="Print the verdict as JSON.")
@_SCENARIOS
@_KUBECONFIG
def check(scenario: str, as_json: bool, pack: Path | None, kubeconfig: Path | None) -> None:
    """Run a scenario's oracle; exit 0 only when mitigated without collateral damage.

    The lab judges the scenario as it was injected (from --scenarios DIR too)."""
    verdict = _call(kubeconfig, "GET", f"/lab/v1/scenarios/{scenario}/check")
    if as_json:
        click.echo(json.dumps(verdict, indent=2))
    else:
        state = "PASS" if verdict["passed"] else "FAIL"
        click.echo(
            f"{state} {scenario}: mitigated={verdict['mitigated']} "
            f"no_collateral_damage={verdict['no_collateral_damage']}"
        )
        for problem in verdict["problems"]:
            click.echo(f"  problem: {problem}")
        for damage in verdict["collateral_damage"]:
            click.echo(f"  collateral damage: {damage}")
    if not verdict["passed"]:
        raise SystemExit(1)


@lab.command()
@_KUBECONFIG
def reset(kubeconfig: Path | None) -> None:
    """Reset the lab to a fresh cluster with the same apps."""
    result = _call(kubeconfig, "POST", "/lab/v1/reset", {})
    click.echo(f"lab reset; apps: {', '.join(result['apps']) or '-'}")


@lab.command()
@_KUBECONFIG
def settle(kubeconfig: Path | None) -> None:
    """Run the cluster to steady state now (instant clock) and print what it took."""
    result = _call(kubeconfig, "POST", "/lab/v1/settle", {})
    click.echo(json.dumps(result))


@lab.command("slack")
@click.option("--port", type=click.IntRange(0, 65535), default=0, help="Port (default: free).")
@click.option(
    "--request-url",
    envvar="STRATUS_PLAYGROUND_REQUEST_URL",
    default=None,
    help="The bot's HTTP endpoint (e.g. http://127.0.0.1:3000/slack/events); a bot in Socket "
    "Mode needs none.",
)
@click.option("--bot-token", envvar="SLACK_BOT_TOKEN", default=None, help="xoxb- token to accept.")
@click.option("--app-token", envvar="SLACK_APP_TOKEN", default=None, help="xapp- token to accept.")
@click.option("--signing-secret", envvar="SLACK_SIGNING_SECRET", default=None)
def slack(
    port: int,
    request_url: str | None,
    bot_token: str | None,
    app_token: str | None,
    signing_secret: str | None,
) -> None:
    """Start the Slack playground (Web API, signed deliveries, browser page); runs until
    interrupted. Tokens and the secret default to $SLACK_* or are generated."""
    config = PlaygroundConfig(request_url=request_url)
    config.bot_token = bot_token or config.bot_token
    config.app_token = app_token or config.app_token
    config.signing_secret = signing_secret or config.signing_secret

    def ready(running: PlaygroundServer) -> None:
        click.echo(f"slack playground ready: {running.url}/")
        click.echo(f"export STRATUS_SLACK_API_URL={running.api_url}")
        click.echo(f"export SLACK_BOT_TOKEN={config.bot_token}")
        click.echo(f"export SLACK_APP_TOKEN={config.app_token}")
        click.echo(f"export SLACK_SIGNING_SECRET={config.signing_secret}")

    try:
        PlaygroundServer(config, port=port).run_forever(ready)
    except OSError as error:
        raise click.ClickException(
            f"cannot start the playground on port {port}: {error}"
        ) from error
