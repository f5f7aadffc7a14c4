"""IDOR matrix: every id-addressed route, with alice's ids, as bob -> 404/403 and nothing changes;
as a governance admin (the gate) -> allowed. Runs on a real uvicorn (alice's run is parked on an approval)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import httpx2
import pytest

from agora_agent import AgentService
from agora_agent.client import AgentClient, MetaFrame, ToolFrame
from agora_agent.testing.helpers import OBSERVER
from agora_agent.web import create_app

from .conftest import ADMIN, ALICE, BOB, is_admin, make_config, refund_script, serve


@asynccontextmanager
async def alice_world(gate: bool) -> AsyncIterator[tuple[httpx2.AsyncClient, AgentService, dict[str, str]]]:
    """Alice has a thread with a run parked on a refund approval; yields (http, service, her ids)."""
    app = create_app(make_config(refund_script(), governance_authorize=is_admin if gate else None))
    service: AgentService = app.state.agent_service
    async with serve(app) as url, AgentClient(url, headers=ALICE) as alice:
        ids: dict[str, str] = {}
        stream = alice.chat("refund order 1")
        async for frame in stream:
            if isinstance(frame, MetaFrame):
                ids["run"], ids["thread"] = frame.run_id, frame.thread_id or ""
            if isinstance(frame, ToolFrame) and frame.status == "pending_approval":
                ids["call"] = frame.tool_call_id
                break
        await stream.aclose()
        ids["message"] = (await service.store.list_messages(ids["thread"]))[0].id
        async with httpx2.AsyncClient(base_url=url + "/agent") as http:
            yield http, service, ids


async def snapshot(service: AgentService, ids: dict[str, str]) -> Any:
    thread = await service.store.get_thread(ids["thread"])
    messages = await service.store.list_messages(ids["thread"])
    approval = await service.store.get_approval(ids["run"], ids["call"])
    run = await service.get_run(OBSERVER, ids["run"])
    return (
        thread is not None and (thread.title, thread.updated_at, thread.deleted_at),
        [(m.id, m.content) for m in messages],
        approval and (approval.status, approval.decided_by),
        run and run.status,
        [s.thread.id for s in await service.store.list_threads("alice")],
        [s.thread.id for s in await service.store.list_threads("bob")],
        [s.thread.id for s in await service.store.list_threads("root")],
    )


def routes(ids: dict[str, str]) -> list[tuple[str, str, dict[str, Any]]]:
    """(method, path, request kwargs) of every route addressed by one of alice's ids."""
    run, thread, call, message = ids["run"], ids["thread"], ids["call"], ids["message"]
    return [
        ("GET", f"/chat/{run}/stream", {}),
        ("GET", f"/threads/{thread}", {}),
        ("POST", f"/threads/{thread}/fork-from/{message}", {}),
        ("POST", "/tool-call/approve", {"json": {"runId": run, "toolCallId": call}}),
        ("POST", "/tool-call/reject", {"json": {"runId": run, "toolCallId": call, "reason": "mine"}}),
        ("POST", "/chat", {"json": {"message": "hijack", "threadId": thread}}),
        ("POST", f"/chat/{run}/cancel", {}),
        ("DELETE", f"/threads/{thread}", {}),
    ]


async def call(http: httpx2.AsyncClient, method: str, path: str, headers: dict[str, str], **kw: Any) -> int:
    # Streams are only opened, never read to the end (alice's run is still waiting).
    async with http.stream(method, path, headers=headers, **kw) as response:
        if not response.headers.get("content-type", "").startswith("text/event-stream"):
            await response.aread()
        return response.status_code


@pytest.mark.ref("OWN-01", "OWN-02", "OWN-03", "HTTP-03", "HTTP-04", "HTTP-05", "HTTP-06", "HTTP-09", "HTTP-10")
async def test_bob_cannot_touch_alices_ids_and_nothing_changes() -> None:
    async with alice_world(gate=False) as (http, service, ids):
        before = await snapshot(service, ids)
        unknown = {k: "zz-" + v for k, v in ids.items()}
        for (method, path, kw), (_, unknown_path, unknown_kw) in zip(routes(ids), routes(unknown), strict=True):
            assert await call(http, method, path, BOB, **kw) == 403, (method, path)
            # Without a gate even an admin is strictly own-only (OWN-03).
            assert await call(http, method, path, ADMIN, **kw) == 403, (method, path)
            # Unknown ids are 404 whoever asks.
            assert await call(http, method, unknown_path, BOB, **unknown_kw) == 404, (method, unknown_path)
        assert await snapshot(service, ids) == before


@pytest.mark.ref("GGATE-02", "OWN-01")
async def test_the_governance_gate_makes_an_admin_privileged() -> None:
    async with alice_world(gate=True) as (http, service, ids):
        before = await snapshot(service, ids)
        for method, path, kw in routes(ids):
            assert await call(http, method, path, BOB, **kw) == 403, (method, path)
        assert await snapshot(service, ids) == before
        statuses = {}
        for method, path, kw in routes(ids):
            if path == "/tool-call/reject":
                continue  # approved just before: a second decision is a 409, tested elsewhere
            statuses[(method, path)] = await call(http, method, path, ADMIN, **kw)
        assert set(statuses.values()) == {200}, statuses
        approval = await service.store.get_approval(ids["run"], ids["call"])
        assert approval is not None and (approval.status, approval.decided_by) == ("approved", "root")
        assert await service.store.thread_owner(ids["thread"]) is None  # the admin deleted it
