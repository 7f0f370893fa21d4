"""Block Kit within Slack's limits: every builder here truncates (or splits) what it is given,
so a long diff, a huge log line or a 60-step timeline never makes Slack reject a message.

Built with ``slack_sdk.models.blocks`` (which checks the limits when serializing); this module
is the one place that knows the numbers.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from slack_sdk.models.blocks import (
    ActionsBlock,
    Block,
    ButtonElement,
    ConfirmObject,
    ContextBlock,
    DividerBlock,
    HeaderBlock,
    ImageBlock,
    MarkdownTextObject,
    Option,
    PlainTextObject,
    SectionBlock,
    StaticSelectElement,
)

SECTION_TEXT = 3000
HEADER_TEXT = 150
BUTTON_TEXT = 75
BUTTON_VALUE = 2000
FIELD_TEXT = 2000
FIELDS = 10
CONTEXT_ELEMENTS = 10
ACTIONS_ELEMENTS = 25
OPTION_TEXT = 75
OPTIONS = 100
MESSAGE_BLOCKS = 50
VIEW_BLOCKS = 100
MESSAGE_TEXT = 3000  # the notification text (Slack allows more; more is never read)
ELLIPSIS = "…"
ALT_TEXT = 2000
IMAGE_TITLE = 2000

Json = dict[str, Any]


def cut(text: str, limit: int) -> str:
    """``text`` in at most ``limit`` characters, an ellipsis marking a cut."""
    return text if len(text) <= limit else text[: max(limit - 1, 0)] + ELLIPSIS


def code(text: str, limit: int = SECTION_TEXT) -> str:
    """A code block of at most ``limit`` characters, whole lines kept where possible.
    Its text is escaped like any untrusted text: Slack reads ``<!channel>`` and links even
    inside a code block, and a diff carries whatever the cluster's objects say."""
    fence = "```"
    room = limit - 2 * len(fence) - 2
    body = text.replace("```", "'''").replace("&", "&amp;").replace("<", "&lt;")
    body = body.replace(">", "&gt;")
    if len(body) > room:
        head = body[: room - 2]  # room for "\n…"
        head = head[: head.rfind("\n")] if "\n" in head else _whole_entities(head)
        body = head + "\n" + ELLIPSIS
    return f"{fence}\n{body}\n{fence}"


def _whole_entities(text: str) -> str:
    """``text`` without an escape sequence cut in half at its end (``&am``)."""
    cut = text.rfind("&")
    return text[:cut] if cut != -1 and ";" not in text[cut:] else text


def chunks(text: str, size: int) -> list[str]:
    """Split on line ends into pieces of at most ``size`` characters."""
    pieces: list[str] = []
    current = ""
    for whole in text.splitlines(keepends=True):
        line = whole
        while len(line) > size:
            if current:
                pieces.append(current)
                current = ""
            pieces.append(line[:size])
            line = line[size:]
        if len(current) + len(line) > size:
            pieces.append(current)
            current = ""
        current += line
    if current or not pieces:
        pieces.append(current)
    return pieces


def mrkdwn(text: str) -> MarkdownTextObject:
    return MarkdownTextObject(text=cut(text, SECTION_TEXT) or " ")


def plain(text: str, limit: int) -> PlainTextObject:
    return PlainTextObject(text=cut(text, limit) or " ", emoji=True)


def header(text: str) -> HeaderBlock:
    return HeaderBlock(text=plain(text, HEADER_TEXT))


def section(
    text: str, *, fields: Sequence[str] = (), block_id: str | None = None, accessory: Any = None
) -> SectionBlock:
    return SectionBlock(
        text=mrkdwn(text) if text else None,
        fields=[MarkdownTextObject(text=cut(f, FIELD_TEXT) or " ") for f in fields[:FIELDS]]
        or None,
        block_id=block_id,
        accessory=accessory,
    )


def sections(text: str) -> list[Block]:
    """Long text as several sections (each within the section limit)."""
    return [section(piece) for piece in chunks(text, SECTION_TEXT) if piece.strip()]


def context(*texts: str) -> ContextBlock:
    return ContextBlock(
        elements=[MarkdownTextObject(text=cut(t, SECTION_TEXT) or " ") for t in texts][
            :CONTEXT_ELEMENTS
        ]
    )


def uploaded_image(file_id: str, alt: str, title: str) -> ImageBlock:
    """An image block showing a file uploaded to Slack (``slack_file``: no public URL)."""
    return ImageBlock(
        alt_text=cut(alt, ALT_TEXT) or " ",
        slack_file={"id": file_id},
        title=plain(title, IMAGE_TITLE),
    )


def divider() -> DividerBlock:
    return DividerBlock()


def confirm(title: str, text: str, yes: str, no: str) -> ConfirmObject:
    return ConfirmObject(
        title=plain(title, 100),
        text=mrkdwn(cut(text, 300)),
        confirm=plain(yes, 30),
        deny=plain(no, 30),
        style="danger",
    )


def button(
    text: str,
    action_id: str,
    value: str,
    *,
    style: str | None = None,
    ask: ConfirmObject | None = None,
) -> ButtonElement:
    return ButtonElement(
        text=plain(text, BUTTON_TEXT),
        action_id=action_id,
        value=cut(value, BUTTON_VALUE),
        style=style,
        confirm=ask,
    )


def select(
    placeholder: str, action_id: str, options: Iterable[tuple[str, str]]
) -> StaticSelectElement:
    return StaticSelectElement(
        placeholder=plain(placeholder, 150),
        action_id=action_id,
        options=[
            Option(text=plain(label, OPTION_TEXT), value=cut(value, 150))
            for label, value in list(options)[:OPTIONS]
        ],
    )


def actions(*elements: Any, block_id: str | None = None) -> ActionsBlock:
    return ActionsBlock(elements=list(elements)[:ACTIONS_ELEMENTS], block_id=block_id)


def render(blocks: Sequence[Block], *, limit: int = MESSAGE_BLOCKS) -> list[Json]:
    """Serialized blocks, at most ``limit`` of them: the last kept block says how many more
    there were instead of letting Slack refuse the message."""
    out = list(blocks)
    if len(out) > limit:
        dropped = len(out) - (limit - 1)
        out = [*out[: limit - 1], context(f"{ELLIPSIS} {dropped} more not shown")]
    return [block.to_dict() for block in out]


def fallback(text: str) -> str:
    return cut(text, MESSAGE_TEXT)
