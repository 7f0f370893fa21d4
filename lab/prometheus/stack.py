"""Running a real Prometheus (and Alertmanager) next to a lab: ports, files, processes.

``PrometheusStack.start()`` writes the generated configuration into its work directory,
starts Debian's ``prometheus`` (and ``prometheus-alertmanager`` when there are rules or a
webhook) on free ports of 127.0.0.1 with storage in that directory, and waits for their
``/-/ready`` and for Prometheus' first scrape of every target. Each process's output goes
to a log file whose tail is shown when it fails. ``stop()`` terminates them (and kills
what does not exit).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import shutil
import signal
import socket
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import IO

import yaml

from lab.prometheus import config
from lab.prometheus.config import ScrapeTarget, WebhookTarget
from lab.prometheus.rules import DEFAULT_TIME_SCALE, load_scaled

PROMETHEUS = "prometheus"
ALERTMANAGERS = ("prometheus-alertmanager", "alertmanager")  # Debian's name, upstream's
INSTALL_HINT = "sudo apt-get install prometheus prometheus-alertmanager (or run scripts/setup)"
LOG_TAIL = 20


_PR_SET_PDEATHSIG = 1


def _die_with_parent() -> None:
    """In the child, before exec: ask Linux to send SIGTERM when the process that started us
    dies, so a lab killed with SIGKILL does not leave Prometheus and Alertmanager running.
    (Linux ties this to the starting *thread*: stacks are started from a main thread.)"""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)


class PrometheusError(RuntimeError):
    """Prometheus or Alertmanager could not be configured or started."""


def _alertmanager_binary() -> str | None:
    return next((found for name in ALERTMANAGERS if (found := shutil.which(name))), None)


def unavailable() -> str | None:
    """Why the stack cannot run here (a binary is missing), or None when it can."""
    missing = [
        name
        for name, found in (
            (PROMETHEUS, shutil.which(PROMETHEUS)),
            ("prometheus-alertmanager", _alertmanager_binary()),
        )
        if found is None
    ]
    if not missing:
        return None
    return f"{' and '.join(missing)} not installed: {INSTALL_HINT}"


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def _tail(path: Path) -> str:
    try:
        lines = path.read_text(errors="replace").splitlines()
    except OSError:
        return ""
    return "\n".join(lines[-LOG_TAIL:])


class _Process:
    """One server process with its log file."""

    def __init__(self, name: str, argv: list[str], log: Path) -> None:
        self.name = name
        self.log = log
        self._log_file: IO[bytes] = log.open("wb")
        self.popen = subprocess.Popen(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=self._log_file,
            stderr=subprocess.STDOUT,
            preexec_fn=_die_with_parent,  # noqa: PLW1509 - only prctl, safe after fork
        )

    def failure(self, what: str) -> PrometheusError:
        return PrometheusError(f"{self.name} {what}; last lines of {self.log}:\n{_tail(self.log)}")

    def wait_ready(self, url: str, deadline: float) -> None:
        while time.monotonic() < deadline:
            if self.popen.poll() is not None:
                raise self.failure(f"exited with status {self.popen.returncode}")
            try:
                with urllib.request.urlopen(f"{url}/-/ready", timeout=1) as response:
                    if response.status == 200:
                        return
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            time.sleep(0.1)
        raise self.failure("was not ready in time")

    def stop(self) -> None:
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait(timeout=5)
        self._log_file.close()


def _write(path: Path, content: dict[str, object]) -> Path:
    path.write_text(yaml.safe_dump(content, sort_keys=False))
    path.chmod(0o600)  # it holds tokens
    return path


class PrometheusStack:
    """Prometheus scraping a lab, with Alertmanager when there are rules or a webhook."""

    def __init__(
        self,
        *,
        lab_url: str,
        token: str,
        ca_file: Path | None = None,
        workdir: Path | None = None,
        rule_files: list[Path] | None = None,
        webhook: WebhookTarget | None = None,
        scrape_interval: str = "1s",
        time_scale: float = DEFAULT_TIME_SCALE,
    ) -> None:
        if time_scale <= 0:
            raise ValueError("time_scale must be positive")
        self.lab_url = lab_url.rstrip("/")
        self.token = token
        self.ca_file = ca_file
        self.rule_files = list(rule_files or [])
        self.webhook = webhook
        self.scrape_interval = scrape_interval
        self.time_scale = time_scale
        self._own_workdir = workdir is None
        self.workdir = workdir or Path(tempfile.mkdtemp(prefix="stratus-prometheus-"))
        self.prometheus_url = ""
        self.alertmanager_url = ""
        self._processes: list[_Process] = []

    @property
    def with_alertmanager(self) -> bool:
        return bool(self.rule_files) or self.webhook is not None

    # ------------------------------------------------------------ preparing

    def _nodes(self) -> tuple[str, ...]:
        """The lab's nodes (one cAdvisor target each), read from its API."""
        request = urllib.request.Request(
            f"{self.lab_url}/api/v1/nodes", headers={"Authorization": f"Bearer {self.token}"}
        )
        context = (
            ssl.create_default_context(cafile=str(self.ca_file))
            if self.lab_url.startswith("https:") and self.ca_file
            else None
        )
        try:
            with urllib.request.urlopen(request, timeout=10, context=context) as response:
                items = json.loads(response.read())["items"]
        except (urllib.error.URLError, OSError, ValueError, KeyError) as exc:
            raise PrometheusError(f"cannot list the lab's nodes at {self.lab_url}: {exc}") from exc
        return tuple(sorted(n["metadata"]["name"] for n in items))

    def _scaled_rules(self) -> list[Path]:
        folder = self.workdir / "rules"
        folder.mkdir(parents=True, exist_ok=True)
        written: list[Path] = []
        min_range = config.min_range_seconds(self.scrape_interval)
        for index, source in enumerate(self.rule_files):
            scaled = load_scaled(source, self.time_scale, min_range)
            written.append(_write(folder / f"{index:02d}-{source.name}", scaled))
        return written

    def write_configs(self, *, alertmanager_port: int | None) -> Path:
        """Write prometheus.yml (and alertmanager.yml) into the work directory."""
        self.workdir.mkdir(parents=True, exist_ok=True)
        target = ScrapeTarget(self.lab_url, self.token, self.ca_file, self._nodes())
        alertmanager = f"127.0.0.1:{alertmanager_port}" if alertmanager_port else None
        prometheus_yml = _write(
            self.workdir / "prometheus.yml",
            config.prometheus_config(
                target=target,
                scrape_interval=self.scrape_interval,
                rule_files=self._scaled_rules(),
                alertmanager=alertmanager,
            ),
        )
        if alertmanager_port:
            _write(
                self.workdir / "alertmanager.yml",
                config.alertmanager_config(self.webhook, self.time_scale),
            )
        return prometheus_yml

    # ------------------------------------------------------------ running

    def start(self, timeout: float = 60.0) -> PrometheusStack:
        reason = unavailable()
        if reason is not None:
            raise PrometheusError(reason)
        prometheus_port = free_port()
        alertmanager_port = free_port() if self.with_alertmanager else None
        prometheus_yml = self.write_configs(alertmanager_port=alertmanager_port)
        deadline = time.monotonic() + timeout
        try:
            if alertmanager_port:
                binary = _alertmanager_binary()
                assert binary is not None
                self.alertmanager_url = f"http://127.0.0.1:{alertmanager_port}"
                alertmanager = self._spawn(
                    "alertmanager",
                    [
                        binary,
                        f"--config.file={self.workdir / 'alertmanager.yml'}",
                        f"--storage.path={self.workdir / 'alertmanager-data'}",
                        f"--web.listen-address=127.0.0.1:{alertmanager_port}",
                        "--cluster.listen-address=",  # a single instance: no gossip port
                    ],
                )
                alertmanager.wait_ready(self.alertmanager_url, deadline)
            self.prometheus_url = f"http://127.0.0.1:{prometheus_port}"
            prometheus = self._spawn(
                "prometheus",
                [
                    PROMETHEUS,
                    f"--config.file={prometheus_yml}",
                    f"--storage.tsdb.path={self.workdir / 'prometheus-data'}",
                    f"--web.listen-address=127.0.0.1:{prometheus_port}",
                    "--storage.tsdb.retention.time=1d",
                    # Firing alerts are re-sent this often (default 1m), on the lab's clock.
                    "--rules.alert.resend-delay=2s",
                ],
            )
            prometheus.wait_ready(self.prometheus_url, deadline)
            self._wait_scraped(prometheus, deadline)
        except BaseException:
            self.stop()
            raise
        return self

    def _wait_scraped(self, prometheus: _Process, deadline: float) -> None:
        """Until every target was scraped once (Prometheus hands static targets to its
        scrapers up to 5 s after start), so a query right after ``start()`` finds series."""
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(
                    f"{self.prometheus_url}/api/v1/targets?state=active", timeout=2
                ) as response:
                    targets = json.loads(response.read())["data"]["activeTargets"]
            except (urllib.error.URLError, OSError, ValueError, KeyError):
                targets = []
            if targets and all(t.get("health") != "unknown" for t in targets):
                return
            if prometheus.popen.poll() is not None:
                raise prometheus.failure(f"exited with status {prometheus.popen.returncode}")
            time.sleep(0.2)
        raise prometheus.failure("did not scrape the lab in time")

    def _spawn(self, name: str, argv: list[str]) -> _Process:
        process = _Process(name, argv, self.workdir / f"{name}.log")
        self._processes.append(process)
        return process

    def stop(self) -> None:
        for process in reversed(self._processes):
            process.stop()
        self._processes.clear()
        if self._own_workdir:
            shutil.rmtree(self.workdir, ignore_errors=True)

    def log_tail(self, name: str) -> str:
        """The last lines a process wrote (``prometheus`` or ``alertmanager``)."""
        return _tail(self.workdir / f"{name}.log")

    def __enter__(self) -> PrometheusStack:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()
