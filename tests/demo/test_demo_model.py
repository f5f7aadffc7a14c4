"""The offline demo model: requests map to tool calls deterministically, text streams word by word."""

from __future__ import annotations

import json

import pytest

from agora_agent.demo.model import HELP, LONG_STORY, DemoModel
from agora_agent.errors import ModelError
from agora_agent.messages import ModelMessage, ModelRequest, ToolDefinition, ToolResult

TOOLS = ("show_orders", "lookup_order", "refund_order", "sales_chart", "query_shop", "ask_analyst")


def request(text: str, tools: tuple[str, ...] = TOOLS) -> ModelRequest:
    return ModelRequest(
        system="You are a test.",
        messages=(ModelMessage(role="user", content=text),),
        tools=tuple(ToolDefinition(name=n, description=n, input_schema={"type": "object"}) for n in tools),
    )


async def turn(req: ModelRequest) -> tuple[list[str], object]:
    chunks: list[str] = []

    async def on_text(delta: str) -> None:
        chunks.append(delta)

    result = await DemoModel(word_delay=0).run_turn(req, on_text)
    return chunks, result


@pytest.mark.parametrize(
    ("text", "tool", "args"),
    [
        ("show my orders", "show_orders", {}),
        ("show refunded orders", "show_orders", {"status": "refunded"}),
        ("what is the status of order 1003?", "lookup_order", {"order_id": 1003}),
        ("Refund order 1001", "refund_order", {"order_id": 1001, "reason": "customer request"}),
        ("refund order #1002 because it broke", "refund_order", {"order_id": 1002, "reason": "it broke"}),
        ("chart sales", "sales_chart", {"group_by": "product"}),
        ("chart sales by day", "sales_chart", {"group_by": "day"}),
        ("Ask the analyst: which product sells best?", "ask_analyst", {"task": "which product sells best?"}),
        ("sql: SELECT name FROM products", "query_shop", {"sql": "SELECT name FROM products"}),
        ("how many customers do we have", "query_shop", {"sql": "SELECT COUNT(*) AS customers FROM customers"}),
    ],
)
async def test_requests_map_to_tool_calls(text: str, tool: str, args: dict[str, object]) -> None:
    chunks, result = await turn(request(text))
    assert [c.name for c in result.tool_calls] == [tool]  # type: ignore[attr-defined]
    assert result.tool_calls[0].input == args  # type: ignore[attr-defined]
    assert "".join(chunks) == result.text  # type: ignore[attr-defined]
    assert result.model_id == "demo-model" and result.usage.input_tokens > 0  # type: ignore[attr-defined]


async def test_a_tool_that_is_not_offered_is_explained_not_called() -> None:
    _, result = await turn(request("refund order 2001", tools=("show_orders",)))
    assert result.tool_calls == ()  # type: ignore[attr-defined]
    assert "`refund_order` is not offered to you" in result.text  # type: ignore[attr-defined]


async def test_text_streams_in_words() -> None:
    chunks, result = await turn(request("tell me a long story"))
    assert result.text == LONG_STORY and len(chunks) > 50  # type: ignore[attr-defined]
    _, result = await turn(request("hi"))
    assert result.text == HELP  # type: ignore[attr-defined]


async def test_tool_results_are_summarised() -> None:
    results = (
        ToolResult(
            tool_call_id="1", name="refund_order", content=json.dumps({"order_id": 1001, "refunded_amount": 149.0})
        ),
        ToolResult(tool_call_id="2", name="refund_order", content='{"rejected": true, "reason": "no"}', is_error=True),
    )
    req = ModelRequest(system="", messages=(ModelMessage(role="tool", tool_results=results),))
    _, result = await turn(req)
    assert result.tool_calls == ()  # type: ignore[attr-defined]
    assert result.text == (  # type: ignore[attr-defined]
        "Done: order 1001 is refunded ($149.0). Understood — `refund_order` was not carried out: no"
    )


async def test_simulated_failure_raises_model_error() -> None:
    with pytest.raises(ModelError) as failed:
        await turn(request("please simulate a failure"))
    assert failed.value.code == "simulated_failure"
