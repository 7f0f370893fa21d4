"""Generated configuration for Prometheus and Alertmanager next to a lab (pure functions).

Prometheus scrapes the lab's three metrics targets (``lab.metrics``) with the lab's bearer
token and TLS settings and ``honor_labels: true`` (the lab's ``namespace``/``pod`` labels are
the truth, as with a federation or a kube-state-metrics scrape). Alertmanager groups alerts
by name and namespace, waits seconds rather than minutes, and posts to one webhook with a
Bearer token, resolved notifications included.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from lab.metrics.routes import APPS_PATH, CADVISOR_PATH, KUBE_STATE_PATH
from lab.prometheus.rules import format_duration, parse_duration

REPEAT_INTERVAL = 4 * 3600.0  # Alertmanager's default, before the time scale


@dataclass(frozen=True)
class WebhookTarget:
    """Where Alertmanager posts notifications, and the Bearer token it presents."""

    url: str
    bearer_token: str | None = None


@dataclass(frozen=True)
class ScrapeTarget:
    """The lab as Prometheus reaches it."""

    lab_url: str
    token: str
    ca_file: Path | None
    nodes: tuple[str, ...]


def _job(name: str, target: ScrapeTarget, path: str, interval: str) -> dict[str, Any]:
    url = urlsplit(target.lab_url)
    job: dict[str, Any] = {
        "job_name": name,
        "scrape_interval": interval,
        "scrape_timeout": interval,
        "scheme": url.scheme or "http",
        "metrics_path": path,
        "honor_labels": True,
        "authorization": {"type": "Bearer", "credentials": target.token},
        "static_configs": [{"targets": [url.netloc]}],
    }
    if url.scheme == "https":
        job["tls_config"] = {"ca_file": str(target.ca_file)} if target.ca_file else {}
    return job


def prometheus_config(
    *,
    target: ScrapeTarget,
    scrape_interval: str,
    rule_files: list[Path],
    alertmanager: str | None,
) -> dict[str, Any]:
    """prometheus.yml: the lab's targets, the (scaled) rule files and the Alertmanager."""
    kubelet = _job("kubelet", target, "/metrics/cadvisor", scrape_interval)
    host = urlsplit(target.lab_url).netloc
    # One target per node through the API server's node proxy (as kube-prometheus scrapes
    # cAdvisor); ``metrics_path`` is the label kubernetes-mixin's selectors use.
    kubelet["static_configs"] = [
        {
            "targets": [host],
            "labels": {
                "__metrics_path__": CADVISOR_PATH.format(node=node),
                "metrics_path": "/metrics/cadvisor",
                "node": node,
            },
        }
        for node in target.nodes
    ]
    config: dict[str, Any] = {
        "global": {
            "scrape_interval": scrape_interval,
            "scrape_timeout": scrape_interval,
            "evaluation_interval": scrape_interval,
        },
        "rule_files": [str(p) for p in rule_files],
        "scrape_configs": [
            _job("kube-state-metrics", target, KUBE_STATE_PATH, scrape_interval),
            kubelet,
            _job("stratus-lab-apps", target, APPS_PATH, scrape_interval),
        ],
    }
    if alertmanager:
        config["alerting"] = {
            "alertmanagers": [
                {"api_version": "v2", "static_configs": [{"targets": [alertmanager]}]}
            ]
        }
    return config


def alertmanager_config(webhook: WebhookTarget | None, time_scale: float) -> dict[str, Any]:
    """alertmanager.yml: one route, seconds-long waits, the webhook (or nowhere)."""
    receiver: dict[str, Any] = {"name": "stratus"}
    if webhook is not None:
        hook: dict[str, Any] = {"url": webhook.url, "send_resolved": True, "max_alerts": 0}
        if webhook.bearer_token:
            hook["http_config"] = {
                "authorization": {"type": "Bearer", "credentials": webhook.bearer_token}
            }
        receiver["webhook_configs"] = [hook]
    repeat = max(REPEAT_INTERVAL / time_scale, 30.0)
    return {
        "route": {
            "receiver": "stratus",
            "group_by": ["alertname", "namespace"],
            "group_wait": "1s",
            "group_interval": "2s",
            "repeat_interval": format_duration(repeat),
        },
        "receivers": [receiver],
    }


def min_range_seconds(scrape_interval: str) -> float:
    """The shortest range a scaled rule keeps: four scrapes, so ``rate()`` has samples."""
    return 4 * parse_duration(scrape_interval)
