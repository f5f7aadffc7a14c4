"""`FakeModel`: a scripted, deterministic model for tests and offline demos."""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from agora_agent.messages import ModelRequest, ModelTurn, ToolCall, Usage
from agora_agent.models.base import TextCallback

__all__ = ["FakeModel", "ScriptedTurn", "ToolCallRequest", "echo_script", "sequence_script"]


@dataclass(frozen=True, slots=True)
class ToolCallRequest:
    """A tool call the script asks for; `id` defaults to `call-<turn>-<name>` (suffixed when repeated)."""

    name: str
    input: dict[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class ScriptedTurn:
    """One scripted model turn. `usage` defaults to the reference's (messages in, characters out)."""

    text: str = ""
    tool_calls: Sequence[ToolCallRequest] = ()
    usage: Usage | None = None
    cost_usd: float | None = None
    model_id: str | None = None


Script = Callable[[ModelRequest, int], ScriptedTurn]
"""`(request, turn_index) -> ScriptedTurn`; turn_index = assistant messages already in the history."""

_WORDS = re.compile(r"\S+\s*|\s+")


class FakeModel:
    """Plays a script. Pure: the turn index comes from the history, so a replay gets the same turn.

    Text streams as several deltas (one per word) so streaming code sees realistic frames.
    `requests` records every request received, for assertions.
    """

    def __init__(self, script: Script, *, model_id: str | None = "fake-model") -> None:
        self._script = script
        self.model_id = model_id
        self.requests: list[ModelRequest] = []

    async def run_turn(self, request: ModelRequest, on_text: TextCallback) -> ModelTurn:
        self.requests.append(request)
        turn_index = sum(1 for m in request.messages if m.role == "assistant")
        scripted = self._script(request, turn_index)
        for chunk in _WORDS.findall(scripted.text):
            await on_text(chunk)
        calls: list[ToolCall] = []
        seen: dict[str, int] = {}
        for req in scripted.tool_calls:
            n = seen.get(req.name, 0)
            seen[req.name] = n + 1
            call_id = req.id or (f"call-{turn_index}-{req.name}" + (f"-{n}" if n else ""))
            calls.append(ToolCall(id=call_id, name=req.name, input=dict(req.input)))
        usage = scripted.usage or Usage(input_tokens=len(request.messages), output_tokens=len(scripted.text))
        return ModelTurn(
            text=scripted.text,
            tool_calls=tuple(calls),
            usage=usage,
            model_id=scripted.model_id,
            cost_usd=scripted.cost_usd,
        )


def echo_script(reply: str = "ok") -> Script:
    """A script that always answers `reply`."""

    def script(request: ModelRequest, turn_index: int) -> ScriptedTurn:
        return ScriptedTurn(text=reply)

    return script


def sequence_script(*turns: ScriptedTurn) -> Script:
    """A script that plays `turns` in order by turn index, repeating the last one when exhausted."""
    if not turns:
        raise ValueError("sequence_script needs at least one turn")

    def script(request: ModelRequest, turn_index: int) -> ScriptedTurn:
        return turns[min(turn_index, len(turns) - 1)]

    return script
