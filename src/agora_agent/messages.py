"""Neutral model-facing values: what the loop sends a model provider and what one turn returns.

These are plain dataclasses, independent of any vendor SDK; adapters in `agora_agent.models` map
them to and from the wire.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, overload

from agora_agent._frozen import fast_init

__all__ = [
    "Attachment",
    "MessageSeq",
    "ModelMessage",
    "ModelRequest",
    "ModelTurn",
    "ToolCall",
    "ToolDefinition",
    "ToolResult",
    "Usage",
    "stored_usage",
]


ToolKind = Literal["read", "action", "agent"]


@dataclass(frozen=True, kw_only=True, slots=True)
class Attachment:
    """A file the user attached; `url` must be reachable by the provider (presigned, proxy or `data:`)."""

    media_id: str
    url: str
    content_type: str
    name: str


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolDefinition:
    """A tool as offered to the model: no handler, a JSON Schema for its input."""

    name: str
    description: str
    input_schema: dict[str, Any]
    kind: ToolKind = "read"


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ToolCall:
    """One tool call the model asked for. `id` is model-supplied and unique within a run."""

    id: str
    name: str
    input: dict[str, Any]


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ToolResult:
    """The outcome of a tool call as fed back to the model. `content` is already serialised text."""

    tool_call_id: str
    name: str
    content: str
    is_error: bool = False


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ModelMessage:
    """One history entry. `role="tool"` carries `tool_results` answering the previous assistant message."""

    role: Literal["user", "assistant", "tool"]
    content: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    tool_results: tuple[ToolResult, ...] = ()
    attachments: tuple[Attachment, ...] = ()


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class Usage:
    """Token usage of one model turn, normalised across providers.

    `input_tokens` INCLUDES cache reads and writes (they are subsets of it, as OpenAI reports;
    the Anthropic adapter adds them back). `reasoning_tokens` is a subset of `output_tokens`.
    """

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    reasoning_tokens: int | None = None

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    def to_dict(self) -> dict[str, int]:
        """The stored form of a message's usage: `{input_tokens, output_tokens}` plus the cache and reasoning
        counts the provider reported (the web layer serves the keys in camelCase; `stored_usage` reads both)."""
        out = {"input_tokens": self.input_tokens, "output_tokens": self.output_tokens}
        if self.cache_read_tokens is not None:
            out["cache_read_tokens"] = self.cache_read_tokens
        if self.cache_write_tokens is not None:
            out["cache_write_tokens"] = self.cache_write_tokens
        if self.reasoning_tokens is not None:
            out["reasoning_tokens"] = self.reasoning_tokens
        return out

    def __add__(self, other: Usage) -> Usage:
        def add(a: int | None, b: int | None) -> int | None:
            return None if a is None and b is None else (a or 0) + (b or 0)

        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=add(self.cache_read_tokens, other.cache_read_tokens),
            cache_write_tokens=add(self.cache_write_tokens, other.cache_write_tokens),
            reasoning_tokens=add(self.reasoning_tokens, other.reasoning_tokens),
        )


class MessageSeq(Sequence[ModelMessage]):
    """A history followed by the messages added after it, read as one immutable sequence without copying the
    history: the loop's `ModelRequest.messages` (a long thread's step costs what a short one's does).

    `head` must not change while the sequence is in use (the loop never changes a run's loaded history).
    Compares equal to any sequence of the same messages; slicing and `+` give tuples."""

    __slots__ = ("_head", "_len", "_split", "_tail")

    def __init__(self, head: Sequence[ModelMessage], tail: tuple[ModelMessage, ...] = ()) -> None:
        self._head = head
        self._tail = tail
        self._split = len(head)
        self._len = self._split + len(tail)

    def __len__(self) -> int:
        return self._len

    @overload
    def __getitem__(self, index: int) -> ModelMessage: ...

    @overload
    def __getitem__(self, index: slice) -> tuple[ModelMessage, ...]: ...

    def __getitem__(self, index: int | slice) -> ModelMessage | tuple[ModelMessage, ...]:
        if isinstance(index, slice):
            return tuple(self)[index]
        i = index + self._len if index < 0 else index
        if not 0 <= i < self._len:
            raise IndexError("message index out of range")
        return self._head[i] if i < self._split else self._tail[i - self._split]

    def __iter__(self) -> Iterator[ModelMessage]:
        return itertools.chain(self._head, self._tail)

    def __reversed__(self) -> Iterator[ModelMessage]:
        return itertools.chain(reversed(self._tail), reversed(self._head))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(other) == self._len and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __add__(self, other: Sequence[ModelMessage]) -> tuple[ModelMessage, ...]:
        return (*self, *other)

    def __repr__(self) -> str:
        return f"MessageSeq({tuple(self)!r})"


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ModelRequest:
    """Everything one model turn needs. `model_id` is the agent's configured model id, if any.

    `messages` is a tuple, or (from the loop) a `MessageSeq`: iterate, index or slice it, never assume a tuple."""

    system: str
    messages: Sequence[ModelMessage]
    tools: tuple[ToolDefinition, ...] = ()
    model_id: str | None = None


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class ModelTurn:
    """What one model turn produced. The provider MUST NOT execute tools.

    `cost_usd` is set only when the provider itself reported a cost; otherwise the loop estimates it.
    """

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    usage: Usage = field(default_factory=Usage)
    model_id: str | None = None
    cost_usd: float | None = None


# A message's usage JSON as versions before the Python names stored it (camelCase) -> the Python names.
_LEGACY_USAGE_KEYS = {
    "inputTokens": "input_tokens",
    "outputTokens": "output_tokens",
    "cacheReadTokens": "cache_read_tokens",
    "cacheWriteTokens": "cache_write_tokens",
    "reasoningTokens": "reasoning_tokens",
    "costUsd": "cost_usd",
    "latencyMs": "latency_ms",
    "finishReason": "finish_reason",
}


def stored_usage(usage: Mapping[str, Any] | None) -> dict[str, Any] | None:
    """A stored message's usage JSON under Python names, whichever version wrote it (None stays None)."""
    if usage is None:
        return None
    return {_LEGACY_USAGE_KEYS.get(key, key): value for key, value in usage.items()}
