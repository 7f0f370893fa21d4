"""The generated Prometheus and Alertmanager configuration, and rules on the lab's clock:
checked by Prometheus' own tools (promtool, amtool) where they are installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from lab.prometheus import RuleFileError, WebhookTarget, unavailable
from lab.prometheus.config import ScrapeTarget, alertmanager_config, prometheus_config
from lab.prometheus.rules import load_scaled, scale_expr, scale_rule_groups

RULES = """
groups:
- name: example
  interval: 1m
  rules:
  - alert: HighErrorRate
    expr: |
      sum by (namespace, service) (rate(http_requests_total{code=~"5..", pod=~"web-[5m]"}[5m]))
        / sum by (namespace, service) (rate(http_requests_total[5m])) > 0.05
    for: 15m
    labels: {severity: warning}
    annotations: {summary: "errors [5m]"}
  - alert: Restarting
    expr: increase(kube_pod_container_status_restarts_total[1h:5m] offset 10m) > 3
    keep_firing_for: 5m
  - record: namespace:errors:rate1m
    expr: rate(http_requests_total[1m])
"""


def test_rules_are_scaled_in_for_ranges_subqueries_and_offsets_but_not_in_strings() -> None:
    scaled = scale_rule_groups(yaml.safe_load(RULES), 30, 4)
    group = scaled["groups"][0]
    assert group["interval"] == "2s"
    high, restarting, recorded = group["rules"]
    assert high["for"] == "30s"
    assert "[10s]" in high["expr"] and "[5m]" not in high["expr"].replace("web-[5m]", "")
    assert 'pod=~"web-[5m]"' in high["expr"]  # a label matcher is not a range
    assert high["annotations"]["summary"] == "errors [5m]"
    assert restarting["expr"] == (
        "increase(kube_pod_container_status_restarts_total[120s:10s] offset 20s) > 3"
    )
    assert restarting["keep_firing_for"] == "10s"
    # One minute at scale 30 would be 2 s: too short for rate() at a 1 s scrape.
    assert recorded["expr"] == "rate(http_requests_total[4s])"
    assert scale_expr("rate(x[90s])", 1, 0) == "rate(x[90s])"


def test_a_malformed_rule_file_is_a_clear_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text("groups:\n- name: g\n  rules:\n  - alert: A\n")
    with pytest.raises(RuleFileError, match=r"bad\.yaml: .*has no 'expr'"):
        load_scaled(bad, 30, 4)
    bad.write_text("rules: []\n")
    with pytest.raises(RuleFileError, match="top-level 'groups'"):
        load_scaled(bad, 30, 4)
    with pytest.raises(RuleFileError, match="cannot read"):
        load_scaled(tmp_path / "missing.yaml", 30, 4)


def _tool(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        pytest.skip(unavailable() or f"{name} is not installed")
    return found


def test_promtool_accepts_the_generated_config_and_scaled_rules(tmp_path: Path) -> None:
    promtool = _tool("promtool")
    rules = tmp_path / "rules.yaml"
    rules.write_text(yaml.safe_dump(scale_rule_groups(yaml.safe_load(RULES), 30, 4)))
    ca = tmp_path / "ca.pem"
    ca.write_text("not checked by promtool\n")
    config = prometheus_config(
        target=ScrapeTarget("https://127.0.0.1:6443", "token", ca, ("node-1", "node-2")),
        scrape_interval="1s",
        rule_files=[rules],
        alertmanager="127.0.0.1:9093",
    )
    path = tmp_path / "prometheus.yml"
    path.write_text(yaml.safe_dump(config))
    checked = subprocess.run(
        [promtool, "check", "config", str(path)], capture_output=True, text=True, check=False
    )
    assert checked.returncode == 0, checked.stdout + checked.stderr
    kubelet = next(j for j in config["scrape_configs"] if j["job_name"] == "kubelet")
    assert [c["labels"]["__metrics_path__"] for c in kubelet["static_configs"]] == [
        "/api/v1/nodes/node-1/proxy/metrics/cadvisor",
        "/api/v1/nodes/node-2/proxy/metrics/cadvisor",
    ]
    assert all(j["honor_labels"] for j in config["scrape_configs"])
    assert all(j["tls_config"] == {"ca_file": str(ca)} for j in config["scrape_configs"])


def test_amtool_accepts_the_generated_alertmanager_config(tmp_path: Path) -> None:
    amtool = _tool("amtool")
    for webhook in (WebhookTarget("http://127.0.0.1:1/alerts", "s3cret"), None):
        config = alertmanager_config(webhook, 30)
        path = tmp_path / "alertmanager.yml"
        path.write_text(yaml.safe_dump(config))
        checked = subprocess.run(
            [amtool, "check-config", str(path)], capture_output=True, text=True, check=False
        )
        assert checked.returncode == 0, checked.stdout + checked.stderr
        assert config["route"]["group_wait"] == "1s"
        assert config["route"]["repeat_interval"] == "480s"  # 4h on the lab's clock
    hook = alertmanager_config(WebhookTarget("http://x/alerts", "s3cret"), 30)["receivers"][0]
    assert hook["webhook_configs"][0]["send_resolved"] is True
    assert hook["webhook_configs"][0]["http_config"]["authorization"] == {
        "type": "Bearer",
        "credentials": "s3cret",
    }
