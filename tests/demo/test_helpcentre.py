"""The demo's help centre: answered in inject mode and by `search_help`; Acme's private document never
reaches Bob (globex) — not his prompt, tool output, stream or stored thread."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from agora_agent import AgentService
from agora_agent.demo.app import DemoSetup, build_demo
from agora_agent.demo.helpcentre import ACME_ESCALATION_CODE, GLOBEX_PRIVATE
from agora_agent.demo.users import DEMO_USERS
from agora_agent.testing import collect_frames
from agora_agent.testing.helpers import OBSERVER

USERS = {u.id: u.actor() for u in DEMO_USERS}


@pytest.fixture
async def demo(tmp_path: Path) -> AsyncIterator[tuple[DemoSetup, AgentService]]:
    setup = build_demo(tmp_path / "demo.db", word_delay=0)
    service = AgentService.from_config(setup.config)
    async with service:
        assert await setup.help_centre.load() > 0
        yield setup, service
    await setup.shop_engine.dispose()
    await setup.help_centre.close()


async def seen_by(service: AgentService, user: str, message: str) -> tuple[str, str]:
    started = await service.chat(USERS[user], message)
    frames = await collect_frames(service, started.run_id)
    run = await service.wait_for_run(OBSERVER, started.run_id)
    assert run.status == "completed", run.error
    detail = await service.get_thread(OBSERVER, started.thread_id)
    assert detail is not None
    calls = await service.store.list_tool_calls(thread_id=started.thread_id)
    everything = json.dumps(
        [repr(e.frame) for e in frames.events]
        + [m.content for m in detail.messages]
        + [json.dumps([c.input, c.output, c.error], default=str) for c in calls]
    )
    return frames.text, everything


async def test_store_is_the_agent_stores_file_when_the_extra_is_there(demo: tuple[DemoSetup, AgentService]) -> None:
    setup, _ = demo
    pytest.importorskip("sqlite_vec")
    assert setup.help_centre.kind == "sqlite-vec"


@pytest.mark.parametrize(
    "question",
    ["What is the escalation code for urgent tickets?", "search help for escalation code", "Acme escalation line?"],
)
async def test_acme_private_document_is_for_acme_only(demo: tuple[DemoSetup, AgentService], question: str) -> None:
    _, service = demo
    alice_reply, _ = await seen_by(service, "alice", question)
    assert ACME_ESCALATION_CODE in alice_reply
    bob_reply, bob_everything = await seen_by(service, "bob", question)
    assert ACME_ESCALATION_CODE not in bob_everything
    assert bob_reply  # Bob still gets an answer (the shared articles), just not Acme's
    _, carol_everything = await seen_by(service, "carol", "What is the Globex contract number?")
    assert GLOBEX_PRIVATE not in carol_everything


async def test_shared_articles_answer_in_inject_mode(demo: tuple[DemoSetup, AgentService]) -> None:
    _, service = demo
    reply, _ = await seen_by(service, "bob", "How long do refunds take?")
    assert reply.startswith("From the help centre (help/returns.md):") and "five working days" in reply
    stats = await service.governance_queries.retrieval_stats()  # type: ignore[union-attr]
    assert stats.retrievals == 1 and stats.mean_passages == 3.0 and stats.zero_hit_rate == 0.0
