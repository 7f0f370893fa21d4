"""Which model the LLM planner talks to, from the environment, and the client for it.

``OPENAI_API_KEY``, ``OPENAI_BASE_URL`` and ``STRATUS_MODEL`` name any OpenAI-compatible server
(OpenAI itself, a local vLLM/Ollama/LiteLLM, the lab's fake); ``OPENAI_API_VERSION`` switches
to Azure OpenAI, where the base URL is the resource endpoint and the model the deployment.
``STRATUS_LLM_TIMEOUT`` bounds one planning in seconds (default 60). With neither a key nor a
base URL there is no model, and the workflow uses the offline planner.
"""

from __future__ import annotations

from collections.abc import Mapping

from autogen_core.models import ChatCompletionClient, ModelFamily, ModelInfo
from autogen_ext.models.openai import (
    AzureOpenAIChatCompletionClient,
    OpenAIChatCompletionClient,
)
from autogen_ext.models.openai.config import OpenAIClientConfiguration
from pydantic import BaseModel, ConfigDict, Field, SecretStr

from agents.llm import logbounds, metering
from store.errors import Remedy, StratusError
from tools.env import number

DEFAULT_MODEL = "gpt-4o-mini"
DEFAULT_TIMEOUT = 60.0
MIN_TIMEOUT = 1.0  # below a second no model answers; such a value is a typo
# What a model we do not know by name is assumed to do: it must call tools and follow a JSON
# schema, or the planner cannot use it (and falls back after two failed tries).
UNKNOWN_MODEL_INFO = ModelInfo(
    vision=False,
    function_calling=True,
    json_output=True,
    structured_output=True,
    family=ModelFamily.UNKNOWN,
    multiple_system_messages=False,
)


class ConfigError(StratusError, ValueError):
    """The LLM settings are present but unusable (the message names the variable)."""

    code = "llm_config"
    default_remedy = Remedy.FIX_CONFIG


class LLMConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    version: int = 1

    model: str = DEFAULT_MODEL
    api_key: SecretStr | None = None
    base_url: str | None = None
    api_version: str | None = None  # set: Azure OpenAI
    timeout: float = Field(default=DEFAULT_TIMEOUT, ge=MIN_TIMEOUT, le=900)

    @classmethod
    def from_env(cls, env: Mapping[str, str]) -> LLMConfig | None:
        """The configuration, or None when no model is configured."""
        key = env.get("OPENAI_API_KEY", "").strip()
        base_url = env.get("OPENAI_BASE_URL", "").strip()
        # Read even without a model: a bad value is refused, never ignored until one is set.
        timeout = number(
            "STRATUS_LLM_TIMEOUT", default=DEFAULT_TIMEOUT, low=MIN_TIMEOUT, high=900, env=env
        )
        if not key and not base_url:
            return None
        return cls(
            model=env.get("STRATUS_MODEL", "").strip() or DEFAULT_MODEL,
            api_key=SecretStr(key) if key else None,
            base_url=base_url or None,
            api_version=env.get("OPENAI_API_VERSION", "").strip() or None,
            timeout=timeout,
        )

    @property
    def is_azure(self) -> bool:
        return self.api_version is not None


def make_client(config: LLMConfig) -> ChatCompletionClient:
    """A chat completion client for ``config``. The client itself does not retry: the planner
    decides what a failure costs (one more try, then the offline planner). What the client
    logs is bounded from here on (``agents.llm.logbounds``)."""
    logbounds.install()
    # A local server needs no key, but the client insists on one.
    key = config.api_key.get_secret_value() if config.api_key else "not-needed"
    if config.is_azure:
        if not config.base_url:
            raise ConfigError("OPENAI_API_VERSION is set (Azure) but OPENAI_BASE_URL is not")
        return AzureOpenAIChatCompletionClient(
            model=config.model,
            azure_deployment=config.model,
            azure_endpoint=config.base_url,
            api_version=str(config.api_version),
            api_key=key,
            timeout=config.timeout,
            max_retries=0,
            model_info=UNKNOWN_MODEL_INFO,
            http_client=metering.bounded_http_client(config.timeout),  # type: ignore[call-arg]
        )
    settings = OpenAIClientConfiguration(
        model=config.model, api_key=key, timeout=config.timeout, max_retries=0
    )
    # An answer too large to be one is refused by its size while it is read, before the client
    # parses it into the answer's schema (``metering.BoundedTransport``).
    settings["http_client"] = metering.bounded_http_client(config.timeout)  # type: ignore[typeddict-unknown-key]
    if config.base_url:
        settings["base_url"] = config.base_url
    try:
        return OpenAIChatCompletionClient(**settings)
    except ValueError:  # a name the client does not know: say what it can do
        settings["model_info"] = UNKNOWN_MODEL_INFO
        return OpenAIChatCompletionClient(**settings)
