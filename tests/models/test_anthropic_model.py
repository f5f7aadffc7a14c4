"""AnthropicModel against the fake Messages server (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator

import pytest
from fakes import (
    FakeProviderServer,
    Reply,
    an_event,
    an_text_block,
    an_tool_block,
    anthropic_error,
    anthropic_reply,
)
from test_openai_model import FAST_RETRY, WEATHER, Collector, ask

from agora_agent.errors import ConfigurationError, ModelError
from agora_agent.messages import Attachment, ModelMessage, ModelRequest, ToolCall, ToolResult, Usage
from agora_agent.models import AnthropicModel


@pytest.fixture
async def model(fake_server: FakeProviderServer) -> AsyncIterator[AnthropicModel]:
    adapter = AnthropicModel("claude-fake-1", base_url=fake_server.origin, retry=FAST_RETRY, max_tokens=512)
    yield adapter
    await adapter.aclose()


@pytest.mark.ref("ARCH-02", "COST-10")
async def test_text_deltas_and_usage_include_cache_tokens(
    fake_server: FakeProviderServer, model: AnthropicModel
) -> None:
    fake_server.queue(anthropic_reply(blocks=[an_text_block(0, ["Let ", "me ", "check."])]))
    out = Collector()
    turn = await model.run_turn(ask(), out)
    assert out.deltas == ["Let ", "me ", "check."]
    assert turn.text == "Let me check."
    # Anthropic's input_tokens (20) excludes cache reads (100) and writes (7); ours includes them.
    assert turn.usage == Usage(input_tokens=127, output_tokens=15, cache_read_tokens=100, cache_write_tokens=7)
    assert turn.model_id == "claude-fake-1"
    assert turn.cost_usd is None
    sent = fake_server.requests[0]
    assert sent.path == "/v1/messages"
    assert sent.body["system"] == "You are terse."
    assert sent.body["max_tokens"] == 512
    assert sent.body["stream"] is True
    assert sent.body["messages"] == [{"role": "user", "content": "Weather in Paris?"}]


@pytest.mark.ref("ARCH-02")
async def test_tool_use_split_across_many_chunks(fake_server: FakeProviderServer, model: AnthropicModel) -> None:
    args = json.dumps({"city": "Paris", "unit": "celsius", "days": 3})
    fake_server.queue(
        anthropic_reply(blocks=[an_text_block(0, ["Checking."]), an_tool_block(1, "toolu_1", "get_weather", args, 15)])
    )
    turn = await model.run_turn(ask(tools=(WEATHER,)), Collector())
    assert turn.text == "Checking."
    assert turn.tool_calls == (
        ToolCall(id="toolu_1", name="get_weather", input={"city": "Paris", "unit": "celsius", "days": 3}),
    )
    assert fake_server.requests[0].body["tools"] == [
        {"name": "get_weather", "description": WEATHER.description, "input_schema": WEATHER.input_schema}
    ]


async def test_two_parallel_tool_uses(fake_server: FakeProviderServer, model: AnthropicModel) -> None:
    fake_server.queue(
        anthropic_reply(
            blocks=[
                an_tool_block(0, "toolu_a", "get_weather", '{"city": "Paris"}', 3),
                an_tool_block(1, "toolu_b", "get_weather", '{"city": "Oslo"}', 3),
            ]
        )
    )
    turn = await model.run_turn(ask(tools=(WEATHER,)), Collector())
    assert turn.tool_calls == (
        ToolCall(id="toolu_a", name="get_weather", input={"city": "Paris"}),
        ToolCall(id="toolu_b", name="get_weather", input={"city": "Oslo"}),
    )


async def test_overloaded_then_success_is_retried(fake_server: FakeProviderServer, model: AnthropicModel) -> None:
    fake_server.queue(
        anthropic_error(529, "Overloaded", "overloaded_error"),
        anthropic_error(429, "Number of requests has exceeded your rate limit", "rate_limit_error"),
        anthropic_reply(blocks=[an_text_block(0, ["ok"])]),
    )
    turn = await model.run_turn(ask(), Collector())
    assert turn.text == "ok"
    assert len(fake_server.requests) == 3


async def test_error_event_before_any_text_is_retried(fake_server: FakeProviderServer, model: AnthropicModel) -> None:
    error = an_event("error", {"error": {"type": "overloaded_error", "message": "Overloaded"}})
    fake_server.queue(Reply(events=[error]), anthropic_reply(blocks=[an_text_block(0, ["ok"])]))
    turn = await model.run_turn(ask(), Collector())
    assert turn.text == "ok"
    assert len(fake_server.requests) == 2


async def test_bad_request_is_surfaced_with_the_provider_message(
    fake_server: FakeProviderServer, model: AnthropicModel
) -> None:
    fake_server.queue(anthropic_error(400, "messages.0.content: Input should be a valid list"))
    with pytest.raises(ModelError) as info:
        await model.run_turn(ask(), Collector())
    assert info.value.status == 400
    assert "messages.0.content: Input should be a valid list" in str(info.value)
    assert len(fake_server.requests) == 1


async def test_cancellation_mid_stream_closes_the_connection(
    fake_server: FakeProviderServer, model: AnthropicModel
) -> None:
    fake_server.queue(anthropic_reply(blocks=[an_text_block(0, ["one ", "two "])[:2]], hang=True))
    out = Collector()
    task = asyncio.create_task(model.run_turn(ask(), out))
    await asyncio.wait_for(out.first.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await asyncio.wait_for(fake_server.disconnected.wait(), 5)


@pytest.mark.ref("ATT-06")
async def test_attachments_and_tool_history_map_to_blocks(
    fake_server: FakeProviderServer, model: AnthropicModel
) -> None:
    fake_server.queue(anthropic_reply(blocks=[an_text_block(0, ["Sunny."])]))
    png = Attachment(media_id="m1", url="data:image/png;base64,iVBORw0=", content_type="image/png", name="a.png")
    remote = Attachment(media_id="m2", url="https://cdn.example/cat.jpg", content_type="image/jpeg", name="cat.jpg")
    pdf = Attachment(media_id="m3", url="https://cdn.example/r.pdf", content_type="application/pdf", name="r.pdf")
    txt = Attachment(media_id="m4", url="data:text/plain;base64,aGVsbG8=", content_type="text/plain", name="n.txt")
    request = ModelRequest(
        system="",
        messages=(
            ModelMessage(role="user", content="Look", attachments=(png, remote, pdf, txt)),
            ModelMessage(
                role="assistant", tool_calls=(ToolCall(id="toolu_1", name="get_weather", input={"city": "Paris"}),)
            ),
            ModelMessage(
                role="tool",
                tool_results=(ToolResult(tool_call_id="toolu_1", name="get_weather", content="boom", is_error=True),),
            ),
            ModelMessage(role="user", content="And now?"),
        ),
    )
    await model.run_turn(request, Collector())
    body = fake_server.requests[0].body
    assert "system" not in body
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Look"},
                {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0="}},
                {"type": "image", "source": {"type": "url", "url": "https://cdn.example/cat.jpg"}},
                {"type": "document", "source": {"type": "url", "url": "https://cdn.example/r.pdf"}, "title": "r.pdf"},
                {
                    "type": "document",
                    "source": {"type": "text", "media_type": "text/plain", "data": "hello"},
                    "title": "n.txt",
                },
            ],
        },
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "get_weather", "input": {"city": "Paris"}}],
        },
        {
            "role": "user",
            "content": [
                {"type": "tool_result", "tool_use_id": "toolu_1", "content": "boom", "is_error": True},
                {"type": "text", "text": "And now?"},
            ],
        },
    ]


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(ConfigurationError) as missing:
        AnthropicModel("claude-sonnet-4-5")
    assert missing.value.code == "missing_api_key" and "ANTHROPIC_API_KEY is not set" in str(missing.value)
