"""Streaming on a real uvicorn (127.0.0.1): approvals mid-stream, drops and re-attach, disconnect != cancel."""

from __future__ import annotations

import asyncio
from typing import Any

import httpx2
import pytest
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from agora_agent.client import (
    AgentClient,
    AgentHTTPError,
    DoneFrame,
    MetaFrame,
    ResumePolicy,
    TextFrame,
    ToolFrame,
)
from agora_agent.client.frames import decode_frame
from agora_agent.testing import ScriptedTurn, sequence_script
from agora_agent.testing.helpers import OBSERVER
from agora_agent.web import create_app

from .conftest import ADMIN, ALICE, BOB, is_admin, make_config, refund_script, serve

FAST = ResumePolicy(max_attempts=4, backoff=lambda n: 0.01 * n)


async def first_pending(frames: Any) -> tuple[str, ToolFrame]:
    run_id = ""
    async for frame in frames:
        if isinstance(frame, MetaFrame):
            run_id = frame.run_id
        if isinstance(frame, ToolFrame) and frame.status == "pending_approval":
            return run_id, frame
    raise AssertionError("no pending approval")


@pytest.mark.ref("HTTP-05", "SSE-07", "CLIENT-02", "CLIENT-03")
async def test_approve_mid_stream_and_the_same_stream_finishes() -> None:
    app = create_app(make_config(refund_script()))
    async with serve(app) as url, AgentClient(url, headers=ALICE, resume=FAST) as client:
        stream = client.chat("refund order 1")
        run_id, pending = await first_pending(stream)
        decision = await client.approve(run_id, pending.tool_call_id)
        assert (decision["ok"], decision["status"], decision["decidedBy"]) == (True, "approved", "alice")
        rest = [f async for f in stream]
        statuses = [f.status for f in rest if isinstance(f, ToolFrame)]
        assert statuses == ["approved", "executed"]
        assert "".join(f.delta for f in rest if isinstance(f, TextFrame)) == "Refund done."
        assert isinstance(rest[-1], DoneFrame)
        # Deciding again: 409 with the standing decision.
        with pytest.raises(AgentHTTPError) as twice:
            await client.reject(run_id, pending.tool_call_id)
        assert twice.value.status == 409
        assert twice.value.body["detail"]["status"] == "approved"
        assert twice.value.body["detail"]["decidedBy"] == "alice"


async def test_approval_errors_over_http() -> None:
    app = create_app(make_config(refund_script(), governance_authorize=is_admin))
    async with (
        serve(app) as url,
        httpx2.AsyncClient(base_url=url + "/agent") as http,
        AgentClient(url, headers=ALICE) as alice,
    ):
        stream = alice.chat("refund order 1")
        run_id, pending = await first_pending(stream)
        call = pending.tool_call_id
        r = await http.post("/tool-call/approve", json={"runId": "nope", "toolCallId": call}, headers=ALICE)
        assert (r.status_code, r.json()) == (404, {"error": "run not found"})
        r = await http.post("/tool-call/approve", json={"runId": run_id, "toolCallId": "nope"}, headers=ALICE)
        assert r.status_code == 404
        r = await http.post("/tool-call/approve", json={"runId": run_id, "toolCallId": call}, headers=BOB)
        assert (r.status_code, r.json()) == (403, {"error": "forbidden"})
        r = await http.post("/tool-call/approve", json={"runId": run_id}, headers=ALICE)
        assert r.status_code == 422 and any("toolCallId" in i["loc"] for i in r.json()["detail"])
        service = app.state.agent_service
        assert (await service.store.get_approval(run_id, call)).status == "pending"
        # A governance admin may decide someone else's approval (privileged only through the gate).
        r = await http.post(
            "/tool-call/reject", json={"runId": run_id, "toolCallId": call, "reason": "no"}, headers=ADMIN
        )
        assert r.status_code == 200 and r.json()["decidedBy"] == "root"
        rest = [f async for f in stream]
        assert [f.status for f in rest if isinstance(f, ToolFrame)] == ["rejected"]


class DropFirstChatStream:
    """ASGI wrapper that kills the first POST /chat connection after `after` body chunks (a network drop)."""

    def __init__(self, app: ASGIApp, after: int) -> None:
        self.app, self.after, self.dropped = app, after, asyncio.Event()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST" or not scope["path"].endswith("/chat"):
            await self.app(scope, receive, send)
            return
        if self.dropped.is_set():
            await self.app(scope, receive, send)
            return
        sent = 0

        async def counting_send(message: Message) -> None:
            nonlocal sent
            await send(message)
            if message["type"] == "http.response.body" and message.get("body"):
                sent += 1
                if sent >= self.after:
                    self.dropped.set()
                    raise ConnectionResetError("simulated network drop")

        await self.app(scope, receive, counting_send)


@pytest.mark.ref("CLIENT-04", "SSE-07", "HTTP-03")
async def test_client_reattaches_after_a_drop_without_duplicating_text() -> None:
    words = [f"w{i} " for i in range(40)]
    config = make_config(sequence_script(ScriptedTurn(text="".join(words))))
    app = create_app(config)
    wrapper = DropFirstChatStream(app, after=5)  # meta + 4 frames, then the connection dies
    async with serve(wrapper) as url, AgentClient(url, headers=ALICE, resume=FAST) as client:
        frames = [f async for f in client.chat("talk")]
        assert wrapper.dropped.is_set()
        assert isinstance(frames[0], MetaFrame) and isinstance(frames[-1], DoneFrame)
        assert sum(isinstance(f, MetaFrame) for f in frames) == 1
        assert "".join(f.delta for f in frames if isinstance(f, TextFrame)) == "".join(words)
        run = await app.state.agent_service.wait_for_run(OBSERVER, frames[0].run_id)
        assert run.status == "completed"  # the drop did not cancel the run


@pytest.mark.ref("CLIENT-05")
async def test_client_gives_up_after_its_budget_and_raises_typed_errors() -> None:
    async with serve(create_app(make_config())) as url, AgentClient(url, headers=ALICE, resume=FAST) as client:
        with pytest.raises(AgentHTTPError) as err:
            [f async for f in client.resume("no-such-run")]
        assert err.value.status == 404 and err.value.message == "run not found"
        with pytest.raises(AgentHTTPError) as err:
            [f async for f in client.chat("")]
        assert err.value.status == 422
        async with AgentClient(url) as anonymous:
            with pytest.raises(AgentHTTPError) as err:
                await anonymous.threads()
            assert (err.value.status, err.value.body) == (401, {"error": "unauthorized"})


async def test_client_disconnect_never_cancels_the_run() -> None:
    app = create_app(make_config(refund_script()))
    async with serve(app) as url:
        service = app.state.agent_service
        async with AgentClient(url, headers=ALICE, resume=None) as client:
            stream = client.chat("refund order 1")
            run_id, pending = await first_pending(stream)
            await stream.aclose()  # the browser tab closes
        async with AgentClient(url, headers=ALICE) as client:
            await client.approve(run_id, pending.tool_call_id)
            frames = [f async for f in client.resume(run_id)]  # replay from the start
        run = await service.wait_for_run(OBSERVER, run_id)
        assert run.status == "completed"
        assert [f.status for f in frames if isinstance(f, ToolFrame)] == ["pending_approval", "approved", "executed"]
        assert "".join(f.delta for f in frames if isinstance(f, TextFrame)) == "Checking. Refund done."


async def test_live_stream_sends_keepalive_pings() -> None:
    from agora_agent.web import agent_router

    config = make_config(refund_script())
    router = agent_router(config, ping_seconds=0.05)
    from fastapi import FastAPI

    app = FastAPI()
    app.include_router(router)
    async with serve(app) as url, httpx2.AsyncClient(base_url=url) as http:
        async with http.stream("POST", "/agent/chat", json={"message": "refund 1"}, headers=ALICE) as response:
            seen_ping = False
            async for line in response.aiter_lines():
                if line.startswith(": ping"):
                    seen_ping = True
                    break
            assert seen_ping
        run_id = response.headers["x-agent-run-id"]
        await router.service.cancel(OBSERVER, run_id)


@pytest.mark.ref("CANCEL-01")
async def test_cancel_ends_a_waiting_run_and_its_stream() -> None:
    async with serve(create_app(make_config(refund_script()))) as url, AgentClient(url, headers=ALICE) as client:
        stream = client.chat("refund order 1")
        run_id, _ = await first_pending(stream)
        assert await client.cancel(run_id) == {"aborted": True, "cancelled": True}
        rest = [f async for f in stream]
        assert isinstance(rest[-1], DoneFrame)


def test_decode_frame_ignores_keepalive_comment_events() -> None:
    assert decode_frame("message", "") is None
