"""Prometheus, read-only: configuration from the environment, a bounded HTTP API client with
typed results and one typed error, and PromQL built from validated, quoted names."""

from tools.prometheus.client import (
    InstantResult,
    PrometheusClient,
    PrometheusError,
    RangeResult,
    Sample,
    Series,
)
from tools.prometheus.config import PrometheusConfig

__all__ = [
    "InstantResult",
    "PrometheusClient",
    "PrometheusConfig",
    "PrometheusError",
    "RangeResult",
    "Sample",
    "Series",
    "from_env",
]


def from_env() -> PrometheusClient | None:
    """The client the environment configures, or ``None`` (no metrics source)."""
    config = PrometheusConfig.from_env()
    return PrometheusClient(config) if config is not None else None
