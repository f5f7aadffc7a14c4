"""OpenAIChatModel against the fake Chat Completions server (real HTTP on 127.0.0.1)."""

from __future__ import annotations

import asyncio
import json
import socket
from collections.abc import AsyncIterator

import pytest
from fakes import (
    FakeProviderServer,
    oa_chunk,
    oa_data,
    oa_tool_fragments,
    openai_error,
    openai_reply,
)

from agora_agent.errors import ConfigurationError, ModelError
from agora_agent.messages import (
    Attachment,
    ModelMessage,
    ModelRequest,
    ToolCall,
    ToolDefinition,
    ToolResult,
    Usage,
)
from agora_agent.models import OpenAIChatModel, RetryPolicy

FAST_RETRY = RetryPolicy(max_attempts=3, base_delay=0.001, max_delay=0.01)
WEATHER = ToolDefinition(
    name="get_weather",
    description="Weather for a city",
    input_schema={"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]},
)


def ask(text: str = "Weather in Paris?", **kw: object) -> ModelRequest:
    return ModelRequest(system="You are terse.", messages=(ModelMessage(role="user", content=text),), **kw)  # type: ignore[arg-type]


class Collector:
    def __init__(self) -> None:
        self.deltas: list[str] = []
        self.first = asyncio.Event()

    async def __call__(self, delta: str) -> None:
        self.deltas.append(delta)
        self.first.set()


@pytest.fixture
async def model(fake_server: FakeProviderServer) -> AsyncIterator[OpenAIChatModel]:
    adapter = OpenAIChatModel("gpt-4o-mini", base_url=fake_server.openai_base_url, retry=FAST_RETRY)
    yield adapter
    await adapter.aclose()


@pytest.mark.ref("ARCH-02", "COST-10")
async def test_text_deltas_stream_in_order_with_cache_usage(
    fake_server: FakeProviderServer, model: OpenAIChatModel
) -> None:
    fake_server.queue(openai_reply(text=["Let ", "me ", "check."]))
    out = Collector()
    turn = await model.run_turn(ask(), out)
    assert out.deltas == ["Let ", "me ", "check."]
    assert turn.text == "Let me check."
    assert turn.tool_calls == ()
    assert turn.usage == Usage(
        input_tokens=120, output_tokens=15, cache_read_tokens=100, cache_write_tokens=7, reasoning_tokens=4
    )
    assert turn.model_id == "gpt-4o-mini"
    assert turn.cost_usd is None
    sent = fake_server.requests[0]
    assert sent.path == "/v1/chat/completions"
    assert sent.body["stream"] is True
    assert sent.body["stream_options"] == {"include_usage": True}
    assert sent.body["messages"] == [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Paris?"},
    ]
    assert sent.headers["authorization"] == "Bearer not-needed"


@pytest.mark.ref("ARCH-02")
async def test_tool_call_split_across_many_chunks(fake_server: FakeProviderServer, model: OpenAIChatModel) -> None:
    args = json.dumps({"city": "Paris", "unit": "celsius", "days": 3})
    fake_server.queue(openai_reply(text=["Checking."], tools=[oa_tool_fragments(0, "call_1", "get_weather", args, 17)]))
    out = Collector()
    turn = await model.run_turn(ask(tools=(WEATHER,)), out)
    assert turn.text == "Checking."
    assert turn.tool_calls == (
        ToolCall(id="call_1", name="get_weather", input={"city": "Paris", "unit": "celsius", "days": 3}),
    )
    assert fake_server.requests[0].body["tools"] == [
        {
            "type": "function",
            "function": {"name": "get_weather", "description": WEATHER.description, "parameters": WEATHER.input_schema},
        }
    ]


@pytest.mark.ref("ARCH-02")
async def test_two_parallel_tool_calls_with_interleaved_fragments(
    fake_server: FakeProviderServer, model: OpenAIChatModel
) -> None:
    a = oa_tool_fragments(0, "call_a", "get_weather", '{"city": "Paris"}', 4)
    b = oa_tool_fragments(1, "call_b", "get_weather", '{"city": "Oslo"}', 4)
    interleaved = [event for pair in zip(a, b, strict=True) for event in pair]
    fake_server.queue(openai_reply(tools=[interleaved]))
    turn = await model.run_turn(ask(tools=(WEATHER,)), Collector())
    assert turn.tool_calls == (
        ToolCall(id="call_a", name="get_weather", input={"city": "Paris"}),
        ToolCall(id="call_b", name="get_weather", input={"city": "Oslo"}),
    )


async def test_invalid_tool_arguments_are_passed_on_for_validation(
    fake_server: FakeProviderServer, model: OpenAIChatModel
) -> None:
    fake_server.queue(openai_reply(tools=[oa_tool_fragments(0, "call_x", "get_weather", '{"city": "Par', 2)]))
    turn = await model.run_turn(ask(tools=(WEATHER,)), Collector())
    assert turn.tool_calls == (ToolCall(id="call_x", name="get_weather", input={"_raw": '{"city": "Par'}),)


@pytest.mark.ref("COST-01", "COST-09")
async def test_openrouter_usage_cost_is_reported(fake_server: FakeProviderServer, model: OpenAIChatModel) -> None:
    usage = {"prompt_tokens": 10, "completion_tokens": 2, "total_tokens": 12, "cost": 0.00042}
    fake_server.queue(openai_reply(text=["hi"], usage=usage))
    turn = await model.run_turn(ask(), Collector())
    assert turn.cost_usd == pytest.approx(0.00042)
    assert turn.usage == Usage(input_tokens=10, output_tokens=2)


@pytest.mark.ref("COST-01", "COST-09")
async def test_litellm_cost_header_is_reported(fake_server: FakeProviderServer, model: OpenAIChatModel) -> None:
    fake_server.queue(openai_reply(text=["hi"], headers={"x-litellm-response-cost": "0.0031"}))
    turn = await model.run_turn(ask(), Collector())
    assert turn.cost_usd == pytest.approx(0.0031)


async def test_garbage_cost_is_ignored(fake_server: FakeProviderServer, model: OpenAIChatModel) -> None:
    fake_server.queue(openai_reply(text=["hi"], headers={"x-litellm-response-cost": "nan"}))
    assert (await model.run_turn(ask(), Collector())).cost_usd is None


async def test_rate_limit_then_success_is_retried(fake_server: FakeProviderServer, model: OpenAIChatModel) -> None:
    fake_server.queue(openai_error(429, "Rate limit reached", {"retry-after": "0"}), openai_reply(text=["ok"]))
    out = Collector()
    turn = await model.run_turn(ask(), out)
    assert turn.text == "ok"
    assert out.deltas == ["ok"]
    assert len(fake_server.requests) == 2


async def test_server_errors_give_up_after_max_attempts(
    fake_server: FakeProviderServer, model: OpenAIChatModel
) -> None:
    fake_server.queue(*(openai_error(503, "upstream overloaded") for _ in range(3)))
    with pytest.raises(ModelError) as info:
        await model.run_turn(ask(), Collector())
    assert info.value.status == 503
    assert "upstream overloaded" in str(info.value)
    assert "3 attempts" in str(info.value)
    assert len(fake_server.requests) == 3


async def test_bad_request_is_surfaced_with_the_provider_message(
    fake_server: FakeProviderServer, model: OpenAIChatModel
) -> None:
    fake_server.queue(openai_error(400, "Invalid schema for function 'get_weather'"))
    with pytest.raises(ModelError) as info:
        await model.run_turn(ask(), Collector())
    assert info.value.status == 400
    assert not info.value.retryable
    assert "Invalid schema for function 'get_weather'" in str(info.value)
    assert len(fake_server.requests) == 1


async def test_error_event_after_text_is_not_retried(fake_server: FakeProviderServer, model: OpenAIChatModel) -> None:
    from fakes import Reply

    events = [oa_chunk({"content": "partial"}), oa_data({"error": {"message": "backend crashed", "code": 502}})]
    fake_server.queue(Reply(events=events), openai_reply(text=["never"]))
    out = Collector()
    with pytest.raises(ModelError) as failed:
        await model.run_turn(ask(), out)
    assert failed.value.code == "provider_failed" and not failed.value.retryable
    assert "backend crashed" in str(failed.value)  # the provider's own words reach the log
    assert out.deltas == ["partial"]
    assert len(fake_server.requests) == 1


async def test_unreachable_server_is_a_model_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    adapter = OpenAIChatModel(
        "m", base_url=f"http://127.0.0.1:{port}/v1", retry=RetryPolicy(max_attempts=2, base_delay=0)
    )
    try:
        with pytest.raises(ModelError) as unreachable:
            await adapter.run_turn(ask(), Collector())
        assert unreachable.value.code == "provider_unreachable"
    finally:
        await adapter.aclose()


async def test_cancellation_mid_stream_closes_the_connection(
    fake_server: FakeProviderServer, model: OpenAIChatModel
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
async def test_attachments_map_to_image_and_file_parts(fake_server: FakeProviderServer, model: OpenAIChatModel) -> None:
    fake_server.queue(openai_reply(text=["seen"]))
    image = Attachment(media_id="m1", url="https://cdn.example/cat.png", content_type="image/png", name="cat.png")
    pdf = Attachment(
        media_id="m2", url="data:application/pdf;base64,JVBERi0=", content_type="application/pdf", name="a.pdf"
    )
    request = ModelRequest(
        system="",
        messages=(
            ModelMessage(role="user", content="Describe", attachments=(image, pdf)),
            ModelMessage(role="assistant", content="A cat and a PDF."),
            ModelMessage(role="user", attachments=(image,)),
        ),
    )
    await model.run_turn(request, Collector())
    assert fake_server.requests[0].body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "Describe"},
                {"type": "image_url", "image_url": {"url": "https://cdn.example/cat.png"}},
                {"type": "file", "file": {"file_data": "data:application/pdf;base64,JVBERi0=", "filename": "a.pdf"}},
            ],
        },
        {"role": "assistant", "content": "A cat and a PDF."},
        {"role": "user", "content": [{"type": "image_url", "image_url": {"url": "https://cdn.example/cat.png"}}]},
    ]


async def test_second_turn_replays_tool_calls_and_results(
    fake_server: FakeProviderServer, model: OpenAIChatModel
) -> None:
    fake_server.queue(openai_reply(text=["Sunny."]))
    request = ModelRequest(
        system="sys",
        messages=(
            ModelMessage(role="user", content="Weather?"),
            ModelMessage(
                role="assistant",
                content="Checking.",
                tool_calls=(
                    ToolCall(id="c1", name="get_weather", input={"city": "Paris"}),
                    ToolCall(id="c2", name="get_weather", input={"_raw": "{oops"}),
                ),
            ),
            ModelMessage(
                role="tool",
                tool_results=(
                    ToolResult(tool_call_id="c1", name="get_weather", content='{"sky": "sunny"}'),
                    ToolResult(tool_call_id="c2", name="get_weather", content="invalid input", is_error=True),
                ),
            ),
        ),
        tools=(WEATHER,),
    )
    turn = await model.run_turn(request, Collector())
    assert turn.text == "Sunny."
    assert fake_server.requests[0].body["messages"] == [
        {"role": "system", "content": "sys"},
        {"role": "user", "content": "Weather?"},
        {
            "role": "assistant",
            "content": "Checking.",
            "tool_calls": [
                {"id": "c1", "type": "function", "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}},
                {"id": "c2", "type": "function", "function": {"name": "get_weather", "arguments": "{oops"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": '{"sky": "sunny"}'},
        {"role": "tool", "tool_call_id": "c2", "content": "Error: invalid input"},
    ]


def test_missing_key_names_the_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(ConfigurationError) as missing:
        OpenAIChatModel("gpt-4o-mini")
    assert missing.value.code == "missing_api_key" and "OPENAI_API_KEY is not set" in str(missing.value)
