"""What observability costs per run: the governed loop on the memory store with (a) no tracer or meter provider
(the default: events are only logged), (b) an SDK TracerProvider + MeterProvider exporting to memory, (c) (b) plus
an `on_event` handler. Ratios to (a), measured in interleaved rounds on one box (neighbours' load hits all alike);
the printed figure is the median ratio over rounds with the min–max spread.

Each run is K tool-calling model steps (a read tool) plus one final text step, scripted model, no network.

    .venv/bin/python bench/telemetry.py [--rounds 9] [--runs 20] [--steps 4]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Callable
from typing import Any

from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agora_agent import Actor, AgentConfig, AgentService, tool
from agora_agent.messages import ModelRequest
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest
from agora_agent.testing.helpers import OBSERVER

ACTOR = Actor("bench", roles=("user",))


@tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def script(steps: int) -> Callable[[ModelRequest, int], ScriptedTurn]:
    def turn(request: ModelRequest, i: int) -> ScriptedTurn:
        if i < steps:
            return ScriptedTurn(text="", tool_calls=[ToolCallRequest(name="add", input={"a": i, "b": 1})])
        return ScriptedTurn(text="done")

    return turn


def config(case: str, steps: int) -> AgentConfig:
    kwargs: dict[str, Any] = {}
    if case != "off":
        tp = TracerProvider()
        tp.add_span_processor(SimpleSpanProcessor(InMemorySpanExporter()))
        kwargs.update(tracer_provider=tp, meter_provider=MeterProvider(metric_readers=[InMemoryMetricReader()]))
    if case == "otel+events":
        seen: list[object] = []
        kwargs["on_event"] = seen.append
    return AgentConfig(model=FakeModel(script(steps)), tools=[add], max_steps=steps + 2, **kwargs)


async def timed(service: AgentService, runs: int) -> float:
    started = time.perf_counter()
    for _ in range(runs):
        chat = await service.chat(ACTOR, "go")
        await service.wait_for_run(OBSERVER, chat.run_id)
    return (time.perf_counter() - started) / runs


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=9)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--steps", type=int, default=4)
    args = parser.parse_args()
    cases = ["off", "otel", "otel+events"]
    services = {c: AgentService.from_config(config(c, args.steps)) for c in cases}
    for s in services.values():
        await s.start()
        await timed(s, 3)  # warm-up
    per_run: dict[str, list[float]] = {c: [] for c in cases}
    for r in range(args.rounds):
        for c in cases[r % len(cases) :] + cases[: r % len(cases)]:
            per_run[c].append(await timed(services[c], args.runs))
    for s in services.values():
        await s.close()
    base = per_run["off"]
    print(f"{args.steps} tool steps + 1 answer per run, {args.runs} runs x {args.rounds} rounds, memory store")
    print(f"{'case':<14}{'ms/run (median)':>18}{'ratio to off':>16}{'spread':>18}")
    for c in cases:
        ratios = [x / b for x, b in zip(per_run[c], base, strict=True)]
        print(
            f"{c:<14}{statistics.median(per_run[c]) * 1000:>18.2f}{statistics.median(ratios):>16.2f}"
            f"{f'{min(ratios):.2f}-{max(ratios):.2f}':>18}"
        )


if __name__ == "__main__":
    asyncio.run(main())
