"""Block Kit validation with Slack's limits, so a bot that Slack would reject is rejected here.

Errors read like Slack's (``must be less than 3001 characters [json-pointer:/blocks/0/...]``),
returned under ``errors`` with ``error: invalid_blocks`` (messages) or ``invalid_arguments``
(views). Only what the playground renders is checked closely; unknown block and element types
are refused, as Slack refuses them.
"""

from __future__ import annotations

import secrets
from typing import Any

MAX_MESSAGE_BLOCKS = 50
MAX_VIEW_BLOCKS = 100
MAX_TEXT_LENGTH = 40_000  # chat.postMessage answers msg_too_long beyond this

_TEXT_TYPES = ("plain_text", "mrkdwn")
_BLOCK_TYPES = {"header", "section", "context", "divider", "actions", "input", "image", "rich_text"}
_ACTION_ELEMENTS = {
    "button",
    "overflow",
    "static_select",
    "users_select",
    "conversations_select",
    "datepicker",
    "checkboxes",
    "radio_buttons",
    "plain_text_input",
}
_INPUT_ELEMENTS = {
    "plain_text_input",
    "static_select",
    "multi_static_select",
    "users_select",
    "multi_users_select",
    "checkboxes",
    "radio_buttons",
    "datepicker",
    "number_input",
}
_BUTTON_STYLES = ("primary", "danger")


class _Checker:
    def __init__(self) -> None:
        self.errors: list[str] = []

    def fail(self, message: str, pointer: str) -> None:
        self.errors.append(f"{message} [json-pointer:{pointer}]")

    def max_len(self, value: Any, limit: int, pointer: str) -> None:
        if isinstance(value, str) and len(value) > limit:
            self.fail(f"must be less than {limit + 1} characters", pointer)

    def string(
        self, obj: dict[str, Any], key: str, limit: int, pointer: str, *, required: bool
    ) -> None:
        value = obj.get(key)
        if value is None:
            if required:
                self.fail("must provide a value", f"{pointer}/{key}")
            return
        if not isinstance(value, str):
            self.fail("must be a string", f"{pointer}/{key}")
            return
        self.max_len(value, limit, f"{pointer}/{key}")

    def text(self, value: Any, limit: int, pointer: str, *, plain_only: bool = False) -> None:
        if not isinstance(value, dict):
            self.fail("must be a text object", pointer)
            return
        allowed = ("plain_text",) if plain_only else _TEXT_TYPES
        if value.get("type") not in allowed:
            self.fail(f"must be one of {', '.join(allowed)}", f"{pointer}/type")
        text = value.get("text")
        if not isinstance(text, str):
            self.fail("must be a string", f"{pointer}/text")
        elif not text:
            self.fail("must be more than 0 characters", f"{pointer}/text")
        else:
            self.max_len(text, limit, f"{pointer}/text")

    def confirm(self, value: Any, pointer: str) -> None:
        if not isinstance(value, dict):
            self.fail("must be a confirmation dialog object", pointer)
            return
        self.text(value.get("title"), 100, f"{pointer}/title", plain_only=True)
        self.text(value.get("text"), 300, f"{pointer}/text")
        self.text(value.get("confirm"), 30, f"{pointer}/confirm", plain_only=True)
        self.text(value.get("deny"), 30, f"{pointer}/deny", plain_only=True)
        if value.get("style") not in (None, *_BUTTON_STYLES):
            self.fail("must be one of primary, danger", f"{pointer}/style")

    def option(self, value: Any, pointer: str) -> None:
        if not isinstance(value, dict):
            self.fail("must be an option object", pointer)
            return
        self.text(value.get("text"), 75, f"{pointer}/text")
        self.string(value, "value", 150, pointer, required=True)

    def options(self, value: Any, pointer: str, *, low: int, high: int) -> None:
        if not isinstance(value, list) or not low <= len(value) <= high:
            self.fail(f"must provide between {low} and {high} items", pointer)
            return
        for i, option in enumerate(value):
            self.option(option, f"{pointer}/{i}")

    def element(self, element: Any, pointer: str, allowed: set[str]) -> str | None:
        """Check one interactive element; its action_id is returned for uniqueness checks."""
        if not isinstance(element, dict):
            self.fail("must be an element object", pointer)
            return None
        kind = element.get("type")
        if kind not in allowed:
            self.fail(f"unsupported element type {kind!r}", f"{pointer}/type")
            return None
        self.string(element, "action_id", 255, pointer, required=False)
        if "confirm" in element:
            self.confirm(element["confirm"], f"{pointer}/confirm")
        if kind == "button":
            self.text(element.get("text"), 75, f"{pointer}/text", plain_only=True)
            self.string(element, "value", 2000, pointer, required=False)
            self.string(element, "url", 3000, pointer, required=False)
            if element.get("style") not in (None, *_BUTTON_STYLES):
                self.fail("must be one of primary, danger", f"{pointer}/style")
        elif kind == "overflow":
            self.options(element.get("options"), f"{pointer}/options", low=1, high=5)
        elif kind in ("static_select", "multi_static_select"):
            if "option_groups" not in element:
                self.options(element.get("options"), f"{pointer}/options", low=1, high=100)
            if "placeholder" in element:
                self.text(element["placeholder"], 150, f"{pointer}/placeholder", plain_only=True)
        elif kind in ("checkboxes", "radio_buttons"):
            self.options(element.get("options"), f"{pointer}/options", low=1, high=10)
        elif kind == "plain_text_input":
            self.string(element, "initial_value", 3000, pointer, required=False)
        action_id = element.get("action_id")
        return action_id if isinstance(action_id, str) else None

    def block(self, block: Any, pointer: str, *, in_view: bool) -> None:
        if not isinstance(block, dict):
            self.fail("must be a block object", pointer)
            return
        kind = block.get("type")
        if kind not in _BLOCK_TYPES or (kind == "input" and not in_view):
            self.fail(f"unsupported block type {kind!r}", f"{pointer}/type")
            return
        self.string(block, "block_id", 255, pointer, required=False)
        if kind == "header":
            self.text(block.get("text"), 150, f"{pointer}/text", plain_only=True)
        elif kind == "section":
            self.section(block, pointer)
        elif kind == "context":
            elements = block.get("elements")
            if not isinstance(elements, list) or not 1 <= len(elements) <= 10:
                self.fail("must provide between 1 and 10 items", f"{pointer}/elements")
            else:
                for i, item in enumerate(elements):
                    if isinstance(item, dict) and item.get("type") == "image":
                        self.string(
                            item, "image_url", 3000, f"{pointer}/elements/{i}", required=True
                        )
                    else:
                        self.text(item, 3000, f"{pointer}/elements/{i}")
        elif kind == "actions":
            elements = block.get("elements")
            if not isinstance(elements, list) or not 1 <= len(elements) <= 25:
                self.fail("must provide between 1 and 25 items", f"{pointer}/elements")
                return
            seen: set[str] = set()
            for i, element in enumerate(elements):
                action_id = self.element(element, f"{pointer}/elements/{i}", _ACTION_ELEMENTS)
                if action_id is not None and action_id in seen:
                    self.fail("action_id must be unique", f"{pointer}/elements/{i}/action_id")
                if action_id is not None:
                    seen.add(action_id)
        elif kind == "image":
            self.image(block, pointer)
        elif kind == "input":
            self.text(block.get("label"), 2000, f"{pointer}/label", plain_only=True)
            self.element(block.get("element"), f"{pointer}/element", _INPUT_ELEMENTS)
            if "hint" in block:
                self.text(block["hint"], 2000, f"{pointer}/hint", plain_only=True)

    def image(self, block: dict[str, Any], pointer: str) -> None:
        """An image block: alt text, and either a public ``image_url`` or a ``slack_file``
        (an uploaded file, by ``id`` or ``url``) — exactly one of them."""
        self.string(block, "alt_text", 2000, pointer, required=True)
        sources = [k for k in ("image_url", "slack_file") if k in block]
        if len(sources) != 1:
            self.fail("must provide exactly one of image_url or slack_file", pointer)
            return
        if sources[0] == "image_url":
            self.string(block, "image_url", 3000, pointer, required=True)
        else:
            ref = block["slack_file"]
            if not isinstance(ref, dict) or not (
                isinstance(ref.get("id"), str) or isinstance(ref.get("url"), str)
            ):
                self.fail("must provide a file id or url", f"{pointer}/slack_file")
        if "title" in block:
            self.text(block["title"], 2000, f"{pointer}/title", plain_only=True)

    def section(self, block: dict[str, Any], pointer: str) -> None:
        if "text" not in block and "fields" not in block:
            self.fail("must provide text or fields", pointer)
        if "text" in block:
            self.text(block["text"], 3000, f"{pointer}/text")
        if "fields" in block:
            fields = block["fields"]
            if not isinstance(fields, list) or not 1 <= len(fields) <= 10:
                self.fail("must provide between 1 and 10 items", f"{pointer}/fields")
            else:
                for i, item in enumerate(fields):
                    self.text(item, 2000, f"{pointer}/fields/{i}")
        if "accessory" in block:
            accessory = block["accessory"]
            if isinstance(accessory, dict) and accessory.get("type") == "image":
                self.string(accessory, "image_url", 3000, f"{pointer}/accessory", required=True)
            else:
                self.element(accessory, f"{pointer}/accessory", _ACTION_ELEMENTS)

    def blocks(self, blocks: Any, pointer: str, *, limit: int, in_view: bool) -> None:
        if not isinstance(blocks, list):
            self.fail("must be an array", pointer)
            return
        if len(blocks) > limit:
            self.fail(f"must provide no more than {limit} items", pointer)
        block_ids: set[str] = set()
        for i, block in enumerate(blocks):
            self.block(block, f"{pointer}/{i}", in_view=in_view)
            block_id = block.get("block_id") if isinstance(block, dict) else None
            if isinstance(block_id, str):
                if block_id in block_ids:
                    self.fail("block_id must be unique", f"{pointer}/{i}/block_id")
                block_ids.add(block_id)


def message_block_errors(blocks: Any) -> list[str]:
    """Slack's complaints about a message's ``blocks`` (empty when Slack would accept them)."""
    checker = _Checker()
    checker.blocks(blocks, "/blocks", limit=MAX_MESSAGE_BLOCKS, in_view=False)
    return checker.errors


def view_errors(view: Any) -> list[str]:
    """Slack's complaints about a view (a modal or a Home tab)."""
    checker = _Checker()
    if not isinstance(view, dict):
        return ["must be a view object [json-pointer:/view]"]
    kind = view.get("type")
    if kind not in ("modal", "home"):
        checker.fail("must be one of modal, home", "/view/type")
    if kind == "modal":
        checker.text(view.get("title"), 24, "/view/title", plain_only=True)
        for key in ("submit", "close"):
            if key in view:
                checker.text(view[key], 24, f"/view/{key}", plain_only=True)
        has_input = any(
            isinstance(b, dict) and b.get("type") == "input" for b in view.get("blocks") or []
        )
        if has_input and "submit" not in view:
            checker.fail("must provide submit when the view has input blocks", "/view/submit")
    checker.string(view, "callback_id", 255, "/view", required=False)
    checker.string(view, "private_metadata", 3000, "/view", required=False)
    checker.string(view, "external_id", 255, "/view", required=False)
    checker.blocks(view.get("blocks"), "/view/blocks", limit=MAX_VIEW_BLOCKS, in_view=True)
    return checker.errors


def assign_ids(blocks: list[Any]) -> list[Any]:
    """Give blocks and interactive elements the random IDs Slack gives those sent without."""
    for block in blocks:
        if not isinstance(block, dict):
            continue
        block.setdefault("block_id", secrets.token_urlsafe(3))
        elements = list(block.get("elements") or []) if block.get("type") == "actions" else []
        for key in ("accessory", "element"):
            if isinstance(block.get(key), dict):
                elements.append(block[key])
        for element in elements:
            if isinstance(element, dict) and element.get("type") != "image":
                element.setdefault("action_id", secrets.token_urlsafe(3))
    return blocks
