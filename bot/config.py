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

from pydantic import BaseModel, ConfigDict

from store.errors import Remedy, StratusError

Mode = Literal["socket", "http"]


class ConfigError(StratusError):
    code = "bot_config"
    default_remedy = Remedy.FIX_INPUT


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
    follow_interval: float = 0.3

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
            port=port if port is not None else int(values.get("STRATUS_BOT_PORT", "3000")),
            follow_interval=float(values.get("STRATUS_BOT_FOLLOW_SECONDS", "0.3")),
        )
