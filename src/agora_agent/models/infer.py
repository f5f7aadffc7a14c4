"""Model selection by string: `"openai:gpt-4o-mini"`, `"anthropic:…"`, `"pydantic-ai:<provider>:<model>"`.

Each vendor module is imported only when its prefix is used, so a missing SDK is reported as a
`ConfigurationError` naming the extra to install, and only for the provider actually selected.
"""

from __future__ import annotations

import os

from agora_agent.errors import ConfigurationError
from agora_agent.models.base import ModelProvider

__all__ = ["MODEL_BASE_URL_ENV", "MODEL_ENV", "PREFIXES", "env_base_url", "infer_model", "model_from_env"]

MODEL_ENV = "AGORA_MODEL"
MODEL_BASE_URL_ENV = "AGORA_MODEL_BASE_URL"
PREFIXES = ("openai", "anthropic", "pydantic-ai")


def infer_model(spec: str | ModelProvider, *, base_url: str | None = None) -> ModelProvider:
    """The provider a spec names; a `ModelProvider` object is returned unchanged.

    `base_url` points `openai:` at any OpenAI-compatible server (vLLM, Ollama, LiteLLM proxy…) and
    `anthropic:` at a proxy. Raises `ConfigurationError` for an unknown prefix, a missing SDK (naming
    the extra) or a missing API key (naming the environment variable).
    """
    if not isinstance(spec, str):
        if isinstance(spec, ModelProvider):
            return spec
        raise ConfigurationError(f"model must be a 'provider:model' string or a ModelProvider, got {spec!r}")
    prefix, sep, name = spec.strip().partition(":")
    if not sep or not name:
        raise ConfigurationError(
            f"model {spec!r} has no provider prefix: write e.g. 'openai:{spec}' (one of {', '.join(PREFIXES)})",
            code="no_provider_prefix",
        )
    if prefix == "openai":
        from agora_agent.models.openai import OpenAIChatModel

        return OpenAIChatModel(name, base_url=base_url)
    if prefix == "anthropic":
        from agora_agent.models.anthropic import AnthropicModel

        return AnthropicModel(name, base_url=base_url)
    if prefix in ("pydantic-ai", "pydantic_ai"):
        if base_url is not None:
            raise ConfigurationError(
                f"base_url is not supported with {spec!r}: use 'openai:<model>' for an OpenAI-compatible server, "
                "or pass PydanticAIModel(<a configured pydantic_ai Model>)"
            )
        from agora_agent.models.pydantic_ai import PydanticAIModel

        return PydanticAIModel(name)
    raise ConfigurationError(
        f"unknown model provider {prefix!r} in {spec!r}: use one of {', '.join(PREFIXES)}", code="unknown_provider"
    )


def model_from_env() -> ModelProvider | None:
    """The provider named by `AGORA_MODEL` (with `AGORA_MODEL_BASE_URL`), or None when it is unset."""
    spec = os.environ.get(MODEL_ENV, "").strip()
    base_url = os.environ.get(MODEL_BASE_URL_ENV, "").strip() or None
    if not spec:
        if base_url is not None:  # never fall back silently to another model than the one pointed at
            raise ConfigurationError(
                f"{MODEL_BASE_URL_ENV} is set ({base_url}) but {MODEL_ENV} is not: set "
                f"{MODEL_ENV}=openai:<model name on that server>",
                option=MODEL_ENV,
            )
        return None
    return infer_model(spec, base_url=base_url)


def env_base_url() -> str | None:
    """`AGORA_MODEL_BASE_URL`, used for every model given as a string (the scaffold's comment promises it)."""
    return os.environ.get(MODEL_BASE_URL_ENV, "").strip() or None
