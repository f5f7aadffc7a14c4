"""50 concurrent chats for one actor at the budget edge through `AgentService` on a SQL store (DESIGN §3)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from agora_agent.actors import Actor
from agora_agent.config import AgentConfig
from agora_agent.errors import QuotaExceededError
from agora_agent.governance.quota import Budget
from agora_agent.messages import Usage
from agora_agent.service import AgentService
from agora_agent.stores.sql import create_engine_from_url
from agora_agent.stores.sql.migrate import upgrade
from agora_agent.testing import FakeModel
from agora_agent.testing.fake_model import ScriptedTurn
from agora_agent.testing.helpers import OBSERVER
from tests.stores.sql.conftest import empty_database

LIMIT, RESERVE, TURN = 1_000, 100, Usage(input_tokens=60, output_tokens=30)  # one turn uses 90 <= 100 reserved


def _one_turn(request: object, turn_index: int) -> ScriptedTurn:
    return ScriptedTurn(text="ok", usage=TURN)


@asynccontextmanager
async def budget_service(backend: str, tmp_path: Path, **config: Any) -> AsyncIterator[AgentService]:
    """An `AgentService` on an empty database of `backend` (migrated, as a deployment would: PostgreSQL does not
    auto-create), one turn of 90 tokens per run, a budget of `LIMIT` tokens reserving `RESERVE` per call."""
    async with empty_database(backend, tmp_path) as url:
        if backend == "postgres":
            engine = create_engine_from_url(url)
            await upgrade(engine)
            await engine.dispose()
        budget = Budget(tokens_per_actor=LIMIT, reserve_tokens=RESERVE)
        async with AgentService.from_config(
            AgentConfig(model=FakeModel(_one_turn), store=url, budget=budget, **config)
        ) as service:
            yield service


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_fifty_concurrent_chats_overshoot_at_most_one_reservation(backend: str, tmp_path: Path) -> None:
    actor = Actor(id="alice")
    async with budget_service(backend, tmp_path) as service:
        go = asyncio.Event()

        async def one_chat() -> str | None:
            await go.wait()
            try:
                started = await service.chat(actor, "hello")
            except QuotaExceededError:
                return None  # refused before the run started (HTTP 429)
            run = await service.wait_for_run(OBSERVER, started.run_id, timeout=60)
            return run.status

        tasks = [asyncio.create_task(one_chat()) for _ in range(50)]
        go.set()
        outcomes = await asyncio.wait_for(asyncio.gather(*tasks), timeout=90)

        completed = outcomes.count("completed")
        assert completed >= LIMIT // RESERVE
        assert set(outcomes) <= {"completed", "failed", None}  # failed = refused mid-run at reserve
        quota = service.quota
        assert quota is not None
        today = datetime.now(UTC).strftime("%Y-%m-%d")
        usage = await quota.usage(actor, today)
        start = datetime.now(UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        ledger = await service.store.usage_tokens(actor.id, start, start + timedelta(days=1))
        assert usage.reserved_tokens == 0
        assert usage.used_tokens == ledger == completed * TURN.total_tokens  # no lost ledger rows or updates
        assert usage.used_tokens <= LIMIT + RESERVE  # overshoot at most one reservation


class _BrokenPrices:
    """A price store that fails the run after its thread was read (and its first reservation granted with it)."""

    async def upsert_price(self, price: object) -> None:
        raise AssertionError("not called")

    async def list_current_prices(self) -> list[object]:
        raise RuntimeError("price table unreachable")


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_run_failing_before_its_first_model_call_gives_its_first_reservation_back(
    backend: str, tmp_path: Path
) -> None:
    """The first model call's reservation is granted with the thread's read; a run failing between the two (here
    its price read) releases it: the budget is not held until the expiry sweep."""
    actor = Actor(id="alice")
    async with budget_service(backend, tmp_path, pricing=_BrokenPrices()) as service:
        assert service.quota is not None
        day = datetime.now(UTC).strftime("%Y-%m-%d")
        # the period's counter exists (a first grant is the quota's own unit): the grant joins the read
        await service.quota.release(await service.quota.reserve(actor, day, reservation_id="seed", tokens=1, usd=0))
        started = await service.chat(actor, "hello")
        run = await service.wait_for_run(OBSERVER, started.run_id, timeout=30)
        assert run.status == "failed"
        usage = await service.quota.usage(actor, day)
        assert (usage.used_tokens, usage.reserved_tokens) == (0, 0)
