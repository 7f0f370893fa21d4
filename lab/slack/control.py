"""The control API (``/playground/v1``): what a person does in the page, scriptable for tests —
send a slash command, click a button, submit a modal, post a message, open the Home tab as any
user — plus the captured messages, ephemerals, views, Web API calls and deliveries, the app's
settings and a reset. The browser page uses the same endpoints.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import Callable, Iterator
from typing import Any

from aiohttp import web

from lab.slack import files, payloads, views
from lab.slack.delivery import Deliverer
from lab.slack.faults import FaultMenu, InjectFailed
from lab.slack.socket_mode import SocketHub
from lab.slack.workspace import Json, View, Workspace

PREFIX = "/playground/v1"


class ControlError(Exception):
    def __init__(self, error: str, status: int = 400) -> None:
        super().__init__(error)
        self.error = error
        self.status = status


def _find_element(
    blocks: list[Json], action_id: str, value: str | None, block_id: str | None
) -> tuple[Json, str] | None:
    for block in blocks:
        if block_id is not None and block.get("block_id") != block_id:
            continue
        elements = list(block.get("elements") or []) if block.get("type") == "actions" else []
        if isinstance(block.get("accessory"), dict):
            elements.append(block["accessory"])
        for element in elements:
            if element.get("action_id") != action_id:
                continue
            if (
                value is not None
                and element.get("type") == "button"
                and (element.get("value") != value)
            ):
                continue
            return element, str(block.get("block_id", ""))
    return None


def _action(element: Json, block_id: str, selected: str | None) -> Json:
    kind = element.get("type")
    action: Json = {"type": kind, "action_id": element["action_id"], "block_id": block_id}
    if kind == "button":
        for key in ("text", "value", "style"):
            if key in element:
                action[key] = copy.deepcopy(element[key])
        return action
    options = {o.get("value"): o for o in element.get("options") or []}
    for group in element.get("option_groups") or []:
        options.update({o.get("value"): o for o in group.get("options") or []})
    if selected not in options:
        raise ControlError("option_not_found")
    action["selected_option"] = copy.deepcopy(options[selected])
    if "placeholder" in element:
        action["placeholder"] = copy.deepcopy(element["placeholder"])
    return action


class Control:
    def __init__(
        self,
        ws: Workspace,
        deliverer: Deliverer,
        hub: SocketHub,
        base_url: Callable[[], str],
        menu: FaultMenu | None = None,
    ) -> None:
        self.ws = ws
        self.deliverer = deliverer
        self.hub = hub
        self.base_url = base_url
        self.menu = menu
        self.on_reset: list[Callable[[], None]] = []

    # -- argument helpers -----------------------------------------------------------------

    def _user(self, body: Json) -> str:
        user = str(body.get("user") or "")
        if user not in self.ws.users:
            by_name = [u for u in self.ws.users.values() if u["name"] == user]
            if not by_name:
                raise ControlError("user_not_found")
            user = str(by_name[0]["id"])
        return user

    def _channel(self, body: Json) -> str:
        channel = self.ws.resolve_channel(str(body.get("channel") or "C0INCIDENT"))
        if channel is None:
            raise ControlError("channel_not_found")
        return channel

    def _view(self, view_id: str) -> View:
        view = self.ws.views.get(view_id)
        if view is None:
            raise ControlError("view_not_found", 404)
        return view

    # -- what a person does ---------------------------------------------------------------

    async def command(self, body: Json) -> Json:
        user, channel = self._user(body), self._channel(body)
        command = str(body.get("command") or "")
        if not command.startswith("/"):
            raise ControlError("invalid_command")
        out = payloads.slash_command(
            self.ws,
            self.base_url(),
            user=user,
            channel=channel,
            command=command,
            text=str(body.get("text") or ""),
        )
        return await self.deliverer.deliver(out)

    def _messages_newest_first(self, user: str) -> Iterator[tuple[str, Json, bool]]:
        for record in reversed(self.ws.ephemerals):
            if record["user"] == user:
                yield record["channel"], record["message"], True
        everything = [(c, m) for c, ms in self.ws.messages.items() for m in ms]
        for channel, message in sorted(everything, key=lambda cm: float(cm[1]["ts"]), reverse=True):
            yield channel, message, False

    async def action(self, body: Json) -> Json:
        user = self._user(body)
        action_id = str(body.get("action_id") or "")
        value = body.get("value")
        block_id = body.get("block_id")
        selected = body.get("selected")
        if body.get("view_id"):
            view = self._view(str(body["view_id"]))
            found = _find_element(view.body.get("blocks", []), action_id, value, block_id)
            if found is None:
                raise ControlError("action_not_found", 404)
            out = payloads.block_actions(
                self.ws, self.base_url(), user=user, action=_action(*found, selected), view=view
            )
            return await self.deliverer.deliver(out)
        ts = body.get("ts")
        channel = self._channel(body) if body.get("channel") else None
        for where, message, ephemeral in self._messages_newest_first(user):
            if (channel and where != channel) or (ts and message["ts"] != ts):
                continue
            if body.get("ephemeral") is not None and bool(body["ephemeral"]) != ephemeral:
                continue
            found = _find_element(message.get("blocks") or [], action_id, value, block_id)
            if found is not None:
                out = payloads.block_actions(
                    self.ws,
                    self.base_url(),
                    user=user,
                    action=_action(*found, selected),
                    channel=where,
                    message=message,
                    is_ephemeral=ephemeral,
                )
                return await self.deliverer.deliver(out)
        raise ControlError("action_not_found", 404)

    async def submit(self, view_id: str, body: Json) -> Json:
        view = self._view(view_id)
        user = self._user(body) if body.get("user") else view.user
        values = body.get("values") or {}
        if not isinstance(values, dict):
            raise ControlError("invalid_values")
        view.body["state"] = {"values": views.state_values(view, values)}
        missing = views.missing_required(view, view.body["state"]["values"])
        if missing:
            view.body["errors"] = missing
            self.ws.changed()
            return {"ok": False, "error": "required_fields", "errors": missing}
        record = await self.deliverer.deliver(
            payloads.view_submission(self.ws, user=user, view=view)
        )
        return {**record, "view": view.body, "open": views.top_modal(self.ws, view.user) is view}

    async def close_view(self, view_id: str) -> Json:
        view = self._view(view_id)
        views.close_modal(self.ws, view)
        if view.body.get("notify_on_close"):
            return await self.deliverer.deliver(
                payloads.view_closed(self.ws, user=view.user, view=view)
            )
        return {"ok": True}

    async def message(self, body: Json) -> Json:
        user, channel = self._user(body), self._channel(body)
        text = str(body.get("text") or "")
        if not text:
            raise ControlError("no_text")
        message: Json = {
            "type": "message",
            "text": text,
            "user": user,
            "team": self.ws.config.team_id,
        }
        thread_ts = body.get("thread_ts")
        if thread_ts:
            parent = self.ws.find_message(channel, str(thread_ts))
            if parent is None:
                raise ControlError("thread_not_found")
            message["thread_ts"] = parent.get("thread_ts") or parent["ts"]
            message["parent_user_id"] = parent.get("user")
        self.ws.add_message(channel, message)
        deliveries = [
            await self.deliverer.deliver(out)
            for out in payloads.message_events(self.ws, channel=channel, message=message)
        ]
        return {"ok": True, "channel": channel, "ts": message["ts"], "deliveries": deliveries}

    async def home(self, body: Json) -> Json:
        out = payloads.app_home_opened(self.ws, user=self._user(body))
        return await self.deliverer.deliver(out)

    async def inject(self, name: str) -> Json:
        """The page's "inject a fault": the callback ``stratus demo`` gave, on a thread."""
        if self.menu is None:
            raise ControlError("no_lab", 404)
        choice = self.menu.find(name)
        if choice is None:
            raise ControlError("scenario_not_found", 404)
        try:
            result = await asyncio.to_thread(self.menu.inject, name)
        except InjectFailed as error:
            return {"ok": False, "error": "inject_failed", "detail": str(error)}
        return {"ok": True, **result, "scenario": name, "namespace": choice.namespace}

    # -- what was captured ----------------------------------------------------------------

    def config(self) -> Json:
        c = self.ws.config
        return {
            "team_id": c.team_id,
            "team_domain": c.team_domain,
            "app_id": c.app_id,
            "bot_user_id": c.bot_user_id,
            "bot_id": c.bot_id,
            "bot_token": c.bot_token,
            "app_token": c.app_token,
            "signing_secret": c.signing_secret,
            "request_url": c.request_url,
            "api_url": self.base_url() + "/api/",
            "socket_mode_connected": self.hub.connected,
            "ack_timeout": c.ack_timeout,
            "event_retry_delays": list(c.event_retry_delays),
            "rate_limits": c.rate_limits,
            "rate_window": c.rate_window,
            "scenarios": [s.as_json() for s in self.menu.scenarios] if self.menu else [],
            "users": [u for u in self.ws.users.values() if not u["is_bot"]],
            "usergroups": [
                {"id": g.id, "handle": g.handle, "name": g.name, "users": list(g.members)}
                for g in self.ws.groups.values()
            ],
            "channels": [
                {**ch, "members": sorted(self.ws.members[ch["id"]])}
                for ch in self.ws.channels.values()
            ],
        }

    def set_app(self, body: Json) -> Json:
        c = self.ws.config
        if "request_url" in body:
            c.request_url = str(body["request_url"]) if body["request_url"] else None
        if "ack_timeout" in body:
            c.ack_timeout = float(body["ack_timeout"])
        if "event_retry_delays" in body:
            c.event_retry_delays = tuple(float(d) for d in body["event_retry_delays"])
        if "rate_window" in body:
            c.rate_window = float(body["rate_window"])
        if "file_ready_seconds" in body:
            c.file_ready_seconds = float(body["file_ready_seconds"])
        if "rate_limits" in body:
            c.rate_limits.clear()
            c.rate_limits.update({str(k): int(v) for k, v in body["rate_limits"].items()})
        self.ws.changed()
        return self.config()

    def messages(self, query: Any) -> Json:
        channel = (
            self.ws.resolve_channel(query.get("channel", "")) if query.get("channel") else None
        )
        found = []
        for where, items in self.ws.messages.items():
            if channel and where != channel:
                continue
            for message in items:
                thread_ts = query.get("thread_ts")
                if thread_ts and thread_ts not in (message["ts"], message.get("thread_ts")):
                    continue
                found.append({"channel": where, **message})
        return {"ok": True, "messages": sorted(found, key=lambda m: float(m["ts"]))}

    def ephemerals(self, query: Any) -> Json:
        user = query.get("user")
        return {
            "ok": True,
            "ephemerals": [e for e in self.ws.ephemerals if not user or e["user"] == user],
        }

    def list_views(self, query: Any) -> Json:
        user = query.get("user")
        found = []
        for view in self.ws.views.values():
            if user and view.user != user:
                continue
            is_open = view.id in (self.ws.modal_stacks.get(view.user) or [])
            found.append({"user": view.user, "kind": view.kind, "open": is_open, "view": view.body})
        return {"ok": True, "views": found}

    def calls(self, query: Any) -> Json:
        method = query.get("method")
        return {
            "ok": True,
            "calls": [c for c in self.ws.calls if not method or c["method"] == method],
        }

    def state(self, user: str) -> Json:
        """Everything the page shows for one user."""
        modal = views.top_modal(self.ws, user) if user else None
        home = self.ws.views.get(self.ws.home_views.get(user, ""))
        return {
            "version": self.ws.version,
            "config": self.config(),
            "messages": self.messages({})["messages"],
            "files": files.state(self.ws),
            "ephemerals": [e for e in self.ws.ephemerals if e["user"] == user],
            "modal": modal.body if modal else None,
            "home": home.body if home else None,
            "deliveries": [
                {k: d.get(k) for k in ("id", "label", "user", "ok", "error", "transport")}
                for d in self.ws.deliveries[-20:]
            ],
        }

    def set_group(self, group_id: str, body: Json) -> Json:
        users = body.get("users")
        if not isinstance(users, list) or not all(isinstance(u, str) for u in users):
            raise web.HTTPBadRequest(text='{"ok": false, "error": "users must be a list of IDs"}')
        if not self.ws.set_group_members(group_id, users):
            raise web.HTTPNotFound(text='{"ok": false, "error": "no_such_subteam"}')
        return {"ok": True, "id": group_id, "users": users}

    def reset(self) -> Json:
        self.deliverer.cancel_retries()
        self.ws.clear()
        for hook in self.on_reset:
            hook()
        return {"ok": True}

    # -- routes ---------------------------------------------------------------------------

    def routes(self) -> list[web.RouteDef]:
        def wrap(handler: Callable[[web.Request], Any]) -> Callable[[web.Request], Any]:
            async def run(request: web.Request) -> web.Response:
                try:
                    result = handler(request)
                    if hasattr(result, "__await__"):
                        result = await result
                except ControlError as error:
                    return web.json_response(
                        {"ok": False, "error": error.error}, status=error.status
                    )
                return web.json_response(result, dumps=lambda o: json.dumps(o, default=str))

            return run

        async def body(request: web.Request) -> Json:
            if not request.can_read_body:
                return {}
            try:
                data = await request.json()
            except ValueError as error:
                raise ControlError("invalid_json") from error
            if not isinstance(data, dict):
                raise ControlError("invalid_json")
            return data

        async def state(request: web.Request) -> Json:
            after = int(request.query.get("after", "-1"))
            await self.ws.wait_for_change(after, float(request.query.get("wait", "20")))
            return self.state(request.query.get("user", ""))

        p = PREFIX
        routes: list[tuple[str, str, Callable[[web.Request], Any]]] = [
            ("GET", "/config", lambda r: self.config()),
            ("PUT", "/app", lambda r: self._then(body(r), self.set_app)),
            ("POST", "/commands", lambda r: self._then(body(r), self.command)),
            ("POST", "/actions", lambda r: self._then(body(r), self.action)),
            (
                "POST",
                "/views/{id}/submit",
                lambda r: self._then(body(r), lambda b: self.submit(r.match_info["id"], b)),
            ),
            ("POST", "/views/{id}/close", lambda r: self.close_view(r.match_info["id"])),
            ("POST", "/messages", lambda r: self._then(body(r), self.message)),
            ("POST", "/home", lambda r: self._then(body(r), self.home)),
            ("GET", "/scenarios", lambda r: {"ok": True, "scenarios": self.config()["scenarios"]}),
            ("POST", "/scenarios/{name}/inject", lambda r: self.inject(r.match_info["name"])),
            ("GET", "/messages", lambda r: self.messages(r.query)),
            ("GET", "/ephemerals", lambda r: self.ephemerals(r.query)),
            ("GET", "/views", lambda r: self.list_views(r.query)),
            ("GET", "/calls", lambda r: self.calls(r.query)),
            ("GET", "/deliveries", lambda r: {"ok": True, "deliveries": self.ws.deliveries}),
            ("GET", "/state", state),
            (
                "POST",
                "/usergroups/{id}/users",
                lambda r: self._then(body(r), lambda b: self.set_group(r.match_info["id"], b)),
            ),
            ("POST", "/reset", lambda r: self.reset()),
        ]
        return [web.route(method, p + path, wrap(handler)) for method, path, handler in routes]

    @staticmethod
    async def _then(body: Any, use: Callable[[Json], Any]) -> Any:
        result = use(await body)
        if hasattr(result, "__await__"):
            result = await result
        return result
