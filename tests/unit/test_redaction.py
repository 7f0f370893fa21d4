"""Credential-shaped text is redacted where it leaves Stratus: in its logs, and in cluster text
quoted to a model or an outside agent (an outside tester read a password, a JWT and an AWS key
back from a pod's logs through the MCP read tools)."""

from __future__ import annotations

import pytest

from agents.llm.telemetry import clean, tool_result
from store.redaction import REDACTED, redact

JWT = "eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW0ifQ.c2lnbmF0dXJl"


@pytest.mark.parametrize(
    ("text", "kept", "gone"),
    [
        ("connecting with password=geo-s3cret now", "password=", "geo-s3cret"),
        ("api_key: 9f8e7d6c5b4a", "api_key:", "9f8e7d6c5b4a"),
        (f"Authorization: Bearer {JWT}", "Authorization:", JWT),
        ("aws AKIAIOSFODNN7EXAMPLE in env", "aws", "AKIAIOSFODNN7EXAMPLE"),
        ("slack xoxb-1234-5678-abcdef", "slack", "xoxb-1234"),
        ("client_secret='hunter22'", "client_secret=", "hunter22"),
    ],
)
def test_credentials_are_redacted_and_the_setting_is_still_named(
    text: str, kept: str, gone: str
) -> None:
    said = redact(text)
    assert gone not in said and REDACTED in said and kept in said


def test_ordinary_words_about_credentials_stay() -> None:
    for text in (
        'FATAL: password authentication failed for user "app"',
        "token bucket full, retrying",
        "rotate the api key next week",
    ):
        assert redact(text) == text


def test_what_a_model_or_an_agent_is_shown_is_redacted() -> None:
    assert "geo-s3cret" not in clean("db password=geo-s3cret")
    shown = tool_result("logs", {"lines": [f"token={JWT}", "ok"]})
    assert JWT not in shown and REDACTED in shown and "ok" in shown
