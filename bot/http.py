"""HTTP mode's endpoint: Slack's signed requests into the bolt app.

The signature and the timestamp are checked first, as Slack documents (HMAC-SHA256 of
``v0:{timestamp}:{body}``, at most five minutes old): a forged, tampered or replayed request
gets a 401. A signed body that is not UTF-8 or whose payload is not JSON — which bolt's own
aiohttp adapter answers with a 500 — gets a 400. Neither reaches a listener. A signed request
seen before (a capture replayed within the five minutes) is acknowledged and ignored
(``bot.replay``). Bolt then checks the signature again, as it always does.
"""

from __future__ import annotations

import hashlib
import hmac
import logging
import time
from collections.abc import Awaitable, Callable

from aiohttp import web
from slack_bolt.adapter.aiohttp import to_aiohttp_response
from slack_bolt.async_app import AsyncApp
from slack_bolt.request.async_request import AsyncBoltRequest

from bot.payloads import well_encoded, well_formed

log = logging.getLogger("stratus.bot")
MAX_BODY = 1024 * 1024
MAX_AGE = 300  # seconds: Slack's replay window


def signed(secret: str, raw: bytes, *, timestamp: str, signature: str, now: float) -> bool:
    """Slack's request signature over the raw bytes (whatever their encoding)."""
    try:
        moment = int(timestamp)
    except ValueError:
        return False
    if abs(now - moment) > MAX_AGE:
        return False
    base = b"v0:" + timestamp.encode() + b":" + raw
    expected = "v0=" + hmac.new(secret.encode(), base, hashlib.sha256).hexdigest()
    return hmac.compare_digest(expected.encode(), signature.encode("utf-8", "replace"))


# Records a signed request (its signature and timestamp); False when it was seen before.
FirstTime = Callable[[str, int], Awaitable[bool]]


def web_app(
    app: AsyncApp,
    path: str,
    signing_secret: str,
    *,
    first_time: FirstTime,
    acting: Callable[[], bool] = lambda: True,
) -> web.Application:
    """``acting``: whether this process leads; one that does not records nothing (not even
    that it saw a request) and leaves the answer to the door (``bot.handover``)."""

    async def handle(request: web.Request) -> web.Response:
        raw = await request.read()
        if len(raw) > MAX_BODY:
            return web.Response(status=413, text="request body too large")
        headers = {k.lower(): v for k, v in request.headers.items()}
        if not signed(
            signing_secret,
            raw,
            timestamp=headers.get("x-slack-request-timestamp", ""),
            signature=headers.get("x-slack-signature", ""),
            now=time.time(),
        ):
            return web.Response(status=401, text="invalid request")
        try:
            decoded = raw.decode("utf-8")
        except UnicodeDecodeError:
            log.warning("a signed request whose body is not UTF-8; answered 400")
            return web.Response(status=400, text="malformed request")
        if not well_encoded(decoded, headers.get("content-type", "")):
            log.warning("a signed request not encoded as Slack encodes; answered 400")
            return web.Response(status=400, text="malformed request")
        try:
            bolt_request = AsyncBoltRequest(
                body=decoded,
                query=request.query_string,
                headers={k: [v] for k, v in headers.items()},
            )
        except (ValueError, LookupError, RecursionError, AttributeError, TypeError):
            # Bolt's constructor parses the body once (a click's payload carries the whole
            # message: parsing it twice cost a millisecond a click) and fails on a payload
            # that is not an object, or whose parts bolt indexes are of the wrong type.
            log.warning("a signed request whose body cannot be read; answered 400")
            return web.Response(status=400, text="malformed request")
        if not well_formed(bolt_request.body):
            log.warning("a signed request of a shape Slack does not send; answered 400")
            return web.Response(status=400, text="malformed request")
        stamp = int(headers["x-slack-request-timestamp"])
        if acting() and not await first_time(headers["x-slack-signature"], stamp):
            # Acknowledged like the first delivery, so a replay learns nothing; it does nothing.
            log.warning("a signed request was sent again (timestamp %d); ignored", stamp)
            return web.Response(status=200)
        return await to_aiohttp_response(await app.async_dispatch(bolt_request))

    server = web.Application(client_max_size=MAX_BODY + 1)
    server.router.add_post(path, handle)
    return server
