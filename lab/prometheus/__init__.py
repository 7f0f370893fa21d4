"""A real Prometheus and Alertmanager for the lab (Debian's ``prometheus`` and
``prometheus-alertmanager``), used by ``stratus lab up --prometheus``, ``stratus demo`` and
the tests::

    from lab.prometheus import PrometheusStack, WebhookTarget, unavailable

    if (reason := unavailable()) is None:
        with PrometheusStack(lab_url=lab.url, token=LAB_TOKEN, workdir=tmp,
                             rule_files=[Path("manifests/prometheus/alerts.yaml")],
                             webhook=WebhookTarget(url, "token")) as stack:
            stack.prometheus_url, stack.alertmanager_url

Rules are loaded on the lab's clock (``rules``: ``for: 5m`` and ``[5m]`` become 10 s at the
default time scale of 30). Additions to the contract: ``PrometheusError`` (start failures,
with the log's tail), ``PrometheusStack.log_tail(name)``, ``start(timeout=)``, ``workdir``
may be None (a temporary directory, removed on stop).
"""

from lab.prometheus.config import WebhookTarget
from lab.prometheus.rules import DEFAULT_TIME_SCALE, RuleFileError
from lab.prometheus.stack import PrometheusError, PrometheusStack, unavailable

__all__ = [
    "DEFAULT_TIME_SCALE",
    "PrometheusError",
    "PrometheusStack",
    "RuleFileError",
    "WebhookTarget",
    "unavailable",
]
