"""The bot's configuration: which Slack transport, which tokens, which Web API base URL.

Read from the environment (``stratus serve`` flags override it). Socket Mode needs an
app-level token (``SLACK_APP_TOKEN``, ``xapp-…``); HTTP mode needs the signing secret
(``SLACK_SIGNING_SECRET``). ``STRATUS_SLACK_API_URL`` points the Web API client elsewhere (the
playground); Slack's client needs that base URL to end with a slash, so one is added.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from agents.telemetry_links import LinkConfig
from store.errors import Remedy, StratusError
from tools import names
from tools.env import integer, number
from tools.errors import Invalid

Mode = Literal["socket", "http"]
MIN_ALERTS_TOKEN = 16
MAX_RECONCILE_SECONDS = 300.0  # a late-landing write waits at most this long to be recorded
MIN_RECONCILE_SECONDS = 0.1  # below this recovery would spin on the database
MIN_SHUTDOWN_SECONDS = 1.0  # a stop needs a moment to close its listeners
MAX_SHUTDOWN_SECONDS = 3600.0
MIN_FOLLOW_SECONDS, MAX_FOLLOW_SECONDS = 0.05, 60.0  # the event stream: not a spin, not stale


class ConfigError(StratusError):
    code = "bot_config"
    default_remedy = Remedy.FIX_INPUT


class AlertsConfig(BaseModel):
    """Where alert incidents are posted, and the webhook's token and listener."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    token: str = ""  # empty: the endpoint is off
    channel: str = ""  # the channel alert incidents are posted in
    channels: dict[str, str] = Field(default_factory=dict)  # namespace -> channel
    host: str = "127.0.0.1"  # Socket Mode's own listener
    port: int = 9095

    @property
    def enabled(self) -> bool:
        return bool(self.token)

    def channel_for(self, namespace: str) -> str:
        return self.channels.get(namespace, self.channel)

    @classmethod
    def from_env(cls, values: Mapping[str, str]) -> AlertsConfig:
        token = values.get("STRATUS_ALERTS_TOKEN", "")
        channel = values.get("STRATUS_ALERT_CHANNEL", "")
        channels = _channels(values.get("STRATUS_ALERT_CHANNELS", ""))
        if token and len(token) < MIN_ALERTS_TOKEN:
            raise ConfigError(
                f"STRATUS_ALERTS_TOKEN is too short: at least {MIN_ALERTS_TOKEN} characters "
                "(e.g. openssl rand -hex 32)"
            )
        if token and not channel:
            raise ConfigError(
                "STRATUS_ALERTS_TOKEN is set but STRATUS_ALERT_CHANNEL is not: name the channel "
                "(its ID, e.g. C0123456789) where alert incidents are posted"
            )
        port = integer(
            "STRATUS_ALERTS_PORT", default=9095, low=0, high=65535, what="a port", env=values
        )
        return cls(
            token=token,
            channel=channel,
            channels=channels,
            host=values.get("STRATUS_ALERTS_HOST", "127.0.0.1"),
            port=port,
        )


def _channels(spec: str) -> dict[str, str]:
    """``hotel=C0HOTEL,shop=C0SHOP`` → {namespace: channel}."""
    mapping: dict[str, str] = {}
    for item in filter(None, (part.strip() for part in spec.split(","))):
        namespace, sep, channel = item.partition("=")
        try:
            names.check_namespace(namespace.strip())
        except Invalid as exc:
            raise ConfigError(f"STRATUS_ALERT_CHANNELS: {exc.message}") from exc
        if not sep or not channel.strip():
            raise ConfigError(
                f"STRATUS_ALERT_CHANNELS: {item!r} is not NAMESPACE=CHANNEL (e.g. hotel=C0HOTEL)"
            )
        mapping[namespace.strip()] = channel.strip()
    return mapping


class BotConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    mode: Mode
    bot_token: str
    app_token: str = ""
    signing_secret: str = ""
    api_url: str | None = None
    host: str = "127.0.0.1"
    port: int = 3000
    path: str = "/slack/events"
    # How often the event stream is read for changes made elsewhere (CLI undo, TNR).
    follow_interval: float = Field(default=0.3, ge=MIN_FOLLOW_SECONDS, le=MAX_FOLLOW_SECONDS)
    # How often a Web API call Slack answers ``ratelimited`` is sent again (each after the
    # Retry-After it names) before the caller sees the refusal.
    rate_limit_retries: int = Field(default=5, ge=0, le=20)
    # How often recovery looks at writes whose outcome is not recorded yet (``bot.recovery``).
    reconcile_interval: float = Field(
        default=10.0, ge=MIN_RECONCILE_SECONDS, le=MAX_RECONCILE_SECONDS
    )
    # How long answered work stands still before the leader carries it on itself
    # (``incidents.continuation.PARKED_GRACE_SECONDS``; tests shorten it).
    parked_grace: float = Field(default=30.0, ge=0.0, le=3600.0)
    alerts: AlertsConfig = Field(default_factory=AlertsConfig)  # Alertmanager's webhook
    # The channel where an incident an MCP client's proposal opened gets its thread (docs/
    # mcp.md); empty: the alert channel; neither: such incidents have no thread.
    mcp_channel: str = ""
    # How long a stop (SIGTERM) may take: below a pod's 30 s termination grace period.
    shutdown_seconds: float = Field(default=25.0, ge=MIN_SHUTDOWN_SECONDS, le=MAX_SHUTDOWN_SECONDS)
    # Where a card's figures link to (``agents.telemetry_links``); None: Prometheus links to
    # the Prometheus Stratus queries, no Grafana.
    links: LinkConfig | None = None

    @classmethod
    def from_env(
        cls,
        env: Mapping[str, str] | None = None,
        *,
        mode: str | None = None,
        host: str | None = None,
        port: int | None = None,
    ) -> BotConfig:
        values = os.environ if env is None else env
        bot_token = values.get("SLACK_BOT_TOKEN", "")
        app_token = values.get("SLACK_APP_TOKEN", "")
        secret = values.get("SLACK_SIGNING_SECRET", "")
        chosen = (mode or values.get("STRATUS_SLACK_MODE", "")).lower() or (
            "socket" if app_token else "http"
        )
        if chosen not in ("socket", "http"):
            raise ConfigError(f"unknown Slack mode {chosen!r}: socket or http")
        if not bot_token:
            raise ConfigError("SLACK_BOT_TOKEN is not set (the bot token, xoxb-…)")
        if chosen == "socket" and not app_token:
            raise ConfigError("Socket Mode needs SLACK_APP_TOKEN (an app-level token, xapp-…)")
        if chosen == "http" and not secret:
            raise ConfigError("HTTP mode needs SLACK_SIGNING_SECRET (the app's signing secret)")
        api_url = values.get("STRATUS_SLACK_API_URL") or None
        if api_url and not api_url.endswith("/"):
            api_url += "/"
        return cls(
            mode="socket" if chosen == "socket" else "http",
            bot_token=bot_token,
            app_token=app_token,
            signing_secret=secret,
            api_url=api_url,
            host=host or values.get("STRATUS_BOT_HOST", "127.0.0.1"),
            port=port
            if port is not None
            else integer(
                "STRATUS_BOT_PORT", default=3000, low=0, high=65535, what="a port", env=values
            ),
            follow_interval=number(
                "STRATUS_BOT_FOLLOW_SECONDS",
                default=0.3,
                low=MIN_FOLLOW_SECONDS,
                high=MAX_FOLLOW_SECONDS,
                env=values,
            ),
            reconcile_interval=number(
                "STRATUS_RECONCILE_SECONDS",
                default=10.0,
                low=MIN_RECONCILE_SECONDS,
                high=MAX_RECONCILE_SECONDS,
                env=values,
            ),
            alerts=AlertsConfig.from_env(values),
            links=LinkConfig.from_env(values),
            mcp_channel=values.get("STRATUS_MCP_CHANNEL", "")
            or values.get("STRATUS_ALERT_CHANNEL", ""),
            shutdown_seconds=number(
                "STRATUS_SHUTDOWN_SECONDS",
                default=25.0,
                low=MIN_SHUTDOWN_SECONDS,
                high=MAX_SHUTDOWN_SECONDS,
                env=values,
            ),
        )
