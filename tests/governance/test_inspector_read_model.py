"""The run inspector on a read model that has only `GovernanceQueries`' methods (a custom one): the same waterfall."""

from __future__ import annotations

from typing import Any

from agora_agent import Actor, AgentConfig, AgentService, ModelPrice, tool
from agora_agent.governance.console import inspect_run
from agora_agent.governance.pricing import seed_model_prices
from agora_agent.messages import ModelRequest, Usage
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest

ALICE = Actor("alice", ("support",))


@tool
def lookup(order_id: int) -> str:
    """Look an order up."""
    return f"order {order_id}: shipped"


def script(request: ModelRequest, turn: int) -> ScriptedTurn:
    usage = Usage(input_tokens=100 + turn, output_tokens=10)
    if turn == 0:
        return ScriptedTurn(tool_calls=[ToolCallRequest("lookup", {"order_id": 7})], usage=usage)
    return ScriptedTurn(text="It shipped.", usage=usage)


class PlainQueries:
    """Only what `GovernanceQueries` declares: no `run_usage`, `child_runs` or `audit_rows`."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        if name in ("run_usage", "child_runs", "audit_rows"):
            raise AttributeError(name)
        return getattr(self._inner, name)


async def test_without_run_usage_the_inspector_reads_run_detail_and_shows_the_same_steps() -> None:
    config = AgentConfig(model=FakeModel(script), tools=[lookup])
    async with AgentService.from_config(config) as service:
        assert service.pricing is not None
        price = ModelPrice(model_id="fake-model", input_price_per_1m=1.0, output_price_per_1m=2.0)
        await seed_model_prices(service.pricing, [price])
        started = await service.chat(ALICE, "where is order 7?")
        run = await service.wait_for_run(ALICE, started)
        queries = service.governance_queries
        assert run.status == "completed" and queries is not None
        full = await inspect_run(service.store, queries, run.id)
        plain = await inspect_run(service.store, PlainQueries(queries), run.id)
    assert full is not None and plain is not None
    assert [(s.kind, s.name, s.detail) for s in plain.steps] == [(s.kind, s.name, s.detail) for s in full.steps]
    models = [s for s in plain.steps if s.kind == "model"]
    assert [s.detail["input_tokens"] for s in models] == [100, 101]
    # matched to the run's usage ledger rows (read through run_detail here): the model, how it was priced
    assert [(s.detail["model"], s.detail["cost_source"]) for s in models] == [("fake-model", "priced")] * 2
