"""How many errors the Kubernetes API answered this process, by status code.

The store keeps what Stratus decided and wrote, not every refusal or outage the API server
answered on the way (a read that failed, a retried conflict), so this one figure is counted in
memory: ``tools.k8s.translate`` counts each client error it words, and the metrics endpoint
(``operations.metrics``) exports the tally. It starts at zero with the process, as a
Prometheus counter does.
"""

from __future__ import annotations

import threading
from collections import Counter

UNREACHABLE = "unreachable"  # no HTTP answer at all: refused, reset, timed out

_lock = threading.Lock()
_counts: Counter[str] = Counter()


def record(code: int | str) -> None:
    """One more error answered with ``code`` (an HTTP status, or ``UNREACHABLE``)."""
    with _lock:
        _counts[str(code)] += 1


def snapshot() -> dict[str, int]:
    with _lock:
        return dict(_counts)
