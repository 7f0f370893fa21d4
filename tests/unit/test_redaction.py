"""Credential-shaped text is redacted where it leaves Stratus: in its logs, and in cluster text
quoted to a model or an outside agent (an outside tester read a password, a JWT and an AWS key
back from a pod's logs through the MCP read tools)."""

from __future__ import annotations

from typing import Any

import pytest

from agents.llm.telemetry import clean, tool_result
from store.redaction import REDACTED, credential_name, redact
from tools.objects import env_redacted, secret_digest, yaml_diff

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


@pytest.mark.parametrize(
    ("text", "kept", "gone"),
    [
        ("DB_PASSWORD=hunter2", "DB_PASSWORD=", "hunter2"),
        ("API_TOKEN: 0a1b2c3d", "API_TOKEN:", "0a1b2c3d"),
        ("AWS_SECRET_ACCESS_KEY=wJalrXUtnFEMI", "AWS_SECRET_ACCESS_KEY=", "wJalrXUtnFEMI"),
        ("STRIPE_KEY=rk_live_51H", "STRIPE_KEY=", "rk_live_51H"),
    ],
)
def test_a_credential_named_inside_a_longer_name_is_redacted(
    text: str, kept: str, gone: str
) -> None:
    said = redact(text)
    assert gone not in said and REDACTED in said and kept in said


@pytest.mark.parametrize(
    "name",
    [
        "DB_PASSWORD",
        "API_TOKEN",
        "JWT_SECRET",
        "SIGNING_KEY",
        "AWS_SECRET_ACCESS_KEY",
        "githubToken",
        # The outside tester's list, which the word rule missed.
        "PGPASSWORD",
        "SESSIONSECRET",
        "CLIENTSECRET",
        "ENCRYPTIONKEY",
        "SIGNINGKEY",
        "HTPASSWD",
        "PRIVATE_KEY_PEM",
        "X_API_KEY_VALUE",
        "MASTER_KEY_B64",
        "STRIPE_SK",
        "GITHUB_PAT",
        "DSN",
        "BEARER",
    ],
)
def test_names_that_read_as_credentials(name: str) -> None:
    assert credential_name(name)


@pytest.mark.parametrize(
    "name", ["LOG_LEVEL", "PORT", "KEYCLOAK_URL", "BYPASS_CACHE", "MONKEY", "REDIS_HOST", "PATH"]
)
def test_names_that_do_not(name: str) -> None:
    assert not credential_name(name)


def _template(password: str) -> dict[str, Any]:
    return {
        "kind": "Deployment",
        "metadata": {"name": "web", "namespace": "shop"},
        "spec": {
            "template": {
                "spec": {
                    "containers": [
                        {
                            "name": "web",
                            "image": "web:1",
                            "env": [
                                {"name": "DB_PASSWORD", "value": password},
                                {"name": "LOG_LEVEL", "value": "debug"},
                                {
                                    "name": "API_TOKEN",
                                    "valueFrom": {"secretKeyRef": {"name": "api", "key": "t"}},
                                },
                            ],
                        }
                    ],
                    "initContainers": [
                        {"name": "init", "image": "i:1", "env": [{"name": "X_KEY", "value": "k1"}]}
                    ],
                }
            }
        },
    }


def test_a_diff_shows_a_credential_named_variables_value_as_a_digest() -> None:
    diff = yaml_diff(_template("hunter2"), _template("hunter3"), label="deployment/web")
    assert "hunter2" not in diff and "hunter3" not in diff and "k1" not in diff
    # The change is still seen (two digests differ), the setting still named, the rest kept.
    assert f"-          value: {secret_digest('hunter2')}" in diff
    assert f"+          value: {secret_digest('hunter3')}" in diff
    assert "DB_PASSWORD" in diff


def test_env_redaction_keeps_value_from_and_ordinary_values() -> None:
    shown = env_redacted(_template("hunter2"))
    assert shown is not None
    env = shown["spec"]["template"]["spec"]["containers"][0]["env"]
    assert env[0]["value"] == secret_digest("hunter2")
    assert env[1] == {"name": "LOG_LEVEL", "value": "debug"}
    assert env[2]["valueFrom"] == {"secretKeyRef": {"name": "api", "key": "t"}}
    init = shown["spec"]["template"]["spec"]["initContainers"][0]["env"][0]
    assert init["value"] == secret_digest("k1")
    # The object itself is untouched (a stored before-image keeps its value for an undo).
    original = _template("hunter2")
    env_redacted(original)
    assert original["spec"]["template"]["spec"]["containers"][0]["env"][0]["value"] == "hunter2"


@pytest.mark.parametrize(
    "text, kept, gone",
    [
        ("REDIS_URL=redis://app:hunter2@redis:6379/0", "redis://app:", "hunter2"),
        ("dsn postgres://svc:s3cr3t-pw@db/shop", "postgres://svc:", "s3cr3t-pw"),
        ("token ghp_abcdefghijklmnopqrstuvwxyz0123", "token ", "ghp_abcdefghij"),
        ("key sk_live_abcdefghij0123456789", "key ", "sk_live_abcdefghij"),
    ],
)
def test_credential_shaped_values_are_redacted_whatever_their_name(
    text: str, kept: str, gone: str
) -> None:
    said = redact(text)
    assert gone not in said and kept in said, said


def test_a_url_with_a_password_in_an_env_value_shows_as_a_digest() -> None:
    template = _template("x")
    env = template["spec"]["template"]["spec"]["containers"][0]["env"]
    env.append({"name": "REDIS_URL", "value": "redis://app:hunter2@redis:6379/0"})
    env.append({"name": "REDIS_HOST", "value": "redis"})
    shown = env_redacted(template)
    assert shown is not None
    values = {
        v["name"]: v.get("value") for v in shown["spec"]["template"]["spec"]["containers"][0]["env"]
    }
    assert "hunter2" not in str(values["REDIS_URL"]) and values["REDIS_HOST"] == "redis"
