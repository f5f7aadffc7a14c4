"""Under durable execution a replayed step emits no second span (nor a second `Retrieved`): a run parked after
its retrieval, first model calls and tool is resumed by a new service on the same files (DBOS replays the
recorded steps from their checkpoints), and each model call and tool call still has exactly one span."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from agora_agent import AgentService
from agora_agent.observability import AgentEvent, Retrieved
from agora_agent.rag import EmbeddingRetriever, HashingEmbedder
from agora_agent.testing import FakeModel, wait_for_tool_status
from tests.rag import corpus
from tests.runners.test_durable import ALICE, config, effects, pay_script


async def test_a_replayed_step_emits_no_second_span(tmp_path: Path) -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    events: list[AgentEvent] = []
    retriever = EmbeddingRetriever(HashingEmbedder(64), await corpus.load())
    extra = {"tracer_provider": provider, "retriever": retriever, "on_event": events.append}
    first_model = FakeModel(pay_script())
    async with AgentService.from_config(config(tmp_path, first_model, **extra)) as first:
        started = await first.chat(ALICE, "pay order 7")
        pending = await wait_for_tool_status(first, started.run_id)  # llm:0, lookup, llm:1 done; pay parked
    before = Counter(s.name for s in exporter.get_finished_spans())
    assert (before["chat fake-model"], before["execute_tool lookup"]) == (2, 1)

    second_model = FakeModel(pay_script())
    async with AgentService.from_config(config(tmp_path, second_model, **extra)) as second:
        await second.approve(ALICE, started.run_id, pending.tool_call_id)
        run = await second.wait_for_run(ALICE, started.run_id, timeout=20)
        assert run.status == "completed"
    assert len(second_model.requests) == 1  # llm:0 and llm:1 were replayed from their checkpoints

    spans = exporter.get_finished_spans()
    names = Counter(s.name for s in spans)
    assert names["chat fake-model"] == 3  # one per model call: llm:0, llm:1 (first process), llm:2 (second)
    assert names["execute_tool lookup"] == 1 and names["execute_tool pay"] == 1
    assert effects == [f"{started.run_id}:call-1-pay#1"]
    call_ids = [s.attributes.get("gen_ai.tool.call.id") for s in spans if s.name.startswith("execute_tool")]
    assert len(call_ids) == len(set(call_ids)) == 2
    assert [e.run_id for e in events if isinstance(e, Retrieved)] == [started.run_id]  # the replayed step: none
