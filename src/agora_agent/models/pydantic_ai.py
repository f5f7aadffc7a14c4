"""`PydanticAIModel`: every other provider (Gemini, Groq, Mistral, Bedrock, Cohere…) via pydantic-ai's model layer.

pydantic-ai is used only as a model layer: `pydantic_ai.direct.model_request_stream`, no `Agent`,
no tool execution. Needs the `pydantic-ai` extra (tested range pinned in pyproject: >=2.68,<3) plus
the provider's own pydantic-ai-slim extra (e.g. `pydantic-ai-slim[google]`).
"""

from __future__ import annotations

import contextlib
from collections.abc import Mapping
from typing import Any

from agora_agent.errors import ConfigurationError, ModelError
from agora_agent.messages import Attachment, ModelMessage, ModelRequest, ModelTurn, ToolCall, Usage
from agora_agent.models._history import as_cost, is_image, parse_tool_arguments
from agora_agent.models._retry import (
    RetryableModelError,
    RetryPolicy,
    is_retryable_status,
    run_with_retries,
)
from agora_agent.models.base import TextCallback

try:
    from pydantic_ai import exceptions as pai_errors
    from pydantic_ai import messages as pai
    from pydantic_ai.direct import model_request_stream
    from pydantic_ai.models import Model, ModelRequestParameters
    from pydantic_ai.models import infer_model as pai_infer_model
    from pydantic_ai.settings import ModelSettings
    from pydantic_ai.tools import ToolDefinition as PaiToolDefinition
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ConfigurationError("PydanticAIModel needs pydantic-ai: pip install 'agora-agent[pydantic-ai]'") from exc

__all__ = ["PydanticAIModel", "to_pydantic_ai_messages"]

# Older provider spellings users still write; pydantic-ai 2.68 names them differently.
_PROVIDER_ALIASES = {"google-gla": "google", "google-vertex": "google-cloud"}

_RETRYABLE = (
    pai_errors.ModelRateLimitError,
    pai_errors.ModelUnavailableError,
    pai_errors.ModelServerError,
    pai_errors.ModelConnectionError,
    pai_errors.ModelRequestTimeout,
)


class PydanticAIModel:
    """A `ModelProvider` over any pydantic-ai `Model`, given as one or as a pydantic-ai model string.

    `PydanticAIModel("google:gemini-2.5-flash")`, `PydanticAIModel("groq:llama-3.3-70b-versatile")`,
    or `PydanticAIModel(GoogleModel(...))`. Keys come from each provider's usual variable (pydantic-ai
    reads them); a missing key or provider package is a `ConfigurationError` at construction.
    pydantic-ai's own SDK retries are turned off (`max_retries=0`) so `retry` is the only policy.

    Cost: only a cost the provider itself reported (`provider_details["cost"]`, e.g. OpenRouter) is
    passed on; pydantic-ai's `usage.cost` is a genai-prices estimate and the loop estimates cost
    from its own price table instead.
    """

    def __init__(
        self,
        model: str | Model,
        *,
        retry: RetryPolicy | None = None,
        settings: ModelSettings | None = None,
    ) -> None:
        self.model = _resolve(model) if isinstance(model, str) else model
        self.model_id: str | None = self.model.model_name
        self.retry = retry or RetryPolicy()
        self.settings: ModelSettings = {"max_retries": 0, **(settings or {})}

    def __repr__(self) -> str:
        return f"PydanticAIModel({self.model.system}:{self.model.model_name})"

    async def run_turn(self, request: ModelRequest, on_text: TextCallback) -> ModelTurn:
        """Stream one turn through pydantic-ai; see `ModelProvider.run_turn`."""
        messages = to_pydantic_ai_messages(request)
        params = ModelRequestParameters(
            function_tools=[
                PaiToolDefinition(name=t.name, description=t.description, parameters_json_schema=t.input_schema)
                for t in request.tools
            ],
            allow_text_output=True,
        )
        return await run_with_retries(self.retry, lambda: self._attempt(messages, params, on_text))

    async def _attempt(
        self, messages: list[pai.ModelMessage], params: ModelRequestParameters, on_text: TextCallback
    ) -> ModelTurn:
        emitted = False
        text: list[str] = []
        async with contextlib.AsyncExitStack() as stack:
            try:
                stream = await stack.enter_async_context(
                    model_request_stream(
                        self.model, messages, model_settings=self.settings, model_request_parameters=params
                    )
                )
            except Exception as exc:  # only pydantic-ai / the vendor SDK runs here
                raise self._translate(exc, streamed=False) from exc
            events = aiter(stream)
            while True:
                try:
                    event = await anext(events)
                except StopAsyncIteration:
                    break
                except Exception as exc:  # only pydantic-ai / the vendor SDK runs here
                    raise self._translate(exc, streamed=emitted) from exc
                delta = ""
                if isinstance(event, pai.PartStartEvent):
                    if isinstance(event.part, pai.TextPart):
                        delta = event.part.content
                    elif isinstance(event.part, pai.ToolCallPart):
                        emitted = True
                elif isinstance(event, pai.PartDeltaEvent) and isinstance(event.delta, pai.TextPartDelta):
                    delta = event.delta.content_delta
                if delta:
                    emitted = True
                    text.append(delta)
                    await on_text(delta)
            response = stream.get()
            usage = stream.usage
        calls = tuple(
            ToolCall(id=part.tool_call_id, name=part.tool_name, input=_arguments(part.args))
            for part in response.parts
            if isinstance(part, pai.ToolCallPart)
        )
        return ModelTurn(
            text="".join(text),
            tool_calls=calls,
            usage=Usage(
                input_tokens=usage.input_tokens,
                output_tokens=usage.output_tokens,
                cache_read_tokens=usage.cache_read_tokens or None,
                cache_write_tokens=usage.cache_write_tokens or None,
                reasoning_tokens=usage.output_reasoning_tokens or usage.details.get("reasoning_tokens") or None,
            ),
            model_id=self.model_id,
            cost_usd=as_cost((response.provider_details or {}).get("cost")),
        )

    def _translate(self, exc: Exception, *, streamed: bool) -> ModelError:
        where = f'model "{self.model.system}:{self.model.model_name}"'
        status = exc.status_code if isinstance(exc, pai_errors.ModelHTTPError) else None
        if isinstance(exc, pai_errors.ModelHTTPError):
            message = f"HTTP {status} from {where}: {_provider_message(exc.body) or exc.message}"
        else:
            message = f"{where} failed: {exc}"
        retryable = isinstance(exc, _RETRYABLE) or (status is not None and is_retryable_status(status))
        if retryable and not streamed:
            retry_after = exc.retry_after if isinstance(exc, pai_errors.ModelAPIError) else None
            return RetryableModelError(message, status=status, retry_after=retry_after)
        return ModelError(message, status=status)


def _resolve(spec: str) -> Model:
    provider, sep, name = spec.partition(":")
    if sep and provider in _PROVIDER_ALIASES:
        spec = f"{_PROVIDER_ALIASES[provider]}:{name}"
    try:
        return pai_infer_model(spec)
    except pai_errors.UserError as exc:
        # pydantic-ai's message names the key's environment variable; keep its first sentence.
        code = "missing_api_key" if "_API_KEY" in str(exc) else "invalid_model"
        raise ConfigurationError(f"pydantic-ai model {spec!r}: {str(exc).split('. ')[0]}", code=code) from exc
    except ImportError as exc:
        raise ConfigurationError(f"pydantic-ai model {spec!r}: {exc}", code="missing_extra") from exc


def _provider_message(body: object) -> str | None:
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
        if isinstance(body.get("message"), str):
            return str(body["message"])
    return None


def _arguments(args: object) -> dict[str, Any]:
    if isinstance(args, str):
        return parse_tool_arguments(args)
    return dict(args) if isinstance(args, Mapping) else {}


def to_pydantic_ai_messages(request: ModelRequest) -> list[pai.ModelMessage]:
    """Neutral history -> pydantic-ai requests/responses (system prompt first, tool results as ToolReturnPart)."""
    out: list[pai.ModelMessage] = []
    pending: list[pai.ModelRequestPart] = [pai.SystemPromptPart(content=request.system)] if request.system else []
    for message in request.messages:
        pending.extend(_tool_return(message))
        if message.role == "assistant":
            if pending:
                out.append(pai.ModelRequest(parts=pending))
                pending = []
            parts: list[pai.ModelResponsePart] = [pai.TextPart(content=message.content)] if message.content else []
            parts += [pai.ToolCallPart(tool_name=c.name, args=c.input, tool_call_id=c.id) for c in message.tool_calls]
            out.append(pai.ModelResponse(parts=parts or [pai.TextPart(content="")]))
        elif message.content or message.attachments:
            pending.append(pai.UserPromptPart(content=_user_content(message.content, message.attachments)))
    if pending:
        out.append(pai.ModelRequest(parts=pending))
    return out


def _tool_return(message: ModelMessage) -> list[pai.ModelRequestPart]:
    return [
        pai.ToolReturnPart(
            tool_name=r.name,
            content=r.content,
            tool_call_id=r.tool_call_id,
            outcome="failed" if r.is_error else "success",
        )
        for r in message.tool_results
    ]


def _user_content(text: str, attachments: tuple[Attachment, ...]) -> str | list[pai.UserContent]:
    """Images as ImageUrl, other files as DocumentUrl; `data:` URLs are decoded (never fetched)."""
    if not attachments:
        return text
    parts: list[pai.UserContent] = [text] if text else []
    for att in attachments:
        if att.url.startswith("data:"):
            parts.append(pai.BinaryContent.from_data_uri(att.url))
        elif is_image(att):
            parts.append(pai.ImageUrl(url=att.url, media_type=att.content_type))
        else:
            parts.append(pai.DocumentUrl(url=att.url, media_type=att.content_type))
    return parts
