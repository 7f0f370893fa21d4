"""Alertmanager's webhook: alerts that open incidents without anyone typing.

``POST /alerts/alertmanager`` takes Alertmanager's webhook body (version 4). The checks come
in the order that spends least on a stranger: the endpoint is off (503, says how to turn it
on) until ``STRATUS_ALERTS_TOKEN`` is set; the ``Authorization: Bearer`` token is compared in
constant time before the body is read (401, nothing opened); a body over 1 MiB is refused
(413); a body that is not JSON, or not Alertmanager's shape, is refused (400). An accepted
notification is stored at once (``incidents.alert_store.AlertIntake``: one incident per alert
group, deduplicated by group key) and answered 200 with what was decided; posting the
incident's thread and investigating run in the background. A failure to reach the cluster
or the store answers 503, so Alertmanager sends the notification again.

Served on the bot's own HTTP server in HTTP mode, and on a small listener of its own
(``STRATUS_ALERTS_HOST``/``STRATUS_ALERTS_PORT``) in Socket Mode, where the bot has no server.
"""

from __future__ import annotations

import asyncio
import hmac
import json
import logging

from aiohttp import web
from pydantic import ValidationError

from bot import alert_blocks
from bot.config import AlertsConfig
from bot.driver import Driver
from bot.follower import Follower
from bot.links import MessageRef
from bot.parking import Threads
from bot.runtime import Runtime
from bot.text import command_words, thread_words
from incidents.alert_store import AlertIntake
from incidents.alerts import AlertmanagerPayload, Refusal
from incidents.model import AGENT_SOURCE
from store.errors import StratusError

log = logging.getLogger("stratus.bot")
PATH = "/alerts/alertmanager"
MAX_BODY = 1024 * 1024


def bearer_matches(header: str, token: str) -> bool:
    """``Authorization: Bearer <token>``, compared in constant time."""
    scheme, _, given = header.partition(" ")
    if scheme.lower() != "bearer" or not token:
        return False
    return hmac.compare_digest(given.strip().encode("utf-8", "replace"), token.encode())


class AlertThreads:
    """The incident thread of an alert: posted once, in the channel the config names — or,
    when Slack refuses it (``channel_not_found``, ``not_in_channel`` for the alert channel,
    ``ratelimited`` after the retries), the incident is parked as a command's would be
    (``bot.parking``): nothing runs, it shows in ``stratus incidents`` and in the admins' App
    Home with Retry, and it ends after the workflow's ``park_seconds``. A retry is the button,
    ``/stratus investigate`` of the namespace, or the alert group notified again."""

    def __init__(
        self,
        runtime: Runtime,
        follower: Follower,
        threads: Threads,
        config: AlertsConfig,
        *,
        mcp_channel: str = "",
    ) -> None:
        self.rt = runtime
        self.follower = follower
        self.threads = threads
        self.config = config
        # An incident an MCP client's proposal opened is posted the same way, in this channel.
        self.mcp_channel = mcp_channel
        self._locks: dict[str, asyncio.Lock] = {}

    async def ensure(self, incident_id: str, *, retry: bool = False) -> MessageRef | None:
        """The incident's thread, posted now if it has none; None when it could not be posted
        (the incident is parked then). A parked incident is tried again only on ``retry``:
        the follower meeting its events again is no reason to knock on Slack once more."""
        async with self._locks.setdefault(incident_id, asyncio.Lock()):
            existing = await self.rt.call(self.rt.links.thread, incident_id)
            if existing is not None:
                return existing
            incident = await self.rt.call(self.rt.incidents.get, incident_id)
            if incident.parked and not retry:
                return None
            if incident.source == AGENT_SOURCE:
                if not self.mcp_channel or not incident.is_open:
                    return None  # nowhere to post it, or it ended before anything was asked
                channel = self.mcp_channel
            else:
                channel = self.config.channel_for(incident.namespace)
            parent, error = await self.threads.post_thread(incident, channel, incident.requester)
            if parent is None:
                log.error(
                    "the thread of alert incident %s could not be posted in %s (%s): parked",
                    incident_id,
                    channel,
                    error,
                )
            return parent


class AlertReceiver:
    def __init__(
        self,
        runtime: Runtime,
        *,
        threads: AlertThreads,
        driver: Driver,
        config: AlertsConfig,
    ) -> None:
        self.rt = runtime
        self.threads = threads
        self.driver = driver
        self.config = config
        self.intake = AlertIntake(runtime.workflow)

    def add_to(self, server: web.Application) -> None:
        server.router.add_post(PATH, self.handle)

    async def handle(self, request: web.Request) -> web.Response:
        if not self.config.enabled:
            return _answer(503, thread_words.ALERTS_OFF)
        if not bearer_matches(request.headers.get("Authorization", ""), self.config.token):
            return web.json_response(
                {"error": thread_words.ALERTS_UNAUTHORIZED},
                status=401,
                headers={"WWW-Authenticate": 'Bearer realm="stratus-alerts"'},
            )
        if not self.rt.acting():
            # A deposed leader stores nothing: Alertmanager retries a 5xx, to whoever leads then
            # (docs/operations.md, the door).
            log.warning("an alert notification reached a Stratus that does not lead; refused")
            return _answer(503, command_words.HANDING_OVER)
        raw = await _read(request)
        if raw is None:
            return _answer(413, thread_words.ALERTS_TOO_LARGE)
        try:
            payload = AlertmanagerPayload.model_validate(json.loads(raw.decode("utf-8")))
        except (ValueError, RecursionError) as error:
            problem = _problem(error)
            log.info("alert webhook refused: %s", problem)
            return _answer(400, thread_words.alerts_malformed(problem))
        try:
            result = await self.rt.call(self.intake.receive, payload)
        except StratusError as error:
            log.warning("alert webhook could not be stored: %s", error.message)
            return _answer(503, thread_words.alerts_unavailable(error.message))
        for incident_id in result.opened:
            self.rt.spawn(self._investigate(incident_id), name=f"alert {incident_id}")
        for group in result.groups:
            if group.incident_id and not group.opened and group.action != "refuse":
                self.rt.spawn(self._retry_parked(group.incident_id), name="alert retry")
                if group.fired:
                    self.rt.spawn(
                        self.driver.carry_on_joined(group.incident_id), name="alert joined"
                    )
        for refusal in result.refused:
            if refusal.cluster and self.config.channel:
                self.rt.spawn(self._cluster_refused(refusal), name="alert cluster refused")
        self.threads.follower.wake()
        return web.json_response(result.to_json())

    async def _cluster_refused(self, refusal: Refusal) -> None:
        """An alert naming a cluster the fleet does not serve opens nothing (no guess); the
        alert channel is told, so that someone fixes the labels or the configuration."""
        where = MessageRef(self.config.channel, "")
        await self.threads.follower.post(
            where,
            alert_blocks.cluster_refused(refusal),
            command_words.alert_cluster_refused_fallback(),
        )

    async def _investigate(self, incident_id: str, *, retry: bool = False) -> None:
        if await self.threads.ensure(incident_id, retry=retry) is None:
            return  # parked: nothing runs that nobody could see
        await self.driver.advance(incident_id)
        self.threads.follower.wake()

    async def _retry_parked(self, incident_id: str) -> None:
        """The alert group was notified again: the incident it opened may be parked, and this
        is as good a moment as any to try its thread again."""
        incident = await self.rt.call(self.rt.incidents.get, incident_id)
        if incident.is_open and incident.parked:
            await self._investigate(incident_id, retry=True)


async def _read(request: web.Request) -> bytes | None:
    """The body, or None past ``MAX_BODY`` (read in pieces: a chunked body has no length)."""
    if request.content_length is not None and request.content_length > MAX_BODY:
        return None
    body = bytearray()
    while piece := await request.content.read(65536):
        body += piece
        if len(body) > MAX_BODY:
            return None
    return bytes(body)


def _problem(error: Exception) -> str:
    if isinstance(error, ValidationError):
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        return f"{where}: {first['msg']}"[:300] + (
            f" (and {error.error_count() - 1} more)" if error.error_count() > 1 else ""
        )
    if isinstance(error, UnicodeDecodeError):
        return "the body is not UTF-8"
    if isinstance(error, RecursionError):
        return "the body is nested too deeply"
    return "the body is not JSON"


def _answer(status: int, message: str) -> web.Response:
    return web.json_response({"error": message}, status=status)


class AlertListener:
    """Socket Mode's own small HTTP server for the webhook."""

    def __init__(self, receiver: AlertReceiver, config: AlertsConfig) -> None:
        self.receiver = receiver
        self.config = config
        self._runner: web.AppRunner | None = None
        self.url = ""

    async def start(self) -> None:
        server = web.Application(client_max_size=MAX_BODY + 1)
        self.receiver.add_to(server)
        self._runner = web.AppRunner(server, access_log=None, shutdown_timeout=1.0)
        await self._runner.setup()
        site = web.TCPSite(self._runner, self.config.host, self.config.port)
        await site.start()
        bound = getattr(site, "_server", None)
        port = bound.sockets[0].getsockname()[1] if bound and bound.sockets else 0
        self.url = f"http://{self.config.host}:{port}{PATH}"

    async def stop(self) -> None:
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
