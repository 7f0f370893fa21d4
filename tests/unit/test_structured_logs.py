"""Structured logs: one JSON object a line carrying the incident and proposal ids in force,
the format chosen by STRATUS_LOG_FORMAT (json when serving in a cluster), and no secret ever
written — the known tokens from the environment and anything shaped like a token."""

from __future__ import annotations

import io
import json
import logging

import pytest

from operations import logs
from store import logcontext

BOT = "xoxb-1111-2222-abcdefghijklmnop"
SIGNING = "0123456789abcdef0123456789abcdef"
KEY = "audit-key-never-logged-42"


def _logger(fmt: str, env: dict[str, str]) -> tuple[logging.Logger, io.StringIO]:
    out = io.StringIO()
    handler = logging.StreamHandler(out)
    handler.setFormatter(logs.formatter(fmt, secrets=logs.secrets_from(env)))
    logger = logging.getLogger(f"test.structured.{fmt}")
    logger.handlers[:] = [handler]
    logger.propagate = False
    logger.setLevel(logging.INFO)
    return logger, out


ENV = {"SLACK_BOT_TOKEN": BOT, "SLACK_SIGNING_SECRET": SIGNING, "STRATUS_AUDIT_KEY": KEY}


def test_json_lines_carry_the_ids_in_force() -> None:
    logger, out = _logger("json", ENV)
    with logcontext.about(incident="inc-1"), logcontext.about(proposal="p-2"):
        logger.info("approved %s", "scale")
    logger.warning("outside")
    first, second = (json.loads(line) for line in out.getvalue().splitlines())
    assert first["message"] == "approved scale" and first["level"] == "INFO"
    assert first["incident_id"] == "inc-1" and first["proposal_id"] == "p-2"
    assert first["logger"] == "test.structured.json" and first["time"].endswith("Z")
    assert "incident_id" not in second  # restored after the block


def test_known_secrets_and_token_shapes_are_redacted_everywhere() -> None:
    logger, out = _logger("json", ENV)
    logger.info("token %s secret %s key %s", BOT, SIGNING, KEY)
    logger.info("header Authorization: Bearer abc.def.ghi and xapp-1-A0-123-zz")
    try:
        raise RuntimeError(f"failed with {BOT}")
    except RuntimeError:
        logger.exception("boom")
    text = out.getvalue()
    for secret in (BOT, SIGNING, KEY, "abc.def.ghi", "xapp-1-A0-123-zz"):
        assert secret not in text
    assert text.count(logs.REDACTED) >= 6
    assert all(json.loads(line) for line in text.splitlines())


def test_text_format_is_redacted_too() -> None:
    logger, out = _logger("text", ENV)
    logger.info("bot token %s", BOT)
    assert BOT not in out.getvalue() and logs.REDACTED in out.getvalue()


@pytest.mark.parametrize(
    ("env", "chosen"),
    [
        ({}, "text"),
        ({"KUBERNETES_SERVICE_HOST": "10.0.0.1"}, "json"),
        ({"KUBERNETES_SERVICE_HOST": "10.0.0.1", "STRATUS_LOG_FORMAT": "text"}, "text"),
        ({"STRATUS_LOG_FORMAT": "JSON"}, "json"),
    ],
)
def test_the_format_follows_the_environment(env: dict[str, str], chosen: str) -> None:
    assert logs.format_from(env) == chosen


def test_an_unknown_format_is_one_line() -> None:
    with pytest.raises(logs.LogSettingError) as refused:
        logs.format_from({"STRATUS_LOG_FORMAT": "yaml"})
    assert "STRATUS_LOG_FORMAT" in refused.value.message and "json" in refused.value.message


def test_short_or_empty_values_are_not_secrets() -> None:
    """An empty or tiny value would redact every occurrence of a common letter."""
    found = logs.secrets_from({"SLACK_BOT_TOKEN": "", "OPENAI_API_KEY": "x", "HOME": "/root"})
    assert found == ()
