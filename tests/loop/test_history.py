"""History kept between runs (loop/history.py): whatever happened to the thread, the kept prefix plus what the
store returns after it is exactly the history read from scratch — on the memory store and on SQLite, where
another process may have written in between."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from agora_agent import Actor, AgentConfig, AgentService, tool
from agora_agent.loop.history import HistoryCache, load_history
from agora_agent.messages import ModelRequest, ToolCall
from agora_agent.records import ToolCallPatch, ToolCallRecord
from agora_agent.stores.base import AgentStore
from agora_agent.stores.memory import MemoryAgentStore
from agora_agent.stores.sql import open_sql_backend
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest
from agora_agent.testing.helpers import OBSERVER

ALICE = Actor("alice", roles=("user",))


@tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def one_tool_then_done(request: ModelRequest, _index: int) -> ScriptedTurn:
    last = request.messages[-1]
    if last.role == "user":
        return ScriptedTurn(tool_calls=[ToolCallRequest(name="add", input={"a": len(request.messages), "b": 1})])
    return ScriptedTurn(text=f"done after {len(request.messages)}")


@pytest.fixture(params=["memory", "sqlite"])
async def store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[AgentStore]:
    if request.param == "memory":
        yield MemoryAgentStore()
        return
    backend = await open_sql_backend(f"sqlite:///{tmp_path / 'agent.db'}")
    try:
        yield backend.store
    finally:
        await backend.close()


async def chat(store: AgentStore, text: str, thread_id: str | None = None) -> str:
    """One governed run by a service of its own (as another worker would be), returns the thread id."""
    config = AgentConfig(model=FakeModel(one_tool_then_done), tools=[add], store=store)
    async with AgentService.from_config(config) as service:
        started = await service.chat(ALICE, text, thread_id=thread_id)
        run = await service.wait_for_run(OBSERVER, started.run_id)
    assert run.status == "completed"
    return started.thread_id


async def assert_same(store: AgentStore, thread_id: str, cache: HistoryCache) -> None:
    assert await load_history(store, thread_id, cache) == await load_history(store, thread_id, None)


async def test_kept_history_plus_the_tail_is_the_whole_history(store: AgentStore) -> None:
    cache = HistoryCache()
    thread_id = await chat(store, "first")
    await assert_same(store, thread_id, cache)
    kept = cache.get(thread_id)
    assert kept is not None and len(kept.prefix) == 4  # user, the tool call, its result, the answer: all final

    for text in ("second", "third"):  # written by other services: this cache only sees them as "after"
        await chat(store, text, thread_id)
        await assert_same(store, thread_id, cache)

    loaded = await store.load_thread(thread_id, after=cache.get(thread_id).anchor)  # type: ignore[union-attr]
    assert not loaded.complete and loaded.messages == []  # nothing new: the next run reads no history rows

    # A call still running is never kept: when it finishes, the model sees its result.
    run_id = "run-in-flight"
    asked = await store.append_message(
        thread_id=thread_id,
        role="assistant",
        content="",
        run_id=run_id,
        tool_calls=[ToolCall(id="c1", name="add", input={})],
    )
    await store.record_tool_call(
        ToolCallRecord(
            id="c1",
            run_id=run_id,
            thread_id=thread_id,
            message_id=asked.id,
            tool_name="add",
            tool_type="read",
            actor_ref=ALICE.id,
            created_at=datetime.now(UTC),
        )
    )
    await assert_same(store, thread_id, cache)
    await store.update_tool_call(run_id, "c1", ToolCallPatch(status="executed", output=7))
    await assert_same(store, thread_id, cache)
    _, history, _ = await load_history(store, thread_id, cache)
    assert history[-1].tool_results[0].content == "7"

    # Truncation into the kept prefix: the store returns everything again and the prefix is rebuilt.
    messages = await store.list_messages(thread_id)
    await store.truncate_from(thread_id, messages[3].id)
    await assert_same(store, thread_id, cache)
    assert len((await load_history(store, thread_id, cache))[1]) < len(history)
    await chat(store, "after truncation", thread_id)
    await assert_same(store, thread_id, cache)
