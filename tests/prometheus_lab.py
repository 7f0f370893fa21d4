"""A realtime hotel lab scraped every second by a real Prometheus (Debian's, started by
``lab.prometheus.PrometheusStack``) — the world the telemetry, analyzer and card tests read.
Skips the test with the stack's reason when the binaries are missing."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest

from lab.cluster.clock import REALTIME
from lab.prometheus import PrometheusStack, unavailable
from lab.runner import LAB_TOKEN, LabServer, write_kubeconfig


@dataclass(frozen=True)
class ScrapedLab:
    lab: LabServer
    prometheus_url: str
    kubeconfig: Path


@contextmanager
def scraped_lab(folder: Path, namespace: str = "hotel") -> Iterator[ScrapedLab]:
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    lab = LabServer(mode=REALTIME, apps=["hotel"]).start()
    kubeconfig = write_kubeconfig(folder / "config", lab.url, namespace)
    try:
        with PrometheusStack(lab_url=lab.url, token=LAB_TOKEN, workdir=folder / "prom") as prom:
            yield ScrapedLab(lab, prom.prometheus_url, kubeconfig)
    finally:
        lab.stop()
