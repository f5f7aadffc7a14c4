"""A full governed loop turn (tool call -> result -> final text) through each adapter and its fake server."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import openai
import pytest
from fakes import (
    FakeProviderServer,
    Reply,
    an_text_block,
    an_tool_block,
    anthropic_reply,
    oa_tool_fragments,
    openai_reply,
)
from pydantic_ai.models.openai import OpenAIChatModel as PaiOpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from test_openai_model import FAST_RETRY

from agora_agent import Actor, AgentConfig, AgentService, ToolContext, tool
from agora_agent.models import AnthropicModel, ModelProvider, OpenAIChatModel, PydanticAIModel
from agora_agent.testing import collect_frames
from agora_agent.testing.helpers import OBSERVER

ALICE = Actor("alice", roles=("member",))


@tool
async def get_weather(city: str, ctx: ToolContext) -> dict[str, Any]:
    """Current weather for a city."""
    return {"city": city, "sky": "sunny", "asked_by": ctx.actor.id}


def openai_turns() -> list[Reply]:
    call = oa_tool_fragments(0, "call_1", "get_weather", '{"city": "Paris"}', 5)
    return [openai_reply(text=["Let me check. "], tools=[call]), openai_reply(text=["Sunny ", "in Paris."])]


def anthropic_turns() -> list[Reply]:
    return [
        anthropic_reply(
            blocks=[
                an_text_block(0, ["Let me check. "]),
                an_tool_block(1, "call_1", "get_weather", '{"city": "Paris"}', 5),
            ]
        ),
        anthropic_reply(blocks=[an_text_block(0, ["Sunny ", "in Paris."])]),
    ]


async def openai_adapter(server: FakeProviderServer, closers: list[Any]) -> ModelProvider:
    adapter = OpenAIChatModel("gpt-4o-mini", base_url=server.openai_base_url, retry=FAST_RETRY)
    closers.append(adapter.aclose)
    return adapter


async def anthropic_adapter(server: FakeProviderServer, closers: list[Any]) -> ModelProvider:
    adapter = AnthropicModel("claude-fake-1", base_url=server.origin, retry=FAST_RETRY)
    closers.append(adapter.aclose)
    return adapter


async def pydantic_ai_adapter(server: FakeProviderServer, closers: list[Any]) -> ModelProvider:
    client = openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="test", max_retries=0)
    closers.append(client.close)
    return PydanticAIModel(PaiOpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client)))


CASES: dict[str, tuple[Callable[..., Any], Callable[[], list[Reply]]]] = {
    "openai": (openai_adapter, openai_turns),
    "anthropic": (anthropic_adapter, anthropic_turns),
    "pydantic-ai": (pydantic_ai_adapter, openai_turns),
}


@pytest.fixture(params=list(CASES))
async def service(request: pytest.FixtureRequest, fake_server: FakeProviderServer) -> AsyncIterator[AgentService]:
    build, turns = CASES[request.param]
    closers: list[Any] = []
    fake_server.queue(*turns())
    model = await build(fake_server, closers)
    async with AgentService.from_config(AgentConfig(model=model, tools=[get_weather])) as svc:
        yield svc
    for close in closers:
        await close()


@pytest.mark.ref("ARCH-02", "ARCH-LOOP-14")
async def test_tool_call_result_and_final_text(service: AgentService, fake_server: FakeProviderServer) -> None:
    started = await service.chat(ALICE, "Weather in Paris?")
    frames = await collect_frames(service, started.run_id)
    run = await service.wait_for_run(OBSERVER, started.run_id)
    assert run.status == "completed", run.error
    assert frames.text == "Let me check. Sunny in Paris."
    assert frames.statuses("call_1")[-1] == "executed"
    assert run.step_count == 2
    assert run.input_tokens > 0 and run.output_tokens > 0
    # The second request replays the assistant's tool call and the tool's result.
    second = fake_server.requests[1].body["messages"]
    replay = json.dumps(second)
    assert '"call_1"' in replay and "sunny" in replay and "alice" in replay
    assert len(fake_server.requests) == 2


async def test_a_later_chat_replays_the_persisted_tool_exchange(
    service: AgentService, fake_server: FakeProviderServer, request: pytest.FixtureRequest
) -> None:
    first = await service.chat(ALICE, "Weather in Paris?")
    assert (await service.wait_for_run(OBSERVER, first.run_id)).status == "completed"
    is_anthropic = "anthropic" in request.node.callspec.id
    fake_server.queue(anthropic_turns()[1] if is_anthropic else openai_turns()[1])
    second = await service.chat(ALICE, "And tomorrow?", thread_id=first.thread_id)
    run = await service.wait_for_run(OBSERVER, second.run_id)
    assert run.status == "completed", run.error
    replay = json.dumps(fake_server.requests[2].body["messages"])
    assert (
        replay.index("Weather in Paris?")
        < replay.index("call_1")
        < replay.index("sunny")
        < replay.index("And tomorrow?")
    )
