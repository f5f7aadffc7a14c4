"""`Retrieved` fires once per retrieval — from the inject-mode `retrieve` step and from `knowledge_tool` —
with the query's length, chunk ids and scores, and never the retrieved text."""

from __future__ import annotations

from typing import Any

from agora_agent import AgentConfig, AgentService
from agora_agent.messages import ModelRequest
from agora_agent.observability import AgentEvent, Retrieved
from agora_agent.rag import EmbeddingRetriever, HashingEmbedder, knowledge_tool
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest, echo_script
from tests.rag import corpus

QUESTION = "how are refunds paid to my card"


def retrieved(events: list[AgentEvent]) -> list[Retrieved]:
    return [e for e in events if isinstance(e, Retrieved)]


async def test_inject_mode_raises_one_retrieved_event_with_ids_and_scores() -> None:
    events: list[AgentEvent] = []
    retriever = EmbeddingRetriever(HashingEmbedder(64), await corpus.load())
    config = AgentConfig(
        model=FakeModel(echo_script("ok")), retriever=retriever, retrieval_top_k=2, on_event=events.append
    )
    async with AgentService.from_config(config) as service:
        started = await service.chat(corpus.ACME_MEMBER, QUESTION)
        await service.wait_for_run(corpus.ACME_MEMBER, started.run_id)
        [row] = [c for c in await service.store.list_tool_calls(run_id=started.run_id) if c.tool_name == "retrieve"]
    [event] = retrieved(events)
    assert (event.run_id, event.thread_id, event.actor_id, event.tenant_ref) == (
        started.run_id,
        started.thread_id,
        "alice",
        "acme",
    )
    assert (event.source, event.query_length, event.count) == ("inject", len(QUESTION), 2)
    assert list(event.ids) == [p["id"] for p in row.output["passages"]]  # the chunks the audit row names
    assert [round(s, 6) for s in event.scores] == [p["score"] for p in row.output["passages"]]
    assert "five days" not in repr(event)  # ids and scores, not content


async def test_knowledge_tool_raises_one_retrieved_event_per_call() -> None:
    events: list[AgentEvent] = []
    retriever = EmbeddingRetriever(HashingEmbedder(64), await corpus.load())

    def script(request: ModelRequest, i: int) -> ScriptedTurn:
        if request.messages[-1].role == "user":
            return ScriptedTurn(
                tool_calls=[ToolCallRequest(name="search_knowledge", input={"query": QUESTION}, id="k1")]
            )
        return ScriptedTurn(text="done")

    config = AgentConfig(model=FakeModel(script), tools=[knowledge_tool(retriever, top_k=3)], on_event=events.append)
    async with AgentService.from_config(config) as service:
        started = await service.chat(corpus.ACME_MEMBER, "look it up")
        await service.wait_for_run(corpus.ACME_MEMBER, started.run_id)
        [call] = await service.store.list_tool_calls(run_id=started.run_id)
    [event] = retrieved(events)
    output: dict[str, Any] = call.output
    assert (event.run_id, event.actor_id, event.source) == (started.run_id, "alice", "tool:search_knowledge")
    assert (event.query_length, event.count) == (len(QUESTION), output["count"])
    assert list(event.ids) == [p["id"] for p in output["passages"]]
    assert [round(s, 6) for s in event.scores] == [p["score"] for p in output["passages"]]
    assert not any(p["text"] in repr(event) for p in output["passages"])
