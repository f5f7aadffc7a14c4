"""POST /chat and GET /chat/{runId}/stream over the ASGI transport: envelope, statuses, re-attach, bad input."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest

from agora_agent import AgentDefinition, Budget, Persona
from agora_agent.actors import Actor, CallableActorResolver, HeaderActorResolver
from agora_agent.client.frames import parse_sse_text
from agora_agent.testing.helpers import OBSERVER

from .conftest import ALICE, BOB, asgi_client, make_config


def texts(events: list[tuple[str, str, str]]) -> str:
    return "".join(json.loads(d)["delta"] for e, d, _ in events if e == "message")


@pytest.mark.ref("HTTP-01", "HTTP-02", "SSE-01", "SSE-02", "SSE-03", "SSE-05")
async def test_chat_streams_the_reference_envelope_with_headers() -> None:
    async with asgi_client(make_config()) as (client, service):
        r = await client.post("/agent/chat", json={"message": "hi"}, headers=ALICE)
        assert r.status_code == 200
        assert r.headers["content-type"].startswith("text/event-stream")
        assert r.headers["cache-control"] == "no-cache, no-transform"
        assert r.headers["x-accel-buffering"] == "no"
        run_id, thread_id = r.headers["x-agent-run-id"], r.headers["x-agent-thread-id"]
        assert r.text.startswith(f'event: meta\ndata: {{"runId":"{run_id}","threadId":"{thread_id}"}}\n\n')
        assert r.text.endswith("event: done\ndata: {}\n\n")
        events = parse_sse_text(r.text)
        assert texts(events) == "Hello there"
        ids = [int(i) for e, _, i in events if e == "message"]
        assert ids == sorted(ids) and ids[0] == 1
        run = await service.wait_for_run(OBSERVER, run_id)
        assert (run.status, run.actor_ref, run.thread_id) == ("completed", "alice", thread_id)


@pytest.mark.ref("HTTP-03", "SSE-07")
async def test_reattach_replays_from_start_or_after_last_event_id() -> None:
    async with asgi_client(make_config()) as (client, service):
        r = await client.post("/agent/chat", json={"message": "hi"}, headers=ALICE)
        run_id = r.headers["x-agent-run-id"]
        await service.wait_for_run(OBSERVER, run_id)
        full = await client.get(f"/agent/chat/{run_id}/stream", headers=ALICE)
        assert full.status_code == 200
        assert full.headers["x-agent-run-id"] == run_id and "x-agent-thread-id" not in full.headers
        assert full.text.startswith(f'event: meta\ndata: {{"runId":"{run_id}"}}\n\n')
        assert texts(parse_sse_text(full.text)) == "Hello there"
        tail = await client.get(f"/agent/chat/{run_id}/stream", headers={**ALICE, "Last-Event-ID": "1"})
        events = parse_sse_text(tail.text)
        assert texts(events) == "there"
        assert [i for e, _, i in events if e == "message"] == ["2"]
        assert events[-1][0] == "done"
        past_end = await client.get(f"/agent/chat/{run_id}/stream", headers={**ALICE, "Last-Event-ID": "99"})
        assert [e for e, _, _ in parse_sse_text(past_end.text)] == ["meta", "done"]


async def test_stream_rejects_a_bad_last_event_id() -> None:
    async with asgi_client(make_config()) as (client, _service):
        r = await client.post("/agent/chat", json={"message": "hi"}, headers=ALICE)
        run_id = r.headers["x-agent-run-id"]
        bad = await client.get(f"/agent/chat/{run_id}/stream", headers={**ALICE, "Last-Event-ID": "abc"})
        assert bad.status_code == 422 and "Last-Event-ID" in bad.json()["error"]


@pytest.mark.ref("HTTP-03", "OWN-01", "OWN-02")
async def test_stream_of_unknown_or_foreign_run() -> None:
    async with asgi_client(make_config()) as (client, _service):
        r = await client.post("/agent/chat", json={"message": "hi"}, headers=ALICE)
        run_id = r.headers["x-agent-run-id"]
        unknown = await client.get("/agent/chat/nope/stream", headers=ALICE)
        assert (unknown.status_code, unknown.json()) == (404, {"error": "run not found"})
        foreign = await client.get(f"/agent/chat/{run_id}/stream", headers=BOB)
        assert (foreign.status_code, foreign.json()) == (403, {"error": "forbidden"})


@pytest.mark.ref("HTTP-01", "ACT-01", "ACT-07")
async def test_401_hides_the_resolver_message_unless_debug() -> None:
    async with asgi_client(make_config()) as (client, _):
        r = await client.post("/agent/chat", json={"message": "hi"})
        assert (r.status_code, r.json()) == (401, {"error": "unauthorized"})
        r = await client.get("/agent/threads")
        assert (r.status_code, r.json()) == (401, {"error": "unauthorized"})
    async with asgi_client(make_config(debug=True)) as (client, _):
        r = await client.get("/agent/threads")
        assert (r.status_code, r.json()) == (401, {"error": "missing x-actor-id header"})
    # A resolver returning None is always "unauthorized".
    async with asgi_client(make_config(debug=True, actor_resolver=CallableActorResolver(lambda req: None))) as (
        client,
        _,
    ):
        r = await client.get("/agent/threads")
        assert (r.status_code, r.json()) == (401, {"error": "unauthorized"})


@pytest.mark.ref("ACT-01")
async def test_default_resolver_refuses_everything() -> None:
    from agora_agent.actors import UnconfiguredActorResolver

    async with asgi_client(make_config(actor_resolver=UnconfiguredActorResolver())) as (client, service):
        r = await client.post("/agent/chat", json={"message": "hi"}, headers=ALICE)
        assert r.status_code == 401
        assert await service.store.list_threads("alice") == []


@pytest.mark.ref("ACT-05", "ACT-06")
async def test_a_per_agent_resolver_only_refines_the_apps_caller() -> None:
    def kiosk(request: Any) -> Actor:
        return Actor("kiosk-user")

    def narrow(request: Any) -> Actor:  # the same caller, fewer roles
        return Actor(request.headers["x-actor-id"], roles=())

    helpers = [
        AgentDefinition(name="kiosk", actor_resolver=CallableActorResolver(kiosk)),
        AgentDefinition(name="narrow", actor_resolver=CallableActorResolver(narrow)),
    ]
    async with asgi_client(make_config(agents=helpers)) as (client, service):
        # Naming an agent never lowers the bar: the app's resolver must accept the caller first.
        r = await client.post("/agent/chat", json={"message": "hi", "agent": "kiosk"})
        assert r.status_code == 401
        # ... and the agent's resolver must agree with it (another identity -> 403, nothing stored).
        r = await client.post("/agent/chat", json={"message": "hi", "agent": "kiosk"}, headers=ALICE)
        assert r.status_code == 403
        assert await service.store.list_threads("kiosk-user") == []
        r = await client.post("/agent/chat", json={"message": "hi", "agent": "narrow"}, headers=ALICE)
        assert r.status_code == 200
        run = await service.wait_for_run(OBSERVER, r.headers["x-agent-run-id"])
        assert (run.actor_ref, run.agent_name) == ("alice", "narrow")
        # Every other route uses the app's resolver alone.
        r = await client.get(f"/agent/chat/{run.id}/stream")
        assert r.status_code == 401


@pytest.mark.ref("ACT-05")
async def test_an_agents_header_resolver_cannot_raise_a_callers_roles() -> None:
    def session(request: Any) -> Actor | None:  # the app's own auth: a cookie names alice, a plain user
        return Actor("alice", roles=("support",)) if request.cookies.get("session") == "alice" else None

    weak = AgentDefinition(name="weak", actor_resolver=HeaderActorResolver())
    config = make_config(agents=[weak], actor_resolver=CallableActorResolver(session))
    forged = {"x-actor-id": "alice", "x-actor-role": "support,admin"}
    async with asgi_client(config) as (client, service):
        r = await client.post("/agent/chat", json={"message": "hi", "agent": "weak"}, headers=forged)
        assert r.status_code == 401  # anonymous: headers alone are not an identity
        client.cookies.set("session", "alice")
        r = await client.post("/agent/chat", json={"message": "hi", "agent": "weak"}, headers=forged)
        assert r.status_code == 403  # alice, but the agent's resolver claims a role she does not have
        assert await service.store.list_threads("alice") == []


async def test_a_header_resolver_outside_debug_logs_a_security_warning(caplog: pytest.LogCaptureFixture) -> None:
    from agora_agent.web import agent_router

    with caplog.at_level(logging.WARNING, logger="agora_agent.web"):
        agent_router(make_config())
    assert any(r.getMessage().startswith("SECURITY:") for r in caplog.records)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="agora_agent.web"):
        agent_router(make_config(debug=True))
    assert not any(r.getMessage().startswith("SECURITY:") for r in caplog.records)


@pytest.mark.ref("HTTP-01")
@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({}, "message"),
        ({"message": ""}, "message"),
        ({"message": "   \n"}, "message"),
        ({"message": 42}, "message"),
        ({"message": "hi", "threadId": 5}, "threadId"),
        ({"message": "hi", "pageContext": "x"}, "pageContext"),
        ({"message": "hi", "attachments": [{"url": "x"}]}, "attachments"),
        ([1, 2], None),
        ("just a string", None),
    ],
)
async def test_chat_body_errors_are_422_with_field_errors_and_store_nothing(body: Any, field: str | None) -> None:
    async with asgi_client(make_config()) as (client, service):
        r = await client.post("/agent/chat", json=body, headers=ALICE)
        assert r.status_code == 422
        payload = r.json()
        assert payload["error"].startswith("invalid request")
        if field:
            assert any(field in issue["loc"] for issue in payload["detail"])
        assert await service.store.list_threads("alice") == []


async def test_malformed_json_and_empty_body_are_422() -> None:
    async with asgi_client(make_config()) as (client, service):
        r = await client.post(
            "/agent/chat", content=b'{"message": ', headers={**ALICE, "content-type": "application/json"}
        )
        assert r.status_code == 422 and r.json()["detail"][0]["type"] == "json_invalid"
        r = await client.post("/agent/chat", headers=ALICE)
        assert r.status_code == 422
        r = await client.post(
            "/agent/tool-call/approve", content=b"{", headers={**ALICE, "content-type": "application/json"}
        )
        assert r.status_code == 422
        assert await service.store.list_threads("alice") == []


async def test_unknown_agent_404_unknown_persona_422() -> None:
    agent = AgentDefinition(name="sales", personas=(Persona(id="friendly", label="Friendly"),))
    async with asgi_client(make_config(agents=[agent])) as (client, service):
        r = await client.post("/agent/chat", json={"message": "hi", "agent": "nope"}, headers=ALICE)
        assert r.status_code == 404 and 'unknown agent "nope"' in r.json()["error"]
        r = await client.post(
            "/agent/chat", json={"message": "hi", "agent": "sales", "persona": "grumpy"}, headers=ALICE
        )
        assert r.status_code == 422 and "grumpy" in r.json()["error"]
        r = await client.post(
            "/agent/chat", json={"message": "hi", "agent": "sales", "persona": "friendly"}, headers=ALICE
        )
        assert r.status_code == 200
        assert len(await service.store.list_threads("alice")) == 1


@pytest.mark.ref("HTTP-01", "OWN-01")
async def test_chat_on_someone_elses_or_unknown_thread() -> None:
    async with asgi_client(make_config()) as (client, service):
        r = await client.post("/agent/chat", json={"message": "hi"}, headers=ALICE)
        thread_id = r.headers["x-agent-thread-id"]
        before = len(await service.store.list_messages(thread_id))
        r = await client.post("/agent/chat", json={"message": "mine now", "threadId": thread_id}, headers=BOB)
        assert (r.status_code, r.json()) == (403, {"error": "forbidden"})
        r = await client.post("/agent/chat", json={"message": "x", "threadId": "nope"}, headers=BOB)
        assert (r.status_code, r.json()) == (404, {"error": "thread not found"})
        assert len(await service.store.list_messages(thread_id)) == before
        assert await service.store.list_threads("bob") == []
        # The owner continues the thread.
        r = await client.post("/agent/chat", json={"message": "again", "threadId": thread_id}, headers=ALICE)
        assert r.status_code == 200 and r.headers["x-agent-thread-id"] == thread_id


async def test_quota_exhausted_is_429_before_any_stream() -> None:
    config = make_config(budget=Budget(tokens_per_actor=5, reserve_tokens=1))
    async with asgi_client(config) as (client, service):
        first = await client.post("/agent/chat", json={"message": "hi"}, headers=ALICE)
        assert first.status_code == 200
        await service.wait_for_run(OBSERVER, first.headers["x-agent-run-id"])
        thread_id = first.headers["x-agent-thread-id"]
        messages_before = len(await service.store.list_messages(thread_id))
        r = await client.post("/agent/chat", json={"message": "more", "threadId": thread_id}, headers=ALICE)
        assert r.status_code == 429
        assert r.headers["content-type"].startswith("application/json")
        assert "quota" in r.json()["error"].lower() or "budget" in r.json()["error"].lower()
        assert len(await service.store.list_messages(thread_id)) == messages_before


async def test_huge_bodies_are_413_and_store_nothing() -> None:
    async with asgi_client(make_config(request_max_bytes=10_000)) as (client, service):
        big = {"message": "x" * 20_000}
        r = await client.post("/agent/chat", json=big, headers=ALICE)
        assert r.status_code == 413 and "10000-byte limit" in r.json()["error"]

        async def chunks() -> Any:  # no Content-Length: the cap applies while reading
            yield b'{"message": "'
            for _ in range(30):
                yield b"y" * 1000
            yield b'"}'

        r = await client.post("/agent/chat", content=chunks(), headers={**ALICE, "content-type": "application/json"})
        assert r.status_code == 413
        assert await service.store.list_threads("alice") == []


@pytest.mark.ref("HTTP-04", "CANCEL-01")
async def test_cancel_route() -> None:
    async with asgi_client(make_config()) as (client, service):
        r = await client.post("/agent/chat", json={"message": "hi"}, headers=ALICE)
        run_id = r.headers["x-agent-run-id"]
        await service.wait_for_run(OBSERVER, run_id)
        assert (await client.post(f"/agent/chat/{run_id}/cancel", headers=BOB)).status_code == 403
        assert (await client.post("/agent/chat/nope/cancel", headers=ALICE)).status_code == 404
        r = await client.post(f"/agent/chat/{run_id}/cancel", headers=ALICE)
        assert r.json() == {"aborted": True, "cancelled": False}  # already completed: first terminal wins
        assert (await service.get_run(OBSERVER, run_id)).status == "completed"  # type: ignore[union-attr]


async def test_unknown_route_and_method_use_the_error_shape() -> None:
    async with asgi_client(make_config()) as (client, _):
        r = await client.get("/agent/nothing-here", headers=ALICE)
        assert r.status_code == 404 and "error" in r.json()
        r = await client.put("/agent/threads", headers=ALICE)
        assert r.status_code == 405 and "error" in r.json()


async def test_quota_429_on_a_new_thread_stores_no_thread() -> None:
    config = make_config(budget=Budget(tokens_per_actor=5, reserve_tokens=1))
    async with asgi_client(config) as (client, service):
        first = await client.post("/agent/chat", json={"message": "hi"}, headers=ALICE)
        await service.wait_for_run(OBSERVER, first.headers["x-agent-run-id"])
        r = await client.post("/agent/chat", json={"message": "more"}, headers=ALICE)
        assert r.status_code == 429
        assert len(await service.store.list_threads("alice")) == 1
