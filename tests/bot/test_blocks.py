"""Block Kit within Slack's limits whatever it is given: long diffs, huge texts, many blocks."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from bot import blocks as b


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=20_000))
def test_long_text_becomes_sections_within_the_limit(text: str) -> None:
    rendered = b.render(b.sections(text))
    assert len(rendered) <= b.MESSAGE_BLOCKS
    assert all(
        len(block["text"]["text"]) <= b.SECTION_TEXT for block in rendered if "text" in block
    )


@settings(max_examples=60, deadline=None)
@given(text=st.text(max_size=10_000), limit=st.integers(min_value=20, max_value=3000))
def test_code_blocks_and_cuts_stay_within_their_limit(text: str, limit: int) -> None:
    assert len(b.code(text, limit)) <= limit
    assert len(b.cut(text, limit)) <= limit


def test_a_message_with_too_many_blocks_says_how_many_were_left_out() -> None:
    rendered = b.render([b.section(f"line {i}") for i in range(120)])
    assert len(rendered) == b.MESSAGE_BLOCKS
    assert "71 more not shown" in rendered[-1]["elements"][0]["text"]


def test_buttons_headers_and_values_are_cut() -> None:
    button = b.button("x" * 500, "a", "v" * 5000).to_dict()
    assert len(button["text"]["text"]) <= b.BUTTON_TEXT
    assert len(button["value"]) <= b.BUTTON_VALUE
    assert len(b.header("h" * 1000).to_dict()["text"]["text"]) <= b.HEADER_TEXT


def test_code_blocks_escape_what_slack_would_read_as_mentions_or_links() -> None:
    shown = b.code("env: <!channel> <@U0BOB> <http://evil|ok> a && b")
    assert "<!channel>" not in shown and "<@U0BOB>" not in shown and "<http" not in shown
    assert "&lt;!channel&gt;" in shown and "a &amp;&amp; b" in shown


def test_a_cut_code_block_never_ends_in_half_an_escape() -> None:
    shown = b.code("<" * 200, 60)
    body = shown.split("\n")[1]
    assert len(shown) <= 60 and body and body.count("&") == body.count(";")
