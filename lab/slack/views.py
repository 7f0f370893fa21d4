"""Modals and Home tabs: views.open / push / update / publish, trigger IDs that expire after
three seconds and are used once, view hashes (``hash_conflict``), and the modal stack a user
sees in the page.
"""

from __future__ import annotations

import copy
import secrets

from lab.slack import blockkit
from lab.slack.webapi import Call, SlackError
from lab.slack.workspace import Json, View, Workspace

MAX_MODAL_STACK = 3


def _check(view: object) -> Json:
    errors = blockkit.view_errors(view)
    if errors or not isinstance(view, dict):
        raise SlackError(
            "invalid_arguments",
            response_metadata={"messages": [f"[ERROR] {e}" for e in errors]},
        )
    return view


def _use_trigger(call: Call) -> str:
    ws = call.workspace
    trigger = ws.triggers.get(call.str_arg("trigger_id", "invalid_trigger_id"))
    if trigger is None:
        raise SlackError("invalid_trigger_id")
    if trigger.used or ws.clock() > trigger.expires:
        raise SlackError("expired_trigger_id")
    trigger.used = True
    return trigger.user


def _view_body(ws: Workspace, view_id: str, spec: Json, root_id: str, previous: str | None) -> Json:
    config = ws.config
    body: Json = {
        "id": view_id,
        "team_id": config.team_id,
        "type": spec["type"],
        "blocks": blockkit.assign_ids(copy.deepcopy(spec.get("blocks", []))),
        "private_metadata": spec.get("private_metadata", ""),
        "callback_id": spec.get("callback_id", ""),
        "state": {"values": {}},
        "hash": f"{int(ws.clock())}.{secrets.token_hex(4)}",
        "clear_on_close": bool(spec.get("clear_on_close", False)),
        "notify_on_close": bool(spec.get("notify_on_close", False)),
        "root_view_id": root_id,
        "previous_view_id": previous,
        "app_id": config.app_id,
        "external_id": spec.get("external_id", ""),
        "app_installed_team_id": config.team_id,
        "bot_id": config.bot_id,
    }
    for key in ("title", "submit", "close"):
        body[key] = copy.deepcopy(spec.get(key))
    return body


def new_view(
    ws: Workspace, user: str, spec: Json, *, root_id: str | None = None, previous: str | None = None
) -> View:
    view_id = ws.new_id("V")
    body = _view_body(ws, view_id, spec, root_id or view_id, previous)
    view = View(id=view_id, user=user, body=body, kind=spec["type"], root_id=root_id or view_id)
    ws.views[view_id] = view
    return view


def open_view(call: Call) -> Json:
    ws = call.workspace
    user = _use_trigger(call)
    spec = _check(call.args.get("view"))
    if spec["type"] != "modal":
        raise SlackError("invalid_arguments")
    view = new_view(ws, user, spec)
    ws.modal_stacks[user] = [view.id]
    ws.changed()
    return {"view": view.body}


def push_view(call: Call) -> Json:
    ws = call.workspace
    user = _use_trigger(call)
    spec = _check(call.args.get("view"))
    stack = ws.modal_stacks.get(user) or []
    if not stack:
        raise SlackError("invalid_arguments")
    if len(stack) >= MAX_MODAL_STACK:
        raise SlackError("push_limit_reached")
    view = new_view(ws, user, spec, root_id=stack[0], previous=stack[-1])
    stack.append(view.id)
    ws.changed()
    return {"view": view.body}


def replace_view(ws: Workspace, view: View, spec: Json) -> None:
    """Replace a view's content in place, as views.update and ``response_action: update`` do."""
    body = _view_body(ws, view.id, spec, view.root_id, view.body.get("previous_view_id"))
    view.body = body
    ws.changed()


def update_view(call: Call) -> Json:
    ws = call.workspace
    view_id, external_id = call.opt_str("view_id"), call.opt_str("external_id")
    if view_id is None and external_id is None:
        raise SlackError("invalid_arguments")
    view = (
        ws.views.get(view_id)
        if view_id
        else next((v for v in ws.views.values() if v.body.get("external_id") == external_id), None)
    )
    if view is None:
        raise SlackError("not_found")
    expected = call.opt_str("hash")
    if expected is not None and expected != view.body["hash"]:
        raise SlackError("hash_conflict")
    spec = _check(call.args.get("view"))
    if spec["type"] != view.kind:
        raise SlackError("invalid_arguments")
    replace_view(ws, view, spec)
    return {"view": view.body}


def publish_view(call: Call) -> Json:
    ws = call.workspace
    user = call.str_arg("user_id", "invalid_arguments")
    if user not in ws.users:
        raise SlackError("user_not_found")
    spec = _check(call.args.get("view"))
    if spec["type"] != "home":
        raise SlackError("invalid_arguments")
    current = ws.views.get(ws.home_views.get(user, ""))
    if current is not None:
        expected = call.opt_str("hash")
        if expected is not None and expected != current.body["hash"]:
            raise SlackError("hash_conflict")
        replace_view(ws, current, spec)
        return {"view": current.body}
    view = new_view(ws, user, spec)
    ws.home_views[user] = view.id
    ws.changed()
    return {"view": view.body}


def top_modal(ws: Workspace, user: str) -> View | None:
    stack = ws.modal_stacks.get(user) or []
    return ws.views.get(stack[-1]) if stack else None


def close_modal(ws: Workspace, view: View, *, all_views: bool = False) -> None:
    stack = ws.modal_stacks.get(view.user) or []
    if all_views or view.id not in stack:
        ws.modal_stacks[view.user] = []
    else:
        del stack[stack.index(view.id) :]
    ws.changed()


def state_values(view: View, submitted: dict[str, object]) -> Json:
    """``view.state.values`` for submitted inputs, keyed ``block_id`` then ``action_id``.

    ``submitted`` maps an action_id (or ``block_id.action_id``) to a string, or a list of
    strings for multi-selects and checkboxes; option values pick the options.
    """
    values: Json = {}
    for block in view.body.get("blocks", []):
        element = block.get("element") if block.get("type") == "input" else None
        if not isinstance(element, dict):
            continue
        block_id, action_id = block.get("block_id", ""), element.get("action_id", "")
        raw = submitted.get(f"{block_id}.{action_id}", submitted.get(action_id))
        values.setdefault(block_id, {})[action_id] = element_value(element, raw)
    return values


def element_value(element: Json, raw: object) -> Json:
    kind = element.get("type", "")
    options = {o.get("value"): o for o in element.get("options") or []}
    if kind in ("static_select", "radio_buttons"):
        return {"type": kind, "selected_option": options.get(raw) if raw else None}
    if kind in ("multi_static_select", "checkboxes"):
        chosen = raw if isinstance(raw, list) else ([raw] if raw else [])
        return {"type": kind, "selected_options": [options[v] for v in chosen if v in options]}
    if kind == "users_select":
        return {"type": kind, "selected_user": raw or None}
    if kind == "datepicker":
        return {"type": kind, "selected_date": raw or None}
    return {"type": kind, "value": None if raw in (None, "") else str(raw)}


def missing_required(view: View, values: Json) -> dict[str, str]:
    """Slack's own check before a submission reaches the app: required inputs must be set."""
    errors: dict[str, str] = {}
    for block in view.body.get("blocks", []):
        if block.get("type") != "input" or block.get("optional"):
            continue
        element = block.get("element") or {}
        value = values.get(block.get("block_id", ""), {}).get(element.get("action_id", ""), {})
        if not any(
            value.get(k)
            for k in (
                "value",
                "selected_option",
                "selected_options",
                "selected_user",
                "selected_date",
            )
        ):
            errors[block.get("block_id", "")] = "Please complete this required field."
    return errors
