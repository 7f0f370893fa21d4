"""The playground's workspace: its configuration (team, app, tokens, seeded users, groups and
channels) and its state (messages, ephemerals, views, triggers, response URLs, captured calls
and deliveries), with a version that the browser page long-polls on.

Messages are kept as the dicts Slack returns, so the Web API, the payloads delivered to the
bot and the page all show the same object.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

Json = dict[str, Any]


@dataclass(frozen=True)
class SeedUser:
    id: str
    name: str
    real_name: str
    title: str = ""


@dataclass(frozen=True)
class SeedChannel:
    id: str
    name: str
    bot_member: bool = True
    members: tuple[str, ...] | None = None  # None: every seeded user


@dataclass(frozen=True)
class SeedGroup:
    id: str
    handle: str
    name: str
    members: tuple[str, ...]


DEFAULT_USERS = (
    SeedUser("U0ALICE", "alice", "Alice Approver", "SRE on call"),
    SeedUser("U0BOB", "bob", "Bob Builder", "SRE"),
    SeedUser("U0CAROL", "carol", "Carol Lead", "Platform lead"),
    SeedUser("U0DAVE", "dave", "Dave Developer", "Developer (not an approver)"),
)
DEFAULT_GROUPS = (SeedGroup("S0SRE", "sre", "SRE team", ("U0ALICE", "U0BOB", "U0CAROL")),)
DEFAULT_CHANNELS = (
    SeedChannel("C0INCIDENT", "incidents"),
    SeedChannel("C0RANDOM", "random", bot_member=False),
)

# Slack's documented rate-limit tiers (calls per minute) for the methods the playground serves;
# chat.postMessage is "special" (about one a second per channel): 60 a minute here.
SLACK_TIERS: dict[str, int] = {
    "auth.test": 100,
    "chat.postMessage": 60,
    "chat.update": 50,
    "chat.postEphemeral": 100,
    "chat.getPermalink": 100,
    "views.open": 100,
    "views.update": 100,
    "views.push": 100,
    "views.publish": 100,
    "conversations.replies": 50,
    "conversations.history": 50,
    "conversations.info": 100,
    "users.info": 100,
    "usergroups.users.list": 50,
    "usergroups.list": 20,
    "reactions.add": 50,
    "apps.connections.open": 1,
}


def _token(prefix: str) -> str:
    return f"{prefix}-{secrets.randbelow(10**12):012d}-{secrets.token_hex(12)}"


@dataclass
class PlaygroundConfig:
    """Everything a playground starts with; tokens and the secret are generated when unset."""

    team_id: str = "T0PLAYGRND"
    team_domain: str = "stratus-playground"
    team_name: str = "Stratus Playground"
    app_id: str = "A0STRATUS"
    bot_user_id: str = "U0STRATUS"
    bot_id: str = "B0STRATUS"
    bot_name: str = "stratus"
    bot_token: str = field(default_factory=lambda: _token("xoxb"))
    app_token: str = field(default_factory=lambda: "xapp-1-" + _token("A0STRATUS"))
    signing_secret: str = field(default_factory=lambda: secrets.token_hex(16))
    verification_token: str = field(default_factory=lambda: secrets.token_hex(12))
    # Where HTTP-mode deliveries go (the bot's /slack/events); None until configured.
    request_url: str | None = None
    users: tuple[SeedUser, ...] = DEFAULT_USERS
    usergroups: tuple[SeedGroup, ...] = DEFAULT_GROUPS
    channels: tuple[SeedChannel, ...] = DEFAULT_CHANNELS
    rate_limits: dict[str, int] = field(default_factory=dict)  # method -> calls per window
    rate_window: float = 60.0  # seconds; Slack counts per minute
    ack_timeout: float = 3.0
    # Slack retries an event three times: at once, after a minute, after five minutes.
    event_retry_delays: tuple[float, ...] = (0.0, 60.0, 300.0)
    trigger_ttl: float = 3.0
    response_url_ttl: float = 1800.0
    response_url_uses: int = 5
    # Slack refuses an image block naming a file uploaded moments ago ("invalid slack file")
    # until the file is processed: this long after its upload (0: at once).
    file_ready_seconds: float = 0.0


@dataclass
class View:
    id: str
    user: str
    body: Json  # the view as Slack returns it (id, hash, state, ...)
    kind: str  # "modal" or "home"
    root_id: str


@dataclass
class ResponseUrl:
    token: str
    user: str
    channel: str
    message_ts: str | None  # the message a click came from (for replace_original)
    is_ephemeral: bool
    thread_ts: str | None
    expires: float
    uses_left: int


@dataclass
class Trigger:
    id: str
    user: str
    expires: float
    used: bool = False


class Workspace:
    """The mutable state of one playground; touched only from the playground's event loop."""

    def __init__(self, config: PlaygroundConfig, clock: Callable[[], float] = time.time) -> None:
        self.config = config
        self.clock = clock
        self.users: dict[str, Json] = {}
        self.groups: dict[str, SeedGroup] = {g.id: g for g in config.usergroups}
        self.channels: dict[str, Json] = {}
        self.members: dict[str, set[str]] = {}
        self.version = 0
        self._changed = asyncio.Event()
        self._ids = itertools.count(1)
        self._last_ts = 0.0
        self._seed()
        self.clear()

    def _seed(self) -> None:
        config = self.config
        for user in config.users:
            self.users[user.id] = self._user_object(user.id, user.name, user.real_name, user.title)
        bot = self._user_object(config.bot_user_id, config.bot_name, "Stratus", "")
        bot["is_bot"] = True
        bot["profile"]["bot_id"] = config.bot_id
        self.users[config.bot_user_id] = bot
        for channel in config.channels:
            members = set(
                channel.members if channel.members is not None else [u.id for u in config.users]
            )
            if channel.bot_member:
                members.add(config.bot_user_id)
            self.add_channel(channel.id, channel.name, members)

    def _user_object(self, user_id: str, name: str, real_name: str, title: str) -> Json:
        return {
            "id": user_id,
            "team_id": self.config.team_id,
            "name": name,
            "deleted": False,
            "real_name": real_name,
            "tz": "Europe/Paris",
            "tz_label": "Central European Time",
            "tz_offset": 3600,
            "is_admin": False,
            "is_owner": False,
            "is_bot": False,
            "is_app_user": False,
            "updated": 1700000000,
            "profile": {
                "title": title,
                "real_name": real_name,
                "display_name": name,
                "real_name_normalized": real_name,
                "display_name_normalized": name,
                "team": self.config.team_id,
            },
        }

    def add_channel(
        self, channel_id: str, name: str, members: set[str], *, is_im: bool = False
    ) -> Json:
        self.channels[channel_id] = {
            "id": channel_id,
            "name": name,
            "is_channel": not is_im,
            "is_group": False,
            "is_im": is_im,
            "is_private": is_im,
            "is_archived": False,
            "is_general": False,
            "created": 1700000000,
            "creator": next(iter(sorted(members)), ""),
            "context_team_id": self.config.team_id,
            "topic": {"value": "", "creator": "", "last_set": 0},
            "purpose": {"value": "", "creator": "", "last_set": 0},
            **({"user": next(iter(members - {self.config.bot_user_id}), "")} if is_im else {}),
        }
        self.members[channel_id] = set(members)
        return self.channels[channel_id]

    def clear(self) -> None:
        """Forget every message, view and record (the seeded workspace stays)."""
        self.messages: dict[str, list[Json]] = {c: [] for c in self.channels}
        self.ephemerals: list[Json] = []
        self.views: dict[str, View] = {}
        self.modal_stacks: dict[str, list[str]] = {}
        self.home_views: dict[str, str] = {}
        self.triggers: dict[str, Trigger] = {}
        self.response_urls: dict[str, ResponseUrl] = {}
        self.calls: list[Json] = []
        self.deliveries: list[Json] = []
        # Uploaded files (``lab.slack.files``): their objects by id, and their bytes.
        self.files: dict[str, Json] = {}
        self.file_bytes: dict[str, bytes] = {}
        self.changed()

    # -- change notification for the page -------------------------------------------------

    def changed(self) -> None:
        self.version += 1
        self._changed.set()
        self._changed = asyncio.Event()

    async def wait_for_change(self, after: int, timeout: float) -> None:
        if self.version != after:
            return
        waiter = self._changed
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(waiter.wait(), timeout)

    # -- identifiers ----------------------------------------------------------------------

    def new_id(self, prefix: str) -> str:
        return f"{prefix}{next(self._ids):08X}"

    def new_ts(self) -> str:
        """A message timestamp: unique and increasing, like Slack's ``ts``."""
        now = max(self.clock(), self._last_ts + 0.000001)
        self._last_ts = now
        return f"{now:.6f}"

    def new_trigger(self, user: str) -> str:
        trigger = Trigger(
            id=f"{next(self._ids)}.{self.config.team_id[1:]}.{secrets.token_hex(16)}",
            user=user,
            expires=self.clock() + self.config.trigger_ttl,
        )
        self.triggers[trigger.id] = trigger
        return trigger.id

    def new_response_url(
        self,
        base_url: str,
        *,
        user: str,
        channel: str,
        message_ts: str | None = None,
        is_ephemeral: bool = False,
        thread_ts: str | None = None,
    ) -> str:
        token = secrets.token_urlsafe(18)
        self.response_urls[token] = ResponseUrl(
            token=token,
            user=user,
            channel=channel,
            message_ts=message_ts,
            is_ephemeral=is_ephemeral,
            thread_ts=thread_ts,
            expires=self.clock() + self.config.response_url_ttl,
            uses_left=self.config.response_url_uses,
        )
        return f"{base_url}/commands/{self.config.team_id}/{token}"

    # -- lookups --------------------------------------------------------------------------

    def resolve_channel(self, ref: str) -> str | None:
        """A channel ID from an ID or a name (with or without '#'); a user ID opens a DM."""
        if ref in self.channels:
            return ref
        name = ref.removeprefix("#")
        for channel in self.channels.values():
            if channel["name"] == name and not channel["is_im"]:
                return str(channel["id"])
        if ref in self.users:
            return self.dm_channel(ref)
        return None

    def dm_channel(self, user: str) -> str:
        channel_id = "D" + user[1:]
        if channel_id not in self.channels:
            self.add_channel(channel_id, user, {user, self.config.bot_user_id}, is_im=True)
            self.messages[channel_id] = []
        return channel_id

    def find_message(self, channel: str, ts: str) -> Json | None:
        for message in self.messages.get(channel, []):
            if message["ts"] == ts:
                return message
        return None

    def thread(self, channel: str, thread_ts: str) -> list[Json]:
        return [
            m
            for m in self.messages.get(channel, [])
            if m["ts"] == thread_ts or m.get("thread_ts") == thread_ts
        ]

    def group_members(self, group_id: str) -> list[str] | None:
        group = self.groups.get(group_id)
        return list(group.members) if group else None

    # -- writes ---------------------------------------------------------------------------

    def set_group_members(self, group_id: str, members: list[str]) -> bool:
        """An admin changes a user group's membership (False: no such group)."""
        group = self.groups.get(group_id)
        if group is None:
            return False
        self.groups[group_id] = SeedGroup(group.id, group.handle, group.name, tuple(members))
        return True

    def add_message(self, channel: str, message: Json) -> Json:
        """Store a message (``ts`` set here) and keep its thread parent's reply counters."""
        message["ts"] = self.new_ts()
        thread_ts = message.get("thread_ts")
        if thread_ts:
            parent = self.find_message(channel, thread_ts)
            if parent is not None:
                parent.setdefault("thread_ts", thread_ts)
                parent["reply_count"] = int(parent.get("reply_count", 0)) + 1
                parent["latest_reply"] = message["ts"]
                users = parent.setdefault("reply_users", [])
                author = message.get("user")
                if author and author not in users:
                    users.append(author)
                parent["reply_users_count"] = len(users)
        self.messages.setdefault(channel, []).append(message)
        self.changed()
        return message

    def delete_message(self, channel: str, ts: str) -> None:
        """Remove a message; a deleted parent takes its replies with it (the page shows a
        thread only from its parent)."""
        self.messages[channel] = [
            m for m in self.messages.get(channel, []) if ts not in (m["ts"], m.get("thread_ts"))
        ]
        self.changed()

    def add_ephemeral(self, channel: str, user: str, message: Json) -> Json:
        message["ts"] = self.new_ts()
        record = {"channel": channel, "user": user, "message": message}
        self.ephemerals.append(record)
        self.changed()
        return record

    def record_call(self, method: str, args: Json, response: Json, status: int) -> None:
        self.calls.append(
            {
                "method": method,
                "args": args,
                "ok": bool(response.get("ok")),
                "error": response.get("error"),
                "status": status,
                "response": response,
                "time": self.clock(),
            }
        )
