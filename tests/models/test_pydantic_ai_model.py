"""PydanticAIModel driving pydantic-ai's OpenAI and Anthropic models against the same fake servers."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import anthropic
import openai
import pytest
from fakes import (
    FakeProviderServer,
    an_text_block,
    an_tool_block,
    anthropic_reply,
    oa_tool_fragments,
    openai_error,
    openai_reply,
)
from pydantic_ai.models.anthropic import AnthropicModel as PaiAnthropicModel
from pydantic_ai.models.openai import OpenAIChatModel as PaiOpenAIChatModel
from pydantic_ai.providers.anthropic import AnthropicProvider
from pydantic_ai.providers.openai import OpenAIProvider
from test_openai_model import FAST_RETRY, WEATHER, Collector, ask

from agora_agent.errors import ConfigurationError, ModelError
from agora_agent.messages import Attachment, ModelMessage, ModelRequest, ToolCall, ToolResult, Usage
from agora_agent.models import PydanticAIModel


@pytest.fixture
async def model(fake_server: FakeProviderServer) -> AsyncIterator[PydanticAIModel]:
    client = openai.AsyncOpenAI(base_url=fake_server.openai_base_url, api_key="test", max_retries=0)
    yield PydanticAIModel(
        PaiOpenAIChatModel("gpt-4o-mini", provider=OpenAIProvider(openai_client=client)), retry=FAST_RETRY
    )
    await client.close()


@pytest.fixture
async def claude(fake_server: FakeProviderServer) -> AsyncIterator[PydanticAIModel]:
    client = anthropic.AsyncAnthropic(base_url=fake_server.origin, api_key="test", max_retries=0)
    yield PydanticAIModel(
        PaiAnthropicModel("claude-fake-1", provider=AnthropicProvider(anthropic_client=client)), retry=FAST_RETRY
    )
    await client.close()


@pytest.mark.ref("ARCH-02", "COST-10")
async def test_text_deltas_and_usage_through_openai(fake_server: FakeProviderServer, model: PydanticAIModel) -> None:
    fake_server.queue(openai_reply(text=["Let ", "me ", "check."]))
    out = Collector()
    turn = await model.run_turn(ask(), out)
    assert "".join(out.deltas) == "Let me check."
    assert out.deltas[-1] == "check."
    assert turn.text == "Let me check."
    assert turn.usage == Usage(
        input_tokens=120, output_tokens=15, cache_read_tokens=100, cache_write_tokens=7, reasoning_tokens=4
    )
    assert turn.model_id == "gpt-4o-mini"
    assert turn.cost_usd is None  # pydantic-ai's genai-prices estimate is not a provider-reported cost
    assert fake_server.requests[0].body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Paris?"},
    ]


@pytest.mark.ref("ARCH-02")
async def test_split_and_parallel_tool_calls_through_openai(
    fake_server: FakeProviderServer, model: PydanticAIModel
) -> None:
    a = oa_tool_fragments(0, "call_a", "get_weather", json.dumps({"city": "Paris", "days": 3}), 9)
    b = oa_tool_fragments(1, "call_b", "get_weather", '{"city": "Oslo"}', 4)
    fake_server.queue(openai_reply(text=["Checking."], tools=[a, b]))
    turn = await model.run_turn(ask(tools=(WEATHER,)), Collector())
    assert turn.text == "Checking."
    assert turn.tool_calls == (
        ToolCall(id="call_a", name="get_weather", input={"city": "Paris", "days": 3}),
        ToolCall(id="call_b", name="get_weather", input={"city": "Oslo"}),
    )
    tools = fake_server.requests[0].body["tools"]
    assert [t["function"]["name"] for t in tools] == ["get_weather"]


async def test_rate_limit_then_success(fake_server: FakeProviderServer, model: PydanticAIModel) -> None:
    fake_server.queue(openai_error(429, "Rate limit reached"), openai_reply(text=["ok"]))
    turn = await model.run_turn(ask(), Collector())
    assert turn.text == "ok"
    assert len(fake_server.requests) == 2  # pydantic-ai's own SDK retries are off


async def test_bad_request_is_surfaced(fake_server: FakeProviderServer, model: PydanticAIModel) -> None:
    fake_server.queue(openai_error(400, "Invalid value for 'tools'"))
    with pytest.raises(ModelError) as info:
        await model.run_turn(ask(), Collector())
    assert info.value.status == 400
    assert "Invalid value for 'tools'" in str(info.value)
    assert len(fake_server.requests) == 1


async def test_cancellation_mid_stream_closes_the_connection(
    fake_server: FakeProviderServer, model: PydanticAIModel
) -> None:
    fake_server.queue(openai_reply(text=["one ", "two "], hang=True))
    out = Collector()
    task = asyncio.create_task(model.run_turn(ask(), out))
    await asyncio.wait_for(out.first.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(fake_server.disconnected.wait(), 5)


@pytest.mark.ref("ATT-06")
async def test_attachments_and_tool_history_replay(fake_server: FakeProviderServer, model: PydanticAIModel) -> None:
    fake_server.queue(openai_reply(text=["Sunny."]))
    image = Attachment(media_id="m1", url="https://cdn.example/cat.png", content_type="image/png", name="cat.png")
    pdf = Attachment(
        media_id="m2", url="data:application/pdf;base64,JVBERi0=", content_type="application/pdf", name="a.pdf"
    )
    request = ModelRequest(
        system="sys",
        messages=(
            ModelMessage(role="user", content="Describe", attachments=(image, pdf)),
            ModelMessage(
                role="assistant",
                content="Checking.",
                tool_calls=(ToolCall(id="c1", name="get_weather", input={"city": "Paris"}),),
            ),
            ModelMessage(
                role="tool", tool_results=(ToolResult(tool_call_id="c1", name="get_weather", content="sunny"),)
            ),
        ),
        tools=(WEATHER,),
    )
    await model.run_turn(request, Collector())
    messages = fake_server.requests[0].body["messages"]
    assert messages[0] == {"role": "system", "content": "sys"}
    user = messages[1]["content"]
    assert user[0] == {"type": "text", "text": "Describe"}
    assert user[1]["type"] == "image_url" and user[1]["image_url"]["url"] == "https://cdn.example/cat.png"
    assert user[2]["type"] == "file" and user[2]["file"]["file_data"] == "data:application/pdf;base64,JVBERi0="
    assert messages[2]["role"] == "assistant"
    assert messages[2]["content"] == "Checking."
    assert messages[2]["tool_calls"][0]["id"] == "c1"
    assert json.loads(messages[2]["tool_calls"][0]["function"]["arguments"]) == {"city": "Paris"}
    assert messages[3] == {"role": "tool", "tool_call_id": "c1", "content": "sunny"}


async def test_anthropic_through_pydantic_ai(fake_server: FakeProviderServer, claude: PydanticAIModel) -> None:
    fake_server.queue(
        anthropic_reply(
            blocks=[an_text_block(0, ["Checking."]), an_tool_block(1, "toolu_1", "get_weather", '{"city": "Paris"}', 5)]
        )
    )
    out = Collector()
    turn = await claude.run_turn(ask(tools=(WEATHER,)), out)
    assert "".join(out.deltas) == "Checking."
    assert turn.tool_calls == (ToolCall(id="toolu_1", name="get_weather", input={"city": "Paris"}),)
    assert turn.usage == Usage(input_tokens=127, output_tokens=15, cache_read_tokens=100, cache_write_tokens=7)
    assert fake_server.requests[0].path == "/v1/messages"


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigurationError) as missing:
        PydanticAIModel("anthropic:claude-fake-1")
    assert missing.value.code == "missing_api_key" and "ANTHROPIC_API_KEY" in str(missing.value)


def test_unknown_model_and_missing_provider_package_are_configuration_errors(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("GOOGLE_API_KEY", "GEMINI_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    with pytest.raises(ConfigurationError) as unknown:
        PydanticAIModel("nope:model")
    assert unknown.value.code == "invalid_model"
    # the old "google-gla" spelling resolves to pydantic-ai's "google" provider: its package or its key is missing
    with pytest.raises(ConfigurationError) as google:
        PydanticAIModel("google-gla:gemini-2.5-flash")
    assert google.value.code in ("missing_extra", "missing_api_key")
    assert "pydantic-ai-slim[google]" in str(google.value) or "GOOGLE_API_KEY" in str(google.value)
