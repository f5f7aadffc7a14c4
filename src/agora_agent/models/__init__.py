"""Model providers: one `ModelProvider` protocol, one adapter module per vendor, one string spec.

    infer_model("openai:gpt-4o-mini")                      -> OpenAIChatModel   (extra: openai)
    infer_model("anthropic:claude-sonnet-4-5")             -> AnthropicModel    (extra: anthropic)
    infer_model("pydantic-ai:google-gla:gemini-2.5-flash") -> PydanticAIModel   (extra: pydantic-ai)

Importing this package never imports a vendor SDK: the adapters load on first attribute access, and
a missing SDK raises `ConfigurationError` naming the extra to install.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agora_agent._lazy import lazy_exports
from agora_agent.models._retry import RetryPolicy
from agora_agent.models.base import ModelProvider, TextCallback
from agora_agent.models.infer import infer_model, model_from_env

if TYPE_CHECKING:
    from agora_agent.models.anthropic import AnthropicModel
    from agora_agent.models.openai import OpenAIChatModel
    from agora_agent.models.pydantic_ai import PydanticAIModel

__all__ = [
    "AnthropicModel",
    "ModelProvider",
    "OpenAIChatModel",
    "PydanticAIModel",
    "RetryPolicy",
    "TextCallback",
    "infer_model",
    "model_from_env",
]

_LAZY = {
    "OpenAIChatModel": "agora_agent.models.openai",
    "AnthropicModel": "agora_agent.models.anthropic",
    "PydanticAIModel": "agora_agent.models.pydantic_ai",
}


__getattr__ = lazy_exports(__name__, _LAZY, globals())
