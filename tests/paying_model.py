"""The scripted model the kill tests' child processes run: turn 0 asks to pay, turn 1 answers."""

from __future__ import annotations

import random
from collections.abc import Awaitable, Callable

from agora_agent.messages import ModelRequest, ModelTurn, ToolCall, Usage
from agora_agent.models.base import TextCallback


class PayingModel:
    """Each call first `think`s (a moment, maybe streamed words), then turn 0 asks to pay a random amount
    and turn 1 answers "done". The amounts come from `rng`, so a child's seed fixes its sequence."""

    def __init__(self, model_id: str, rng: random.Random, think: Callable[[TextCallback], Awaitable[None]]) -> None:
        self.model_id = model_id
        self.rng = rng
        self.think = think

    async def run_turn(self, request: ModelRequest, on_text: TextCallback) -> ModelTurn:
        await self.think(on_text)
        if request.messages[-1].role == "user":
            amount = self.rng.randint(1, 100)
            return ModelTurn(
                text="",
                tool_calls=(ToolCall(id=f"pay-{amount}", name="pay", input={"amount": amount}),),
                usage=Usage(input_tokens=10, output_tokens=5),
            )
        await on_text("done")
        return ModelTurn(text="done", usage=Usage(input_tokens=20, output_tokens=4))
