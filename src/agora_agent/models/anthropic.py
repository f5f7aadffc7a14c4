"""`AnthropicModel`: Anthropic Messages streaming with tool use. Needs the `anthropic` extra."""

from __future__ import annotations

import base64
import binascii
import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, cast

from agora_agent.errors import ConfigurationError, ModelError
from agora_agent.messages import Attachment, ModelMessage, ModelRequest, ModelTurn, Usage
from agora_agent.models._history import ToolCallBuffer, is_image, parse_data_url
from agora_agent.models._retry import (
    RetryableModelError,
    RetryPolicy,
    is_retryable_status,
    parse_retry_after,
    run_with_retries,
)
from agora_agent.models.base import TextCallback

try:
    import anthropic
except ImportError as exc:  # pragma: no cover - exercised only without the extra
    raise ConfigurationError("AnthropicModel needs the anthropic SDK: pip install 'agora-agent[anthropic]'") from exc

if TYPE_CHECKING:
    from anthropic.types import RawMessageStreamEvent

__all__ = ["AnthropicModel"]

LOCAL_PLACEHOLDER_KEY = "not-needed"

# In-stream error events arrive on an HTTP 200; these are the statuses the same errors carry before a stream opens.
_STREAM_ERROR_STATUS = {"overloaded_error": 529, "rate_limit_error": 429, "api_error": 500, "timeout_error": 504}


class AnthropicModel:
    """A `ModelProvider` over the Anthropic Messages API (streamed, with `tool_use`).

    The key comes from `api_key` or `ANTHROPIC_API_KEY` (a placeholder is sent to a `base_url`
    proxy when neither is set). Usage is normalised: Anthropic's `input_tokens` excludes cache reads
    and writes, so they are added back and `Usage.input_tokens` is the whole prompt.
    Raises `ConfigurationError` for a missing key; `run_turn` raises `ModelError`.
    """

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: anthropic.AsyncAnthropic | None = None,
        max_tokens: int = 4096,
        retry: RetryPolicy | None = None,
        timeout: float | None = None,
    ) -> None:
        if not model:
            raise ConfigurationError('AnthropicModel needs a model name, e.g. AnthropicModel("claude-sonnet-4-5")')
        self.model = model
        self.model_id: str | None = model
        self.max_tokens = max_tokens
        self.retry = retry or RetryPolicy()
        self._owns_client = client is None
        if client is None:
            key = api_key or os.environ.get("ANTHROPIC_API_KEY")
            if not key:
                if base_url is None:
                    raise ConfigurationError(
                        "ANTHROPIC_API_KEY is not set: export it or pass api_key=…", code="missing_api_key"
                    )
                key = LOCAL_PLACEHOLDER_KEY
            client = anthropic.AsyncAnthropic(
                api_key=key,
                base_url=base_url,
                max_retries=0,
                timeout=anthropic.NOT_GIVEN if timeout is None else timeout,
            )
        self.client = client

    def __repr__(self) -> str:
        return f"AnthropicModel({self.model!r}, base_url={str(self.client.base_url)!r})"

    async def aclose(self) -> None:
        """Close the HTTP connection pool if this adapter created the client."""
        if self._owns_client:
            await self.client.close()

    async def run_turn(self, request: ModelRequest, on_text: TextCallback) -> ModelTurn:
        """Stream one Messages turn; see `ModelProvider.run_turn`."""
        params = self.request_params(request)
        return await run_with_retries(self.retry, lambda: self._attempt(params, on_text))

    def request_params(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of `messages.create` for this request."""
        params: dict[str, Any] = {
            "model": self.model,
            "max_tokens": self.max_tokens,
            "messages": to_anthropic_messages(request.messages),
            "stream": True,
        }
        if request.system:
            params["system"] = request.system
        if request.tools:
            params["tools"] = [
                {"name": t.name, "description": t.description, "input_schema": t.input_schema} for t in request.tools
            ]
        return params

    async def _attempt(self, params: dict[str, Any], on_text: TextCallback) -> ModelTurn:
        emitted = False
        try:
            stream = cast("anthropic.AsyncStream[RawMessageStreamEvent]", await self.client.messages.create(**params))
        except anthropic.AnthropicError as exc:
            raise self._translate(exc, streamed=False) from exc
        text: list[str] = []
        calls = ToolCallBuffer()
        tokens: dict[str, int | None] = {}
        async with stream:  # closes the HTTP response on cancellation or error
            while True:
                try:
                    event = await stream.__anext__()
                except StopAsyncIteration:
                    break
                except anthropic.AnthropicError as exc:
                    raise self._translate(exc, streamed=emitted) from exc
                if event.type == "content_block_delta":
                    delta = event.delta
                    if delta.type == "text_delta" and delta.text:
                        emitted = True
                        text.append(delta.text)
                        await on_text(delta.text)
                    elif delta.type == "input_json_delta":
                        calls.append(event.index, delta.partial_json)
                elif event.type == "content_block_start":
                    block = event.content_block
                    if block.type == "tool_use":
                        emitted = True
                        calls.start(event.index, block.id, block.name)
                elif event.type == "message_start":
                    _merge_usage(tokens, event.message.usage)
                elif event.type == "message_delta":
                    _merge_usage(tokens, event.usage)
        return ModelTurn(text="".join(text), tool_calls=calls.finish(), usage=_usage(tokens), model_id=self.model)

    def _translate(self, exc: anthropic.AnthropicError, *, streamed: bool) -> ModelError:
        """One vendor error -> one ModelError; retryable only while nothing was streamed yet."""
        where = f'Anthropic model "{self.model}"'
        if isinstance(exc, anthropic.APIStatusError):
            status: int | None = exc.status_code
            detail = exc.api_message or _provider_message(exc.body) or exc.message
            if status == 200:  # an `event: error` inside the stream
                status = _STREAM_ERROR_STATUS.get(str(exc.type or ""))
                message = f"{where} failed mid-stream: {detail}"
            else:
                message = f"HTTP {status} from {where}: {detail}"
            if status is not None and is_retryable_status(status) and not streamed:
                retry_after = parse_retry_after(exc.response.headers.get("retry-after"))
                return RetryableModelError(message, status=status, retry_after=retry_after)
            return ModelError(message, status=status)
        if isinstance(exc, anthropic.APITimeoutError):
            message = f"{where} timed out"
        elif isinstance(exc, anthropic.APIConnectionError):
            message = f"could not reach {where} at {self.client.base_url}: {exc.__cause__ or exc}"
        else:
            message = f"{where} failed: {exc}"
        if not streamed and isinstance(exc, anthropic.APIConnectionError):
            return RetryableModelError(message)
        return ModelError(message)


def _provider_message(body: object) -> str | None:
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping) and isinstance(inner.get("message"), str):
            return cast(str, inner["message"])
    return None


def _merge_usage(tokens: dict[str, int | None], usage: Any) -> None:
    """Later usage events repeat cumulative totals; keep the last value each field reported."""
    for name in ("input_tokens", "output_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"):
        value = getattr(usage, name, None)
        if value is not None:
            tokens[name] = value
    details = getattr(usage, "output_tokens_details", None)
    if details is not None and getattr(details, "thinking_tokens", None) is not None:
        tokens["thinking_tokens"] = details.thinking_tokens


def _usage(tokens: Mapping[str, int | None]) -> Usage:
    read = tokens.get("cache_read_input_tokens")
    write = tokens.get("cache_creation_input_tokens")
    return Usage(
        input_tokens=(tokens.get("input_tokens") or 0) + (read or 0) + (write or 0),
        output_tokens=tokens.get("output_tokens") or 0,
        cache_read_tokens=read,
        cache_write_tokens=write,
        reasoning_tokens=tokens.get("thinking_tokens"),
    )


def to_anthropic_messages(messages: Sequence[ModelMessage]) -> list[dict[str, Any]]:
    """Neutral history -> Messages `messages`: tool results become `tool_result` blocks in a user turn.

    Consecutive turns of one role are merged (tool results followed by a new user message become
    one user turn), and a turn holding a single text block is sent as a plain string.
    """
    out: list[dict[str, Any]] = []

    def push(role: str, blocks: list[dict[str, Any]]) -> None:
        if not blocks:
            return
        if out and out[-1]["role"] == role:
            out[-1]["content"].extend(blocks)
        else:
            out.append({"role": role, "content": blocks})

    for message in messages:
        push(
            "user",
            [
                {
                    "type": "tool_result",
                    "tool_use_id": r.tool_call_id,
                    "content": r.content,
                    **({"is_error": True} if r.is_error else {}),
                }
                for r in message.tool_results
            ],
        )
        blocks: list[dict[str, Any]]
        if message.role == "assistant":
            blocks = [{"type": "text", "text": message.content}] if message.content else []
            blocks += [{"type": "tool_use", "id": c.id, "name": c.name, "input": c.input} for c in message.tool_calls]
            push("assistant", blocks)
        else:
            blocks = [_attachment_block(a) for a in message.attachments]
            if message.content:
                blocks.insert(0, {"type": "text", "text": message.content})
            push("user", blocks)
    for wire in out:
        content = wire["content"]
        if len(content) == 1 and content[0]["type"] == "text":
            wire["content"] = content[0]["text"]
    return out


def _attachment_block(att: Attachment) -> dict[str, Any]:
    """Images -> image blocks; PDFs and text -> document blocks; anything else -> a text note with its URL."""
    data = parse_data_url(att.url)
    media_type = att.content_type.lower()
    if is_image(att):
        if data is not None:
            return {"type": "image", "source": {"type": "base64", "media_type": data[0], "data": data[1]}}
        return {"type": "image", "source": {"type": "url", "url": att.url}}
    if media_type == "application/pdf":
        source: dict[str, str]
        if data is not None:
            source = {"type": "base64", "media_type": "application/pdf", "data": data[1]}
        else:
            source = {"type": "url", "url": att.url}
        return {"type": "document", "source": source, "title": att.name}
    if media_type.startswith("text/") and data is not None:
        try:
            text = base64.b64decode(data[1], validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError):
            text = None
        if text is not None:
            return {
                "type": "document",
                "source": {"type": "text", "media_type": "text/plain", "data": text},
                "title": att.name,
            }
    # Anthropic has no generic file part: name the file so the model can at least refer to it.
    return {"type": "text", "text": f"[Attached file {att.name} ({att.content_type}): {att.url}]"}
