"""Governed-loop overhead per model step: agora-agent vs a bare loop vs Pydantic AI, same script, one run.

Each run is K tool-calling model steps (tool `add(a, b)`) plus one final text step, with a scripted
model and no network. It runs twice: with a sync tool (each framework hops to a worker thread
per call, ~100-170 µs here, the same for both) and with an async tool (the frameworks' own overhead).
Ours runs through AgentService on the in-memory store: offer/authorize filter chain, audit rows,
stream frames, usage ledger, budget reservation — everything a real turn does.

    .venv/bin/python bench/loop.py [--runs 200] [--steps 5]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from pydantic import BaseModel

from agora_agent import Actor, AgentConfig, AgentService, Budget, tool
from agora_agent.messages import ModelRequest
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(name="add")
async def add_async(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def make_script(steps: int) -> Callable[[ModelRequest, int], ScriptedTurn]:
    def script(request: ModelRequest, i: int) -> ScriptedTurn:
        if i < steps:
            return ScriptedTurn(text="", tool_calls=[ToolCallRequest(name="add", input={"a": i, "b": 1})])
        return ScriptedTurn(text="done")

    return script


async def ours(runs: int, steps: int, sync_tool: bool = True) -> list[float]:
    config = AgentConfig(
        model=FakeModel(make_script(steps)),
        tools=[add if sync_tool else add_async],
        budget=Budget(tokens_per_actor=10**12),
    )
    actor = Actor("bench", roles=("user",))
    times: list[float] = []
    async with AgentService.from_config(config) as service:
        for _ in range(runs):
            t0 = time.perf_counter()
            started = await service.chat(actor, "add things")
            await service.wait_for_run(started.run_id)
            times.append((time.perf_counter() - t0) / (steps + 1))
    return times


class AddArgs(BaseModel):
    a: int
    b: int


async def bare(runs: int, steps: int, sync_tool: bool = True) -> list[float]:
    """A hand-written loop: a scripted model, pydantic-validated args, a list of dict messages."""

    async def model(messages: list[dict[str, Any]]) -> dict[str, Any]:
        i = sum(1 for m in messages if m["role"] == "assistant")
        if i < steps:
            return {"role": "assistant", "tool": {"name": "add", "args": {"a": i, "b": 1}}}
        return {"role": "assistant", "text": "done"}

    times: list[float] = []
    for _ in range(runs):
        t0 = time.perf_counter()
        messages: list[dict[str, Any]] = [{"role": "user", "text": "add things"}]
        for _step in range(steps + 1):
            reply = await model(messages)
            messages.append(reply)
            if "tool" not in reply:
                break
            args = AddArgs.model_validate(reply["tool"]["args"])
            messages.append({"role": "tool", "result": args.a + args.b})
        times.append((time.perf_counter() - t0) / (steps + 1))
    return times


async def pydantic_ai(runs: int, steps: int, sync_tool: bool = True) -> list[float]:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def fn(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        i = sum(1 for m in messages if isinstance(m, ModelResponse))
        if i < steps:
            return ModelResponse(parts=[ToolCallPart(tool_name="add", args={"a": i, "b": 1})])
        return ModelResponse(parts=[TextPart(content="done")])

    agent: Agent[None, str] = Agent(FunctionModel(fn))

    if sync_tool:

        @agent.tool_plain
        def add(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

    else:

        @agent.tool_plain(name="add")
        async def add_async(a: int, b: int) -> int:
            """Add two integers."""
            return a + b

    times: list[float] = []
    for _ in range(runs):
        t0 = time.perf_counter()
        await agent.run("add things")
        times.append((time.perf_counter() - t0) / (steps + 1))
    return times


async def measure(fn: Callable[[int, int, bool], Awaitable[list[float]]], runs: int, steps: int, sync: bool) -> float:
    await fn(max(runs // 10, 5), steps, sync)  # warm-up
    per_step = await fn(runs, steps, sync)
    return statistics.median(per_step) * 1e6


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=200)
    parser.add_argument("--steps", type=int, default=5, help="tool-calling steps per run (plus one final step)")
    args = parser.parse_args()
    print(f"median µs per model step ({args.runs} runs × {args.steps + 1} steps)")
    for sync in (True, False):
        results = {
            "bare loop": await measure(bare, args.runs, args.steps, sync),
            "agora-agent (governed, memory store)": await measure(ours, args.runs, args.steps, sync),
            "pydantic-ai Agent + FunctionModel": await measure(pydantic_ai, args.runs, args.steps, sync),
        }
        ours_us = results["agora-agent (governed, memory store)"]
        print(f"{'sync' if sync else 'async'} tool:")
        for name, us in results.items():
            print(f"  {name:<40} {us:10.1f} µs")
        ratio = ours_us / results["pydantic-ai Agent + FunctionModel"]
        print(f"  ratio ours / pydantic-ai : {ratio:.3f}  (target ≤ 0.1)")


if __name__ == "__main__":
    asyncio.run(main())
