"""The card's "Error lines" are the target's own log lines (issue 18 §3): not the names of pods
or deployments that a health detail happened to contain, not a caller's blanked signature, and
cut at a word boundary on the card with the whole lines one click away."""

from __future__ import annotations

from agents.health import HealthScore
from agents.telemetry import error_lines, summarize
from agents.verify import look
from bot import buttons, cards
from bot.telemetry import telemetry_text
from proposals.model import Proposal
from proposals.service import ProposalService
from store.db import Store
from tests.bot.conftest import inject
from tests.conftest import Lab
from tests.proposals.conftest import PolicyBox
from tools.executor import Executor
from tools.k8s import KubeClient
from tools.reads import ClusterReader


def propose(kube: KubeClient, store: Store, name: str) -> Proposal:
    service = ProposalService(
        store=store, executor=Executor(kube, store, lock_wait=0.5), policy=PolicyBox()
    )
    return service.propose(
        action="rollout-restart",
        kind="Deployment",
        name=name,
        namespace="hotel",
        requester="U0REQ",
    )


def test_error_lines_are_the_targets_log_lines_not_pod_names(
    lab: Lab, kube: KubeClient, store: Store
) -> None:
    inject(lab, "hotel-reservation-env-changed")  # reservation logs its failed queries
    health: HealthScore = look(kube, "hotel")
    reader = ClusterReader(kube)
    summary = summarize(reader, propose(kube, store, "reservation"))
    assert summary.errors, summary
    pods = [p["metadata"]["name"] for p in kube.list("v1", "Pod", namespace="hotel")]
    for line in summary.errors:
        assert not any(line.startswith(pod) or line == pod for pod in pods), line
        assert "deployment/" not in line, line
        assert "#" not in line, line  # a log line as written, not a blanked signature
    # Every one is a line reservation's own pods logged.
    pod = next(p for p in pods if p.startswith("reservation-"))
    logged = kube.read_log("hotel", pod)
    assert all(line.split("  (x")[0] in logged for line in summary.errors), summary.errors
    assert health.details  # the health details exist, and are not where the lines come from
    assert error_lines(reader, propose(kube, store, "reservation")) == summary.errors


def test_a_target_that_logs_nothing_wrong_shows_no_error_lines(
    lab: Lab, kube: KubeClient, store: Store
) -> None:
    inject(lab, "hotel-recommendation-scaled-to-zero")
    # The health details name frontend's failed calls to recommendation and its pods.
    health = look(kube, "hotel")
    assert any("recommendation" in line for lines in health.details.values() for line in lines)
    summary = summarize(ClusterReader(kube), propose(kube, store, "recommendation"))
    assert summary.errors == []
    assert "Error lines" not in telemetry_text(summary)


def test_long_lines_are_cut_at_a_word_with_a_way_to_see_them_whole() -> None:
    from agents.telemetry import Telemetry

    long = "ERROR query failed: " + " ".join(f"word{i}" for i in range(60))
    # Newest last: the card shows the newest three, the oldest is one click away.
    summary = Telemetry(pods="1/1", errors=["ERROR oldest", "ERROR second", "ERROR third", long])
    shown = telemetry_text(summary)
    line = next(x for x in shown.splitlines() if x.startswith("Error lines"))
    cut = line.split("`")[-2]
    assert cut.endswith("…") and long.startswith(cut.removesuffix("…")), cut
    assert cut.removesuffix("…").split()[-1] in long.split()  # no word cut in half
    assert len(cut) <= 120
    assert "ERROR oldest" not in line and "ERROR second" in line
    assert "1 more" in shown and "See the error lines" in shown
    assert buttons.LOGS in str(cards.telemetry_blocks(summary, "prop-1"))
    whole = Telemetry(pods="1/1", errors=["ERROR one short line"])
    assert buttons.LOGS not in str(cards.telemetry_blocks(whole, "prop-1"))
