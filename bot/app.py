"""The Slack app: a slack-bolt ``AsyncApp`` wired to the commands, clicks, events, the
authorization middleware and the event-stream follower; served over HTTP (Slack signs every
request; bolt refuses a bad signature or a stale timestamp with 401) or over Socket Mode.

``StratusBot`` owns the lifecycle: ``start`` begins following the event stream and resumes the
open incidents a previous run left; ``stop`` waits for background work.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Coroutine
from typing import Any

import aiohttp
from aiohttp import web
from slack_bolt.async_app import AsyncApp
from slack_bolt.error import BoltUnhandledRequestError
from slack_bolt.response import BoltResponse
from slack_sdk.errors import SlackApiError
from slack_sdk.http_retry.builtin_async_handlers import AsyncRateLimitErrorRetryHandler
from slack_sdk.web.async_client import AsyncWebClient

from bot import alerts, buttons, handover, home, http, modals, parking, questions, replay
from bot.actions import Clicks
from bot.authz import Gate, Groups, middleware
from bot.commands import Commands
from bot.config import BotConfig
from bot.driver import Driver
from bot.follower import Follower
from bot.links import MessageRef
from bot.listener import Parts
from bot.parking import Threads
from bot.recovery import Reconciler
from bot.runtime import Runtime

STOP_SECONDS = 10.0
SLACK_PROBE_SECONDS = 30.0


async def _bounded(
    step: Coroutine[Any, Any, Any], what: str, seconds: float = STOP_SECONDS
) -> None:
    try:
        await asyncio.wait_for(step, timeout=seconds)
    except TimeoutError:
        log.warning("%s took longer than %.1f s; going on", what, seconds)


log = logging.getLogger("stratus.bot")


async def _error(error: Exception, request: Any) -> BoltResponse | None:
    if isinstance(error, BoltUnhandledRequestError):
        body = request.body if isinstance(request.body, dict) else {}
        log.warning("a signed request no listener takes (%s); answered 400", body.get("type"))
        return BoltResponse(status=400, body="unhandled request")
    if isinstance(error, SlackApiError):  # Slack refused a call a request led to (a user or a
        # channel that does not exist, a stale trigger): the request's fault, not ours
        log.warning("Slack refused a call: %s", error.response.get("error"))
        return None
    log.error("handling a request failed", exc_info=error)  # our bug: keep its traceback
    return None


class StratusBot:
    def __init__(
        self, runtime: Runtime, config: BotConfig, *, client: AsyncWebClient | None = None
    ) -> None:
        self.rt = runtime
        self.config = config
        # ``client``: the unit tests' in-process Web API (tests/unit/slack.py); Slack otherwise.
        self.client = client or AsyncWebClient(
            token=config.bot_token,
            base_url=config.api_url or AsyncWebClient.BASE_URL,
            retry_handlers=[
                AsyncRateLimitErrorRetryHandler(max_retry_count=config.rate_limit_retries)
            ],
        )
        self.app = AsyncApp(
            client=self.client,
            signing_secret=config.signing_secret or "socket-mode",
            # Requests are answered as soon as a listener acks; the work goes on after.
            process_before_response=False,
            # A request no listener takes (an action, modal or event we never sent or asked
            # for) is answered 400 with one log line by ``_error``, not bolt's 404 and its
            # multi-line suggestion of a listener to write.
            raise_error_for_unhandled_request=True,
        )
        self.follower = Follower(
            runtime, self.client, interval=config.follow_interval, links=config.links
        )
        self.driver = Driver(runtime)
        self.recovery = Reconciler(
            runtime,
            self.follower,
            self.driver,
            interval=config.reconcile_interval,
            grace=config.parked_grace,
        )
        self.gate = Gate(runtime, Groups(self.client), names=self.follower.names)
        self.threads = Threads(runtime, self.follower, self.driver, self.gate)
        parts = Parts(runtime, self.client, self.follower, self.driver, self.gate)
        self.commands = Commands(parts, self.threads)
        self.clicks = Clicks(parts)
        self.alert_threads = alerts.AlertThreads(
            runtime, self.follower, self.threads, config.alerts, mcp_channel=config.mcp_channel
        )
        self.alerts = alerts.AlertReceiver(
            runtime, threads=self.alert_threads, driver=self.driver, config=config.alerts
        )
        self._alert_listener: alerts.AlertListener | None = None
        self.alerts_url = ""
        if config.alerts.enabled or config.mcp_channel:
            self.follower.alert_threads = self.alert_threads
        self._runner: web.AppRunner | None = None
        self._socket: Any = None
        self.url = ""
        self._slack_ok_at: float | None = None  # when Slack last accepted the token
        self._serving = False  # between the end of ``start`` and the beginning of ``stop``
        self._wire()

    def _wire(self) -> None:
        app = self.app
        app.middleware(handover.middleware(self.rt))  # first: a deposed leader takes nothing
        app.middleware(middleware(self.gate))
        app.command("/stratus")(self._command)
        app.action(buttons.APPROVE)(self.clicks.approve)
        app.action(buttons.ALWAYS)(self.clicks.always)
        app.action(buttons.PLAN)(self.clicks.plan)
        app.action(buttons.REJECT)(self.clicks.reject)
        app.action(buttons.OTHER)(self.clicks.other)
        app.action(buttons.UNDO)(self.clicks.undo)
        app.action(buttons.FORCE_UNDO)(self.clicks.force_undo)
        app.action(buttons.DIFF)(self.clicks.diff)
        app.action(buttons.LOGS)(self.clicks.error_lines)
        app.action(buttons.REVOKE)(self.clicks.revoke)
        app.action(buttons.LOOK_AGAIN)(self.clicks.look_again)
        app.action(parking.RETRY)(self.threads.retry_click)
        app.view(modals.REJECT_VIEW)(self.clicks.reject_reason)
        app.event("app_home_opened")(self._home)
        app.event("app_mention")(self._mention)
        app.event("message")(self._message)
        app.error(_error)

    async def _command(self, ack: Any, command: dict[str, Any]) -> None:
        await self.commands.dispatch(command, ack)

    async def _home(self, event: dict[str, Any]) -> None:
        if event.get("tab", "home") == "home":
            await home.publish(self.rt, self.gate, self.client, str(event.get("user", "")))

    async def _mention(self, event: dict[str, Any]) -> None:
        await self._question(event)

    async def _message(self, event: dict[str, Any], context: dict[str, Any]) -> None:
        if event.get("subtype") or event.get("bot_id"):
            return
        # Bolt's context carries our user id (from auth.test); a message that mentions us
        # also arrives as an app_mention, which answers it.
        me = str(context.get("bot_user_id") or "")
        if me and f"<@{me}>" in str(event.get("text", "")):
            return
        await self._question(event)

    async def _question(self, event: dict[str, Any]) -> None:
        thread = event.get("thread_ts")
        channel = str(event.get("channel", ""))
        if not thread or event.get("bot_id"):
            return
        incident_id = await self.rt.call(self.rt.links.incident_at, channel, str(thread))
        if incident_id is None:
            return
        asked = str(event.get("text", ""))
        where = MessageRef(channel, str(thread))
        if questions.kind(asked) == "summary":
            await self.follower.post_summary(incident_id, where)
            return
        if questions.kind(asked) == "postmortem":
            await self.follower.post_postmortem(incident_id, where)
            return
        incident = await self.rt.call(self.rt.incidents.get, incident_id)
        events = await self.rt.call(self.rt.incidents.events, incident_id=incident_id, limit=5000)
        messages = [e.event.message for e in events if e.event.message]
        undone = None
        if questions.kind(asked) == "undone":
            proposals = await self.rt.call(self.rt.service.by_incident, incident_id)
            undone = questions.undone(proposals)
        reply = await questions.reply(self.rt.answerer, incident, asked, messages, undone)
        await self.client.chat_postMessage(channel=channel, thread_ts=str(thread), text=reply)

    # ------------------------------------------------------------------ lifecycle

    async def rejected(self) -> str | None:
        """Why Slack does not accept this bot's token (``auth.test``), or None when it does."""
        try:
            await self.client.auth_test()
        except (SlackApiError, aiohttp.ClientError, OSError) as error:
            return str(error)
        return None

    async def slack_connected(self) -> str | None:
        """Readiness (``bot.health``): why Slack is not reachable for this bot now, or None.
        Socket Mode needs its connection up; both modes need Slack to accept the token, asked
        at most every ``SLACK_PROBE_SECONDS`` (a probe every few seconds must not spend the
        workspace's rate limit)."""
        if not self._serving:
            return "the bot is not serving (starting or stopping)"
        if self.config.mode == "socket":
            socket_client = getattr(self._socket, "client", None)
            if socket_client is None or not await socket_client.is_connected():
                return "the Socket Mode connection is not open"
        now = time.monotonic()
        # Only a success is remembered: a refusal is asked again at the next probe, so the
        # bot is ready again as soon as Slack is back.
        if self._slack_ok_at is None or now - self._slack_ok_at >= SLACK_PROBE_SECONDS:
            why = await self.rejected()
            self._slack_ok_at = now if why is None else None
            return why
        return None

    async def start(self) -> None:
        # One HTTP session (a pool of kept-alive connections) for every Web API call: without
        # it slack_sdk opens a session and a TCP connection per call, and fifty refusals at
        # once each paid a connect on the event loop that acknowledges the next clicks.
        self.client.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=30))
        await self.follower.start()
        self.recovery.start()
        await self.driver.resume_open()
        # At takeover: what the previous leader left approved and unexecuted is carried on
        # (the open incidents are advanced above; this adds the standalone proposals).
        self.rt.spawn(self.recovery.carry_on(), name="carry on parked work")
        named = [*self.rt.approvers_named(), *self.rt.mapped_groups()]
        self.rt.spawn(self.gate.groups.warm(named), name="warm user groups")
        if self.config.mode == "http":
            seen = await self.rt.call(replay.SeenRequests, self.rt.store, window=http.MAX_AGE)

            async def first_time(signature: str, stamp: int) -> bool:
                return await self.rt.call(seen.first_time, signature, stamp=stamp, now=time.time())

            server_app = http.web_app(
                self.app,
                self.config.path,
                self.config.signing_secret,
                first_time=first_time,
                acting=self.rt.acting,
            )
            self.alerts.add_to(server_app)  # off (503, says why) without STRATUS_ALERTS_TOKEN
            self._runner = web.AppRunner(
                server_app,
                access_log=None,
                # Slack keeps its connections alive; acknowledgements take milliseconds.
                shutdown_timeout=1.0,
            )
            await self._runner.setup()
            site = web.TCPSite(self._runner, self.config.host, self.config.port)
            await site.start()
            server = getattr(site, "_server", None)
            port = server.sockets[0].getsockname()[1] if server and server.sockets else 0
            self.url = f"http://{self.config.host}:{port}{self.config.path}"
            self.alerts_url = f"http://{self.config.host}:{port}{alerts.PATH}"
        else:
            from slack_bolt.adapter.socket_mode.async_handler import AsyncSocketModeHandler

            web_client = AsyncWebClient(
                token=self.config.app_token,
                base_url=self.config.api_url or AsyncWebClient.BASE_URL,
            )
            self._socket = AsyncSocketModeHandler(
                self.app, self.config.app_token, web_client=web_client
            )
            await self._socket.connect_async()
            if self.config.alerts.enabled:  # Socket Mode has no server: the webhook's own
                self._alert_listener = alerts.AlertListener(self.alerts, self.config.alerts)
                await self._alert_listener.start()
                self.alerts_url = self._alert_listener.url
        self._serving = True
        log.info("stratus bot started (%s mode) %s", self.config.mode, self.url)
        log.info(
            "Alertmanager webhook: %s",
            self.alerts_url if self.config.alerts.enabled else "off (STRATUS_ALERTS_TOKEN unset)",
        )

    async def stop(self, within: float | None = None) -> int:
        """Stop taking requests, let background work finish (bounded), stop following.
        Every step is bounded: a peer that never closes its connection must not keep the
        bot from stopping (the workflows' state is in the store; a restart resumes them).

        ``within``: the whole stop's bound (``stratus serve`` on SIGTERM); None bounds each
        step by ``STOP_SECONDS``. Requests stop first — the listeners close, so Slack
        redelivers to the next instance —, then the work in flight finishes. Returns how many
        calls still run in worker threads at the bound: a write among them has its
        write-ahead record, so the caller may exit and leave them to recovery."""
        self._serving = False
        loop = asyncio.get_running_loop()
        deadline = None if within is None else loop.time() + within

        def left(share: float = 1.0) -> float:
            if deadline is None:
                return STOP_SECONDS
            return max((deadline - loop.time()) * share, 0.05)

        if self._socket is not None:
            await _bounded(self._socket.close_async(), "closing the Socket Mode connection", left())
        if self._runner is not None:
            await _bounded(self._runner.cleanup(), "closing the HTTP server", left())
        if self._alert_listener is not None:
            await _bounded(
                self._alert_listener.stop(), "closing the alert webhook listener", left()
            )
        await self.recovery.stop()
        # Most of what is left goes to the work in flight; the rest to the last cards.
        await self.rt.drain(timeout=left(0.8))
        await self.rt.calls_finished(left(0.8) if deadline is not None else 0.0)
        await _bounded(self.follower.stop(), "stopping the event follower", left())
        self.rt.close()
        if self.client.session is not None:
            await self.client.session.close()
        return self.rt.running
