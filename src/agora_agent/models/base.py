"""The model-provider protocol: one streamed model turn, no tool execution."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Protocol, runtime_checkable

from agora_agent.messages import ModelRequest, ModelTurn

__all__ = ["ModelProvider", "TextCallback"]

TextCallback = Callable[[str], Awaitable[None]]
"""Receives each text delta as it streams; the loop forwards it to the run's stream."""


@runtime_checkable
class ModelProvider(Protocol):
    """Runs one model turn.

    Contract:
    - stream every text delta through `on_text` in order, then return the whole turn;
    - return tool calls, never execute them;
    - raise `agora_agent.errors.ModelError` for provider failures (vendor exceptions never escape);
    - honour asyncio cancellation promptly (close the HTTP request).

    `model_id` names the model for pricing when a turn does not report one.
    """

    model_id: str | None

    async def run_turn(self, request: ModelRequest, on_text: TextCallback) -> ModelTurn: ...
