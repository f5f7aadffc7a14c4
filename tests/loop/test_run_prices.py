"""A run reads the prices of its model, not the whole table (`pricing:list`), and the price of a model a turn
reports besides on first sight (`pricing:<model>`); a `pricing:list` recorded by an earlier version (every price)
is used as it is."""

from __future__ import annotations

from datetime import UTC, datetime

from agora_agent import Actor, AgentDefinition, DefaultRolesPolicy
from agora_agent.governance.pricing import MemoryPricingStore, ModelPrice
from agora_agent.loop import LoopDeps, RunInput, run_agent_loop
from agora_agent.messages import Usage
from agora_agent.records import RunRecord
from agora_agent.stores.memory import MemoryAgentStore
from agora_agent.testing import FakeModel, ScriptedTurn, sequence_script
from agora_agent.tools.registry import ToolRegistry
from tests.loop.test_first_reservation import Hooks

USAGE = Usage(input_tokens=1_000_000, output_tokens=0)  # one million input tokens: the cost is the input rate


class CountingPrices(MemoryPricingStore):
    def __init__(self) -> None:
        super().__init__([ModelPrice(model_id=m, input_price_per_1m=r, output_price_per_1m=0) for m, r in PRICES])
        self.asked: list[tuple[str, ...]] = []

    async def current_prices(self, model_ids: object) -> list[ModelPrice]:
        self.asked.append(tuple(sorted(model_ids)))  # type: ignore[call-overload]
        return await super().current_prices(model_ids)  # type: ignore[arg-type]


PRICES = [("fake-model", 1.0), ("dated-model-2026", 7.0), *((f"catalogue-{i}", 9.0) for i in range(300))]


async def run(*turns: ScriptedTurn, recorded: dict[str, object] | None = None) -> tuple[MemoryAgentStore, Hooks]:
    store = MemoryAgentStore()
    prices = CountingPrices()
    deps = LoopDeps(
        model=FakeModel(sequence_script(*turns)),
        store=store,
        registry=ToolRegistry(),
        policy=DefaultRolesPolicy(),
        agent=AgentDefinition(),
        pricing=prices,
    )
    thread = await store.create_thread(actor_ref="alice")
    await store.record_run_start(
        RunRecord(id="run-1", thread_id=thread.id, actor_ref="alice", started_at=datetime.now(UTC))
    )
    hooks = Hooks(recorded)
    run_input = RunInput(run_id="run-1", thread_id=thread.id, actor=Actor("alice"), user_text="go", day="2026-12-01")
    await run_agent_loop(deps, run_input, hooks)
    hooks.results["asked"] = prices.asked
    return store, hooks


async def test_a_run_reads_its_models_price_and_a_reported_ones_on_first_sight() -> None:
    store, hooks = await run(ScriptedTurn(text="done", usage=USAGE, model_id="dated-model-2026"))
    assert hooks.results["asked"] == [("fake-model",), ("dated-model-2026",)]  # not the 302-row table
    assert "pricing:dated-model-2026" in hooks.results
    [row] = store.all_usage()
    assert (row.model_id, row.cost_usd, row.cost_source) == ("dated-model-2026", 7.0, "priced")


async def test_the_configured_model_is_priced_from_the_runs_first_read() -> None:
    store, hooks = await run(ScriptedTurn(text="done", usage=USAGE))
    assert hooks.results["asked"] == [("fake-model",)]
    [row] = store.all_usage()
    assert (row.model_id, row.cost_usd, row.cost_source) == ("fake-model", 1.0, "priced")


async def test_a_pricing_list_recorded_by_an_earlier_version_is_every_price() -> None:
    every = [ModelPrice(model_id=m, input_price_per_1m=r, output_price_per_1m=0, id=m) for m, r in PRICES[:2]]
    store, hooks = await run(
        ScriptedTurn(text="done", usage=USAGE, model_id="dated-model-2026"), recorded={"pricing:list": every}
    )
    assert hooks.results["asked"] == []  # nothing read: the recorded list answers
    [row] = store.all_usage()
    assert (row.cost_usd, row.price_id) == (7.0, "dated-model-2026")
