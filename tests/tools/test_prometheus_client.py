"""The Prometheus client over real HTTP: a real Prometheus for answers, and a misbehaving
look-alike for every way a Prometheus fails. Each failure is one typed error with its reason,
inside the configured time."""

from __future__ import annotations

import base64
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from store.errors import StratusError
from tests.tools.promservers import (
    BadPrometheus,
    free_port,
    real_prometheus,
    self_signed,
    unavailable,
)
from tools.errors import Invalid
from tools.prometheus import PrometheusClient, PrometheusConfig, PrometheusError, promql


@pytest.fixture(scope="module")
def prometheus_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    with real_prometheus(tmp_path_factory.mktemp("prom")) as url:
        client = PrometheusClient(PrometheusConfig(url=url))
        deadline = time.monotonic() + 20
        while not client.query('up{job="prometheus"}').samples:  # the first scrape
            assert time.monotonic() < deadline, "prometheus never scraped itself"
            time.sleep(0.2)
        client.close()
        yield url


def client_for(url: str, **options: object) -> PrometheusClient:
    return PrometheusClient(PrometheusConfig(url=url, **options))  # type: ignore[arg-type]


def test_instant_and_range_queries_are_typed(prometheus_url: str) -> None:
    client = client_for(prometheus_url)
    up = client.query('up{job="prometheus"}')
    assert [s.value for s in up.samples] == [1.0]
    assert up.samples[0].labels["job"] == "prometheus" and not up.truncated
    assert client.query("scalar(vector(3))").samples[0].value == 3.0
    end = time.time() + 12  # the last aligned point falls after the first scrape
    ranged = client.query_range('up{job="prometheus"}', start=end - 600, end=end)
    # 600 s in at most 60 points: the step follows from the window.
    assert ranged.step == 11 and len(ranged.series) == 1
    assert 1 <= len(ranged.series[0].points) <= 60
    assert ranged.series[0].last == 1.0


def test_series_are_capped(prometheus_url: str) -> None:
    client = client_for(prometheus_url, max_series=3)
    many = client.query('{job="prometheus"}')
    assert len(many.samples) == 3 and many.truncated


def test_prometheus_refusing_a_query_is_a_query_error(prometheus_url: str) -> None:
    with pytest.raises(PrometheusError) as caught:
        client_for(prometheus_url).query("sum(rate(up[5m])")
    assert caught.value.reason == "query"
    assert "bad_data" in caught.value.message


@pytest.mark.parametrize(
    "name",
    ['a"} or vector(1) #', 'geo",service=~".*', "geo\\", "Geo", "geo\nx", "a" * 64],
)
def test_a_name_cannot_inject_promql(prometheus_url: str, name: str) -> None:
    # Validation refuses the name before a query exists…
    with pytest.raises(Invalid):
        promql.service(name)
    with pytest.raises(Invalid):
        promql.namespace(name)
    # …and the quoting alone keeps it inside its string: Prometheus matches nothing, it does
    # not evaluate `or vector(1)`.
    query = f"up{promql.selector(('job', '=', promql.string(name)))}"
    assert client_for(prometheus_url).query(query).samples == ()
    regex = promql.string(promql.regex_literal(name) + ".*")
    assert client_for(prometheus_url).query(f"up{{job=~{regex}}}").samples == ()


def test_quoted_names_still_match_themselves(prometheus_url: str) -> None:
    quoted = promql.string(promql.regex_literal("prome") + ".*")
    found = client_for(prometheus_url).query(f"up{{job=~{quoted}}}")
    assert [s.labels["job"] for s in found.samples] == ["prometheus"]


def test_a_hanging_prometheus_times_out_within_the_timeout() -> None:
    with BadPrometheus("hang") as bad:
        client = client_for(bad.url, timeout=0.3)
        started = time.monotonic()
        with pytest.raises(PrometheusError) as caught:
            client.query("up")
        took = time.monotonic() - started
    assert caught.value.reason == "timeout" and "did not answer within 0.3 s" in str(caught.value)
    assert took < 1.5


@pytest.mark.parametrize("mode", ["trickle", "trickle_headers"])
def test_a_trickling_prometheus_is_cut_at_the_deadline(mode: str) -> None:
    # One byte every 0.2 s: no single read waits long enough to time out. The request is still
    # cut at its deadline, its socket is shut (the server sees the client go), and no thread is
    # left reading after the call returns.
    with BadPrometheus(mode) as bad:  # type: ignore[arg-type]
        baseline = threading.active_count()
        client = client_for(bad.url, timeout=0.6)
        started = time.monotonic()
        with pytest.raises(PrometheusError) as caught:
            client.query("up")
        took = time.monotonic() - started
        assert threading.active_count() == baseline
        hung_up = time.monotonic() + 2
        while bad.dripping and time.monotonic() < hung_up:
            time.sleep(0.05)
        assert bad.dripping == 0, "the client kept the trickling connection open"
        client.close()
    assert caught.value.reason == "timeout" and "did not answer within 0.6 s" in str(caught.value)
    # Cut at the deadline, with room for a loaded machine: a trickle left alone would go on
    # for as long as the server kept dripping.
    assert 0.5 < took < 1.6


TRICKLED_READ = """
import sys, time
from agents import telemetry_metrics, telemetry_queries as q
from tools.prometheus import PrometheusClient, PrometheusConfig
client = PrometheusClient(PrometheusConfig(url=sys.argv[1], timeout=1.0))
scope = q.Scope("hotel", ("geo",), "geo-.*")
started = time.monotonic()
try:
    telemetry_metrics.read(client, scope)
except telemetry_metrics.MetricsUnavailable as error:
    print(f"{time.monotonic() - started:.2f}", error.reason)
"""


def test_a_process_reading_figures_from_a_trickler_exits_right_after() -> None:
    # The tester's finding: the figures' reader gave up at its budget, but its worker threads
    # kept reading the trickle and the process only exited minutes later.
    with BadPrometheus("trickle") as bad:
        started = time.monotonic()
        done = subprocess.run(
            [sys.executable, "-c", TRICKLED_READ, bad.url],
            capture_output=True,
            text=True,
            timeout=30,
            check=True,
        )
        took = time.monotonic() - started
    assert "did not answer within 1 s" in done.stdout, done.stdout + done.stderr
    assert float(done.stdout.split()[0]) < 1.6
    assert took < 8, f"the process took {took:.1f} s to exit after the read gave up"


@pytest.mark.parametrize(
    ("mode", "reason", "words"),
    [
        ("http500", "http", "HTTP 500"),
        ("error_json", "query", "bad_data"),
        ("garbage", "bad_response", "not the Prometheus API's JSON"),
        ("huge", "too_large", "more than 8 MB"),
    ],
)
def test_each_failure_is_one_typed_error(mode: str, reason: str, words: str) -> None:
    with BadPrometheus(mode) as bad, pytest.raises(PrometheusError) as caught:  # type: ignore[arg-type]
        client_for(bad.url, timeout=5).query("up")
    assert caught.value.reason == reason and words in caught.value.message


def test_a_prometheus_that_is_down_is_unreachable() -> None:
    with pytest.raises(PrometheusError) as caught:
        client_for(f"http://127.0.0.1:{free_port()}").query("up")
    assert caught.value.reason == "unreachable" and "connection refused" in caught.value.message


def test_auth_and_headers_reach_prometheus(tmp_path: Path) -> None:
    token_file = tmp_path / "token"
    token_file.write_text("rotating-1\n")
    with BadPrometheus("ok") as bad:
        assert client_for(bad.url, token="t0k").query("up").samples[0].value == 0.25
        client = client_for(bad.url, token_file=token_file, headers={"X-Scope-OrgID": "team-a"})
        client.query("up")
        token_file.write_text("rotating-2\n")  # a projected token rotated
        client.query("up")
        client_for(bad.url, username="stratus", password="s3cret").query("up")
    auths = [seen.get("Authorization") for seen in bad.seen]
    basic = "Basic " + base64.b64encode(b"stratus:s3cret").decode()
    assert auths == ["Bearer t0k", "Bearer rotating-1", "Bearer rotating-2", basic]
    assert bad.seen[1]["X-Scope-OrgID"] == "team-a"


def test_tls_needs_the_ca_or_an_explicit_skip(tmp_path: Path) -> None:
    cert, key = self_signed(tmp_path)
    with BadPrometheus("ok", tls=(cert, key)) as bad:
        with pytest.raises(PrometheusError) as caught:
            client_for(bad.url).query("up")
        assert caught.value.reason == "unreachable" and "CA_FILE" in caught.value.message
        assert client_for(bad.url, ca_file=cert).query("up").samples
        assert client_for(bad.url, insecure_skip_verify=True).query("up").samples


def test_configuration_from_the_environment(tmp_path: Path) -> None:
    assert PrometheusConfig.from_env({}) is None
    config = PrometheusConfig.from_env(
        {
            "STRATUS_PROMETHEUS_URL": "https://prom.example:9090/",
            "STRATUS_PROMETHEUS_TIMEOUT": "1.5",
            "STRATUS_PROMETHEUS_HEADERS": "X-Scope-OrgID: team-a; X-Other: b",
            "STRATUS_PROMETHEUS_INSECURE_SKIP_VERIFY": "true",
        }
    )
    assert config is not None and config.base == "https://prom.example:9090"
    assert config.timeout == 1.5 and config.insecure_skip_verify
    assert config.headers == {"X-Scope-OrgID": "team-a", "X-Other": "b"}
    bad = [
        {"STRATUS_PROMETHEUS_URL": "prom:9090"},
        {"STRATUS_PROMETHEUS_URL": "http://p", "STRATUS_PROMETHEUS_TIMEOUT": "soon"},
        {"STRATUS_PROMETHEUS_URL": "http://p", "STRATUS_PROMETHEUS_TIMEOUT": "0"},
        {
            "STRATUS_PROMETHEUS_URL": "http://p",
            "STRATUS_PROMETHEUS_TOKEN": "a",
            "STRATUS_PROMETHEUS_USER": "u",
        },
        {"STRATUS_PROMETHEUS_URL": "http://p", "STRATUS_PROMETHEUS_CA_FILE": str(tmp_path / "x")},
        {"STRATUS_PROMETHEUS_URL": "http://p", "STRATUS_PROMETHEUS_HEADERS": "no colon"},
        {"STRATUS_PROMETHEUS_URL": "http://p", "STRATUS_PROMETHEUS_INSECURE_SKIP_VERIFY": "maybe"},
    ]
    for environ in bad:
        with pytest.raises(StratusError) as caught:
            PrometheusConfig.from_env(environ)
        assert "STRATUS_PROMETHEUS" in caught.value.message or "not both" in caught.value.message


def test_durations() -> None:
    assert promql.seconds("5m") == 300 and promql.seconds("90") == 90
    assert promql.duration(300) == "5m" and promql.duration(90) == "90s"
    with pytest.raises(Invalid):
        promql.seconds("five minutes")
