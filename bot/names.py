"""Who an id is: the handles of the users and user groups a policy names, read from Slack and
cached, so that a card says "requires 1 approval from @sre" rather than ``S0SRE``.

A policy names approvers by id (ids do not change when someone renames a handle); people read
handles. One ``usergroups.list`` answers every group at once, ``users.info`` one user; both
are cached for ``ttl`` and a failed lookup leaves the id as it was (a card never waits on, or
fails for, a name).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterable

import aiohttp
from slack_sdk.errors import SlackApiError
from slack_sdk.web.async_client import AsyncWebClient

log = logging.getLogger("stratus.bot")
NAMES_TTL = 600.0


class Names:
    def __init__(self, client: AsyncWebClient, ttl: float = NAMES_TTL) -> None:
        self.client = client
        self.ttl = ttl
        self._handles: dict[str, tuple[float, str]] = {}
        self._groups_read = -ttl - 1.0

    def known(self) -> dict[str, str]:
        """Every id whose handle is known: id → handle (no ``@``)."""
        return {k: v for k, (_, v) in self._handles.items() if v}

    async def warm(self, ids: Iterable[str]) -> dict[str, str]:
        """Look up what is not cached (or is stale) among ``ids``; returns ``known()``."""
        now = time.monotonic()
        wanted = {i for i in ids if i and i[0] in "SUW" and i[1:].isalnum() and i.isupper()}
        stale = {i for i in wanted if now - self._handles.get(i, (-self.ttl - 1, ""))[0] > self.ttl}
        if any(i.startswith("S") for i in stale) and now - self._groups_read > self.ttl:
            await self._groups(now)
        for user in sorted(i for i in stale if i[0] in "UW"):
            await self._user(user, now)
        return self.known()

    async def _groups(self, now: float) -> None:
        self._groups_read = now
        try:
            response = await self.client.usergroups_list()
        except (SlackApiError, aiohttp.ClientError, TimeoutError) as error:
            log.warning("usergroups.list failed; cards show group ids: %s", error)
            return
        for group in response.get("usergroups") or []:
            if group.get("id") and group.get("handle"):
                self._handles[str(group["id"])] = (now, str(group["handle"]))

    async def _user(self, user: str, now: float) -> None:
        try:
            response = await self.client.users_info(user=user)
        except (SlackApiError, aiohttp.ClientError, TimeoutError) as error:
            log.warning("users.info %s failed; cards show its id: %s", user, error)
            self._handles[user] = (now, "")
            return
        profile = response.get("user") or {}
        self._handles[user] = (now, str(profile.get("name") or ""))
