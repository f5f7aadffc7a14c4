"""`OpenAIChatModel`: OpenAI Chat Completions streaming, for OpenAI and every compatible server.

Works with api.openai.com and anything speaking the Chat Completions wire format through `base_url`
(vLLM, Ollama, LM Studio, llama.cpp, OpenRouter, a LiteLLM proxy). Needs the `openai` extra.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from agora_agent.errors import ConfigurationError, ModelError
from agora_agent.messages import Attachment, ModelMessage, ModelRequest, ModelTurn, ToolCall, Usage
from agora_agent.models._history import (
    RAW_ARGUMENTS_KEY,
    ToolCallBuffer,
    as_cost,
    is_image,
    tool_result_text,
)
from agora_agent.models._retry import (
    RetryableModelError,
    RetryPolicy,
    is_retryable_status,
    parse_retry_after,
    run_with_retries,
)
from agora_agent.models.base import TextCallback

try:
    import openai
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ConfigurationError("OpenAIChatModel needs the openai SDK: pip install 'agora-agent[openai]'") from exc

if TYPE_CHECKING:
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletionChunk

__all__ = ["OpenAIChatModel"]

LOCAL_PLACEHOLDER_KEY = "not-needed"
"""Sent as the API key to a `base_url` server when no key is configured (local servers ignore it)."""

LITELLM_COST_HEADER = "x-litellm-response-cost"


class OpenAIChatModel:
    """A `ModelProvider` over the Chat Completions API (streamed, with tools).

    The key comes from `api_key` or `OPENAI_API_KEY`; with a `base_url` (or `OPENAI_BASE_URL`) and
    no key a placeholder is sent, so local servers work without one. Pass `client` to reuse a
    configured `openai.AsyncOpenAI` (its own retries should be off: `max_retries=0`).

    `extra_body` is merged into every request (e.g. OpenRouter `{"usage": {"include": True}}`,
    vLLM sampling options). Raises `ConfigurationError` for a missing key; `run_turn` raises
    `ModelError` for provider failures after retrying 429/5xx/timeouts per `retry`.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        client: openai.AsyncOpenAI | None = None,
        retry: RetryPolicy | None = None,
        extra_body: Mapping[str, Any] | None = None,
        max_tokens: int | None = None,
        timeout: float | None = None,
    ) -> None:
        if not model:
            raise ConfigurationError('OpenAIChatModel needs a model name, e.g. OpenAIChatModel("gpt-4o-mini")')
        self.model = model
        self.model_id: str | None = model
        self.retry = retry or RetryPolicy()
        self.extra_body = dict(extra_body) if extra_body else None
        self.max_tokens = max_tokens
        if client is None:
            base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
            key = api_key or os.environ.get("OPENAI_API_KEY")
            if not key:
                if base_url is None:
                    raise ConfigurationError(
                        "OPENAI_API_KEY is not set: export it, pass api_key=…, "
                        "or pass base_url=… for a local OpenAI-compatible server",
                        code="missing_api_key",
                    )
                key = LOCAL_PLACEHOLDER_KEY
            # Our RetryPolicy retries; the SDK's own retries would multiply the attempts.
            client = openai.AsyncOpenAI(
                api_key=key, base_url=base_url, max_retries=0, timeout=openai.NOT_GIVEN if timeout is None else timeout
            )
            self._owns_client = True
        else:
            self._owns_client = False
        self.client = client

    def __repr__(self) -> str:
        return f"OpenAIChatModel({self.model!r}, base_url={str(self.client.base_url)!r})"

    async def aclose(self) -> None:
        """Close the HTTP connection pool if this adapter created the client (a passed-in client is left open)."""
        if self._owns_client:
            await self.client.close()

    async def run_turn(self, request: ModelRequest, on_text: TextCallback) -> ModelTurn:
        """Stream one Chat Completions turn; see `ModelProvider.run_turn`."""
        params = self.request_params(request)
        return await run_with_retries(self.retry, lambda: self._attempt(params, on_text))

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of `chat.completions.create` for this request (streaming, with usage)."""
        params: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(request),
            "stream": True,
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            params["tools"] = [
                {
                    "type": "function",
                    "function": {"name": t.name, "description": t.description, "parameters": t.input_schema},
                }
                for t in request.tools
            ]
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        if self.extra_body:
            params["extra_body"] = self.extra_body
        return params

    async def _attempt(self, params: dict[str, Any], on_text: TextCallback) -> ModelTurn:
        emitted = False
        try:
            stream = cast(
                "openai.AsyncStream[ChatCompletionChunk]", await self.client.chat.completions.create(**params)
            )
        except openai.OpenAIError as exc:
            raise self._translate(exc, streamed=False) from exc
        header_cost = as_cost(stream.response.headers.get(LITELLM_COST_HEADER))
        text: list[str] = []
        calls = ToolCallBuffer()
        usage: CompletionUsage | None = None
        async with stream:  # closes the HTTP response on cancellation or error
            while True:
                try:
                    chunk = await stream.__anext__()
                except StopAsyncIteration:
                    break
                except openai.OpenAIError as exc:
                    raise self._translate(exc, streamed=emitted) from exc
                if chunk.usage is not None:
                    usage = chunk.usage
                for choice in chunk.choices:
                    delta = choice.delta
                    if delta.content:
                        emitted = True
                        text.append(delta.content)
                        await on_text(delta.content)
                    for tc in delta.tool_calls or ():
                        emitted = True
                        fn = tc.function
                        calls.start(tc.index, tc.id, fn.name if fn else None)
                        if fn is not None and fn.arguments:
                            calls.append(tc.index, fn.arguments)
        reported_cost = as_cost((usage.model_extra or {}).get("cost")) if usage is not None else None
        return ModelTurn(
            text="".join(text),
            tool_calls=calls.finish(),
            usage=_usage(usage),
            model_id=self.model,
            cost_usd=reported_cost if reported_cost is not None else header_cost,
        )

    def _translate(self, exc: openai.OpenAIError, *, streamed: bool) -> ModelError:
        """One vendor error -> one ModelError; retryable only while nothing was streamed yet."""
        where = f'model "{self.model}" at {self.client.base_url}'
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            message = f"HTTP {status} from {where}: {_provider_message(exc.body) or exc.message}"
            if is_retryable_status(status) and not streamed:
                return RetryableModelError(
                    message, status=status, retry_after=parse_retry_after(exc.response.headers.get("retry-after"))
                )
            return ModelError(message, status=status)
        if isinstance(exc, openai.APITimeoutError):
            message, code = f"{where} timed out", "provider_timeout"
        elif isinstance(exc, openai.APIConnectionError):
            message, code = f"could not reach {where}: {exc.__cause__ or exc}", "provider_unreachable"
        else:  # an error event inside an open stream, or a malformed response
            message = f"{where} failed: {_provider_message(getattr(exc, 'body', None)) or exc}"
            code = "provider_failed"
        if not streamed and isinstance(exc, openai.APIError):
            return RetryableModelError(message, code=code)
        return ModelError(message, code=code)


def _provider_message(body: object) -> str | None:
    """The human-readable message in an OpenAI-style error body (`{"message": …}` or `{"error": {…}}`)."""
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
            return cast(str, inner["message"])
        if isinstance(inner, str):
            return inner
    return None


def _usage(usage: CompletionUsage | None) -> Usage:
    """Chat Completions usage -> neutral `Usage` (prompt_tokens already includes cached tokens)."""
    if usage is None:
        return Usage()
    prompt = usage.prompt_tokens_details
    completion = usage.completion_tokens_details
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=prompt.cached_tokens if prompt is not None else None,
        cache_write_tokens=prompt.cache_write_tokens if prompt is not None else None,
        reasoning_tokens=completion.reasoning_tokens if completion is not None else None,
    )


def to_openai_messages(request: ModelRequest) -> list[dict[str, Any]]:
    """Neutral history -> Chat Completions `messages` (system first, tool results as role "tool")."""
    out: list[dict[str, Any]] = []
    if request.system:
        out.append({"role": "system", "content": request.system})
    for message in request.messages:
        out.extend(_wire_message(message))
    return out


def _wire_message(message: ModelMessage) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": r.tool_call_id, "content": tool_result_text(r)} for r in message.tool_results
    ]
    if message.role == "assistant":
        wire: dict[str, Any] = {"role": "assistant", "content": message.content or None}
        if message.tool_calls:
            wire["tool_calls"] = [_wire_tool_call(c) for c in message.tool_calls]
        elif not message.content:
            wire["content"] = ""
        out.append(wire)
    elif message.content or message.attachments or (message.role == "user" and not message.tool_results):
        out.append({"role": "user", "content": _user_content(message.content, message.attachments)})
    return out


def _wire_tool_call(call: ToolCall) -> dict[str, Any]:
    raw = call.input.get(RAW_ARGUMENTS_KEY) if set(call.input) == {RAW_ARGUMENTS_KEY} else None
    arguments = raw if isinstance(raw, str) else json.dumps(call.input, ensure_ascii=False)
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": arguments}}


def _user_content(text: str, attachments: tuple[Attachment, ...]) -> str | list[dict[str, Any]]:
    """Plain text without attachments; else a text part, then image_url / file parts."""
    if not attachments:
        return text
    parts: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    for att in attachments:
        if is_image(att):
            parts.append({"type": "image_url", "image_url": {"url": att.url}})
        else:
            # file_data takes a data: URL on OpenAI; OpenRouter and LiteLLM also accept an https URL.
            parts.append({"type": "file", "file": {"file_data": att.url, "filename": att.name}})
    return parts
