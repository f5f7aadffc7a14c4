"""Adapter overhead per streamed turn vs calling the vendor SDK directly, same fake server, same run.

Each turn streams `--deltas` text deltas and one tool call whose arguments arrive in 8 fragments,
then usage, from the fake provider server of the test suite (real HTTP on 127.0.0.1). "SDK" is the
minimum a caller must do with the SDK alone: open the stream, read every chunk, join the text and
the tool-call fragments. "adapter" is `run_turn` (history mapping, fragment assembly, usage/cost
normalisation, retry wrapper, one `on_text` await per delta). Rounds alternate SDK and adapter so
drift hits both alike.

    .venv/bin/python bench/models.py [--turns 300] [--deltas 40]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
from pydantic_ai import messages as pai
from pydantic_ai.direct import model_request_stream
from pydantic_ai.models import ModelRequestParameters
from pydantic_ai.models.openai import OpenAIChatModel as PaiOpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.tools import ToolDefinition as PaiToolDefinition

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests" / "models"))

from fakes import (
    FakeProviderServer,
    an_text_block,
    an_tool_block,
    anthropic_reply,
    oa_tool_fragments,
    openai_reply,
)

from agora_agent.messages import ModelMessage, ModelRequest, ToolDefinition
from agora_agent.models import AnthropicModel, OpenAIChatModel, PydanticAIModel

SCHEMA = {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}
REQUEST = ModelRequest(
    system="You are terse.",
    messages=(ModelMessage(role="user", content="Weather in Paris?"),),
    tools=(ToolDefinition(name="get_weather", description="Weather", input_schema=SCHEMA),),
)
ARGS = '{"city": "Paris", "unit": "celsius", "days": 3}'


async def sink(delta: str) -> None:
    return None


async def time_turns(fn: Callable[[], Awaitable[Any]], n: int) -> list[float]:
    out = []
    for _ in range(n):
        start = time.perf_counter()
        await fn()
        out.append(time.perf_counter() - start)
    return out


async def compare(
    label: str, sdk: Callable[[], Awaitable[Any]], adapter: Callable[[], Awaitable[Any]], turns: int
) -> None:
    for _ in range(20):  # warm connections, imports and caches
        await sdk()
        await adapter()
    sdk_t: list[float] = []
    ada_t: list[float] = []
    rounds = 10
    for _ in range(rounds):
        sdk_t += await time_turns(sdk, turns // rounds)
        ada_t += await time_turns(adapter, turns // rounds)
    s, a = statistics.median(sdk_t) * 1e3, statistics.median(ada_t) * 1e3
    print(
        f"{label:<12} SDK {s:7.3f} ms/turn   adapter {a:7.3f} ms/turn   "
        f"overhead {(a - s) * 1e3:+7.1f} µs   ratio {a / s:5.3f}"
    )


async def main(turns: int, deltas: int) -> None:
    words = [f"w{i} " for i in range(deltas)]
    async with FakeProviderServer() as server:
        # --- OpenAI Chat Completions ---
        server.default = openai_reply(text=words, tools=[oa_tool_fragments(0, "call_1", "get_weather", ARGS, 8)])
        client = openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="x", max_retries=0)
        ours = OpenAIChatModel("gpt-4o-mini", client=client)
        params = ours.request_params(REQUEST)

        async def openai_sdk() -> tuple[str, str]:
            text, args = [], []
            stream = await client.chat.completions.create(**params)
            async with stream:
                async for chunk in stream:
                    for choice in chunk.choices:
                        if choice.delta.content:
                            text.append(choice.delta.content)
                            await sink(choice.delta.content)
                        for tc in choice.delta.tool_calls or ():
                            if tc.function and tc.function.arguments:
                                args.append(tc.function.arguments)
            return "".join(text), "".join(args)

        await compare("openai", openai_sdk, lambda: ours.run_turn(REQUEST, sink), turns)

        # --- pydantic-ai (its OpenAIChatModel) ---
        pai_model = PaiOpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client))
        bridge = PydanticAIModel(pai_model)
        pai_messages: list[pai.ModelMessage] = [
            pai.ModelRequest(
                parts=[pai.SystemPromptPart(content="You are terse."), pai.UserPromptPart("Weather in Paris?")]
            )
        ]
        pai_params = ModelRequestParameters(
            function_tools=[PaiToolDefinition(name="get_weather", description="Weather", parameters_json_schema=SCHEMA)]
        )

        async def pydantic_ai_direct() -> pai.ModelResponse:
            async with model_request_stream(
                pai_model, pai_messages, model_request_parameters=pai_params, model_settings={"max_retries": 0}
            ) as stream:
                async for event in stream:
                    if isinstance(event, pai.PartDeltaEvent) and isinstance(event.delta, pai.TextPartDelta):
                        await sink(event.delta.content_delta)
                return stream.get()

        await compare("pydantic-ai", pydantic_ai_direct, lambda: bridge.run_turn(REQUEST, sink), turns)
        await client.close()

        # --- Anthropic Messages ---
        server.default = anthropic_reply(
            blocks=[an_text_block(0, words), an_tool_block(1, "toolu_1", "get_weather", ARGS, 8)]
        )
        aclient = anthropic.AsyncAnthropic(base_url=server.origin, api_key="x", max_retries=0)
        claude = AnthropicModel("claude-fake-1", client=aclient)
        aparams = claude.request_params(REQUEST)

        async def anthropic_sdk() -> tuple[str, str]:
            text, args = [], []
            stream = await aclient.messages.create(**aparams)
            async with stream:
                async for event in stream:
                    if event.type == "content_block_delta":
                        if event.delta.type == "text_delta":
                            text.append(event.delta.text)
                            await sink(event.delta.text)
                        elif event.delta.type == "input_json_delta":
                            args.append(event.delta.partial_json)
            return "".join(text), "".join(args)

        await compare("anthropic", anthropic_sdk, lambda: claude.run_turn(REQUEST, sink), turns)
        await aclient.close()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=300)
    parser.add_argument("--deltas", type=int, default=40)
    args = parser.parse_args()
    print(f"{args.turns} turns per side, {args.deltas} text deltas + 1 tool call (8 fragments) per turn, median")
    asyncio.run(main(args.turns, args.deltas))
