"""Retrieval stats for the RAG panel: the same answers from the memory and SQL read-models (OBS-09), and the
gated `GET /governance/rag/stats` route."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, date, datetime

import httpx2
import pytest

from agora_agent import Actor, AgentConfig, AgentService, CallableActorResolver
from agora_agent.governance.queries import GovernanceQueries
from agora_agent.rag import EmbeddingRetriever, HashingEmbedder
from agora_agent.records import RunRecord, ToolCallRecord
from agora_agent.testing import FakeModel, echo_script
from agora_agent.testing.helpers import OBSERVER
from agora_agent.web.app import create_app
from tests.contract.conftest import QUERIES_FACTORIES, open_store, pricing_for

from . import corpus

pytestmark = pytest.mark.ref("OBS-09")


@pytest.fixture(params=sorted(QUERIES_FACTORIES))
async def twin(request: pytest.FixtureRequest) -> AsyncIterator[tuple[GovernanceQueries, object]]:
    async with open_store(request.param, request) as store:
        yield QUERIES_FACTORIES[request.param](store, pricing_for(request.param, store)), store


async def test_retrieval_stats_twins_agree(twin: tuple[GovernanceQueries, object]) -> None:
    queries, store = twin
    thread = await store.create_thread(actor_ref="alice")  # type: ignore[attr-defined]
    rows = [(datetime(2024, 3, 1, 9, tzinfo=UTC), 3), (datetime(2024, 3, 1, 10, tzinfo=UTC), 0)]
    rows += [(datetime(2024, 3, 2, 9, tzinfo=UTC), 2), (datetime(2024, 3, 3, 9, tzinfo=UTC), 0)]
    for n, (at, count) in enumerate(rows):
        run_id = f"run-{n}"
        await store.record_run_start(  # type: ignore[attr-defined]
            RunRecord(id=run_id, thread_id=thread.id, actor_ref="alice", started_at=at)
        )
        await store.record_tool_call(  # type: ignore[attr-defined]
            ToolCallRecord(
                id=f"retrieve-{run_id}",
                run_id=run_id,
                thread_id=thread.id,
                message_id=None,
                tool_name="retrieve",
                tool_type="read",
                output={"passages": [{"id": f"d#{i}", "score": 0.5} for i in range(count)]},
                status="executed",
                actor_ref="alice",
                created_at=at,
            )
        )
    # a knowledge-tool call named `retrieve` on a message is not an inject-mode retrieval
    await store.record_tool_call(  # type: ignore[attr-defined]
        ToolCallRecord(
            id="call-1",
            run_id="run-0",
            thread_id=thread.id,
            message_id="m1",
            tool_name="retrieve",
            tool_type="read",
            output={"passages": []},
            status="executed",
            actor_ref="alice",
            created_at=rows[0][0],
        )
    )
    stats = await queries.retrieval_stats()  # type: ignore[attr-defined]
    assert (stats.retrievals, stats.zero_hit_rate, stats.mean_passages) == (4, 0.5, 1.25)
    assert [(p.day, p.retrievals, p.zero_hits, p.mean_passages) for p in stats.trend] == [
        (date(2024, 3, 1), 2, 1, 1.5),
        (date(2024, 3, 2), 1, 0, 2.0),
        (date(2024, 3, 3), 1, 1, 0.0),
    ]
    only_d2 = await queries.retrieval_stats(date(2024, 3, 2), date(2024, 3, 2))  # type: ignore[attr-defined]
    assert (only_d2.retrievals, only_d2.mean_passages, only_d2.zero_hit_rate) == (1, 2.0, 0.0)
    empty = await queries.retrieval_stats(date(2025, 1, 1), date(2025, 1, 2))  # type: ignore[attr-defined]
    assert (empty.retrievals, empty.zero_hit_rate, empty.mean_passages, empty.trend) == (0, 0.0, 0.0, [])


async def test_route_is_gated_and_counts_real_retrievals() -> None:
    store = await corpus.load()
    users = {"admin": Actor("root", roles=("admin",), tenant_ref="acme"), "alice": corpus.ACME_MEMBER}
    config = AgentConfig(
        model=FakeModel(echo_script("ok")),
        retriever=EmbeddingRetriever(HashingEmbedder(64), store),
        governance_authorize=lambda actor, request: "admin" in actor.roles,
        actor_resolver=CallableActorResolver(lambda request: users.get(request.headers.get("x-user", ""))),
    )
    service = AgentService.from_config(config)
    app = create_app(service)
    async with service:
        for text in ("refunds card", "???"):
            started = await service.chat(corpus.ACME_MEMBER, text)
            await service.wait_for_run(OBSERVER, started.run_id)
        transport = httpx2.ASGITransport(app)
        async with httpx2.AsyncClient(transport=transport, base_url="http://test") as client:
            ok = await client.get("/agent/governance/rag/stats", headers={"x-user": "admin"})
            assert ok.status_code == 200
            body = ok.json()
            assert (body["retrievals"], body["zeroHitRate"]) == (2, 0.5)
            assert body["meanPassages"] == 1.5  # 3 visible passages, then none and body["trend"][0]["zeroHits"] == 1
            denied = await client.get("/agent/governance/rag/stats", headers={"x-user": "alice"})
            assert denied.status_code == 403 and "error" in denied.json()
            bad = await client.get("/agent/governance/rag/stats?from=yesterday", headers={"x-user": "admin"})
            assert bad.status_code == 422
