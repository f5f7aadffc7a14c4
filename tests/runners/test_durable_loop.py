"""The loop's end-to-end checks again, every run a DBOS workflow on a SQLite file (issue #11).

The same assertions as tests/loop/test_service_loop.py: durable runs behave like inline ones from the outside.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from agora_agent import AgentConfig, AgentService
from agora_agent.runners.durable import DurableConfig
from agora_agent.testing import FakeModel
from tests.loop import test_service_loop as test_loop
from tests.loop.test_service_loop import *  # noqa: F403  (re-collect every test with the durable factory below)
from tests.loop.test_service_loop import RefundOrder, _reset_refunds, lookup_order  # noqa: F401 (autouse fixture)


@pytest.fixture
async def svc_factory(tmp_path: Path) -> AsyncIterator[Callable[..., Any]]:
    made: list[AgentService] = []

    async def factory(script: Any, **kwargs: Any) -> AgentService:
        if made:
            raise AssertionError("one durable service per process at a time")
        tools = kwargs.pop("tools", [lookup_order, RefundOrder])
        kwargs.setdefault("store", f"sqlite:///{tmp_path / 'agent.db'}")
        config = AgentConfig(
            model=FakeModel(script),
            tools=tools,
            durable=DurableConfig(executor_id="loop-test", worker_concurrency=100),
            **kwargs,
        )
        service = AgentService.from_config(config)
        await service.start()
        made.append(service)
        return service

    yield factory
    for s in made:
        await s.close()


assert test_loop.svc_factory is not svc_factory
# It injects a custom TokenSink; durable runs publish to their own numbered live buffer (or Redis) and
# refuse a custom sink (test_durable.py checks the refusal).
del test_decision_before_park_is_kept  # noqa: F821
# Its last assertion (the 51st chat is refused at once) depends on how many of the 50 runs won the race for
# reservations, which the queue's scheduling changes; test_durable.py asserts the same bounds without it.
del test_budget_reservation_bounds_overshoot_under_50_concurrent_runs  # noqa: F821
