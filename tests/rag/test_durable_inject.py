"""Inject mode under the durable runner (DBOS on SQLite): the `retrieve` step's passages are checkpointed as
JSON and the run completes with the context block in the prompt."""

from __future__ import annotations

from pathlib import Path

import pytest

from agora_agent import AgentConfig, AgentService
from agora_agent.rag import EmbeddingRetriever, HashingEmbedder, Passage
from agora_agent.testing import FakeModel, collect_frames, echo_script
from agora_agent.testing.helpers import OBSERVER

from . import corpus

pytest.importorskip("dbos", reason="the durable extra is not installed")


def test_passages_round_trip_through_the_durable_codec() -> None:
    from agora_agent.runners.durable.codec import decode, encode

    passages = (Passage(id="a#0", text="t", score=0.5, source="a.md", metadata={"tenant_ref": "*", "$x": 1}),)
    assert decode(encode(passages)) == passages


async def test_a_durable_run_retrieves_in_one_checkpointed_step(tmp_path: Path) -> None:
    from agora_agent.runners.durable import DurableConfig

    store = await corpus.load()
    model = FakeModel(echo_script("ok"))
    config = AgentConfig(
        model=model,
        store=f"sqlite:///{tmp_path / 'agent.db'}",
        durable=DurableConfig(executor_id="rag-durable-test"),
        retriever=EmbeddingRetriever(HashingEmbedder(64), store),
    )
    async with AgentService.from_config(config) as service:
        started = await service.chat(corpus.ACME_MEMBER, "how are refunds paid to my card")
        frames = await collect_frames(service, started.run_id, timeout=60)
        run = await service.wait_for_run(OBSERVER, started.run_id, timeout=60)
        assert run.status == "completed", run.error
        assert "Refunds are paid within five days" in model.requests[0].system
        assert corpus.GLOBEX_SECRET not in model.requests[0].system
        rows = [c for c in await service.store.list_tool_calls(run_id=started.run_id) if c.tool_name == "retrieve"]
        assert len(rows) == 1 and rows[0].output["passages"]
        assert [f.name for f in frames.tools] == ["retrieve"]
