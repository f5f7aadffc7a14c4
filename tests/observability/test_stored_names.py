"""Python names below the web edge, camelCase on the wire — and rows stored in camelCase by earlier versions
(a message's usage JSON, the `prices.reprice` audit entry) read the same through both doors."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import sqlalchemy as sa

from agora_agent import Actor, Budget, QuotaExceededError
from agora_agent.governance.console import inspect_run
from agora_agent.messages import Usage
from agora_agent.stores.sql.tables import audit_log, message
from agora_agent.testing import FakeModel, ScriptedTurn
from agora_agent.testing.helpers import OBSERVER
from tests.observability.test_console_api import config as console_config
from tests.observability.test_console_api import full_run

from .conftest import ADMIN_H, ALICE_H, asgi, web_config

ALICE = Actor("alice", roles=("support",), tenant_ref="acme")
CAMEL = re.compile(r"^[a-z][a-z0-9]*[A-Z]")
LEGACY_USAGE = {"inputTokens": 12, "outputTokens": 3, "costUsd": 0.5, "latencyMs": 40, "finishReason": "stop"}


def _model() -> FakeModel:
    usage = Usage(input_tokens=12, output_tokens=3)
    return FakeModel(lambda request, i: ScriptedTurn(text="ok", usage=usage), model_id="m1")


async def test_camel_case_rows_of_earlier_versions_read_under_python_names(tmp_path: Path) -> None:
    async with asgi(web_config(model=_model(), store=f"sqlite:///{tmp_path / 'legacy.db'}")) as (client, service):
        started = await service.chat(ALICE, "hi")
        await service.wait_for_run(OBSERVER, started.run_id)
        engine = service.store.engine  # type: ignore[attr-defined]
        async with engine.begin() as conn:  # what an earlier version wrote
            await conn.execute(sa.update(message).where(message.c.role == "assistant").values(usage=LEGACY_USAGE))
            await conn.execute(
                sa.insert(audit_log).values(
                    id="legacy-reprice",
                    at=datetime.now(UTC),
                    actor_ref="ops",
                    action="prices.reprice",
                    target="m1",
                    detail={"rows": 1, "beforeUsd": 1.5, "afterUsd": 3.0},
                )
            )

        [assistant] = [m for m in await service.store.list_messages(started.thread_id) if m.role == "assistant"]
        assert assistant.usage == {
            "input_tokens": 12,
            "output_tokens": 3,
            "cost_usd": 0.5,
            "latency_ms": 40,
            "finish_reason": "stop",
        }
        thread = (await client.get(f"/agent/threads/{started.thread_id}", headers=ALICE_H)).json()
        assert thread["messages"][1]["usage"] == LEGACY_USAGE  # the wire as it always was
        inspected = (await client.get(f"/agent/governance/runs/{started.run_id}/inspect", headers=ADMIN_H)).json()
        [model_step] = [s for s in inspected["steps"] if s["kind"] == "model"]
        assert (model_step["detail"]["latencyMs"], model_step["detail"]["inputTokens"]) == (40, 12)

        [entry] = [e for e in await service.audit.entries() if e.id == "legacy-reprice"]
        assert entry.detail == {"rows": 1, "before_usd": 1.5, "after_usd": 3.0}
        export = (await client.get("/agent/governance/audit", headers=ADMIN_H)).json()
        [change] = [r for r in export["records"] if r["action"] == "prices.reprice"]
        assert change["detail"] == {"rows": 1, "beforeUsd": 1.5, "afterUsd": 3.0}


async def test_new_rows_are_stored_under_python_names_and_served_in_camel_case(tmp_path: Path) -> None:
    async with asgi(web_config(model=_model(), store=f"sqlite:///{tmp_path / 'new.db'}")) as (client, service):
        started = await service.chat(ALICE, "hi")
        await service.wait_for_run(OBSERVER, started.run_id)
        async with service.store.engine.connect() as conn:  # type: ignore[attr-defined]
            stored = (await conn.execute(sa.select(message.c.usage).where(message.c.role == "assistant"))).scalar_one()
        assert set(stored) >= {"input_tokens", "output_tokens", "cost_usd", "latency_ms", "finish_reason"}
        thread = (await client.get(f"/agent/threads/{started.thread_id}", headers=ALICE_H)).json()
        served = thread["messages"][1]["usage"]
        assert set(served) >= {"inputTokens", "outputTokens", "costUsd", "latencyMs", "finishReason"}
        assert not any("_" in key for key in served)


def _camel(value: Any) -> list[str]:
    return [k for k in value if CAMEL.match(k)] if isinstance(value, dict) else []


async def test_the_python_inspector_speaks_python_names() -> None:
    async with asgi(console_config()) as (client, service):
        run_id = await full_run(service)
        inspection = await inspect_run(service.store, service.governance_queries, run_id)  # type: ignore[arg-type]
        assert inspection is not None
        steps = list(inspection.steps)
        for step in steps:
            if step.child is not None:
                steps.extend(step.child.steps)
        assert {s.kind for s in steps} >= {"model", "tool", "approval", "delegation"}
        for step in steps:
            assert not _camel(step.detail), (step.kind, step.detail)
        approval = next(s for s in steps if s.kind == "approval")
        assert approval.detail["requested_by"] == "alice" and approval.detail["decided_by"] == "root"
        wire = (await client.get(f"/agent/governance/runs/{run_id}/inspect", headers=ADMIN_H)).json()
        [wire_approval] = [s for s in wire["steps"] if s["kind"] == "approval"]
        assert (wire_approval["detail"]["requestedBy"], wire_approval["detail"]["decidedBy"]) == ("alice", "root")


async def test_a_quota_refusal_carries_python_names_below_the_edge() -> None:
    async with asgi(web_config(model=_model(), budget=Budget(tokens_per_actor=1))) as (client, service):
        started = await service.chat(ALICE, "hi")
        await service.wait_for_run(OBSERVER, started.run_id)
        try:
            await service.chat(ALICE, "again")
        except QuotaExceededError as refused:
            detail = refused.detail
        else:
            raise AssertionError("the second chat was not refused")
        assert {"period_key", "resets_at", "limit_tokens", "used_tokens"} <= set(detail)
        over_http = await client.post("/agent/chat", json={"message": "again"}, headers=ALICE_H)
        assert over_http.status_code == 429
        assert {"periodKey", "resetsAt", "limitTokens", "usedTokens"} <= set(over_http.json()["detail"])
