"""The caller's threads: list, read, delete, fork; and an agent's persona catalogue."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Query

from agora_agent.web.deps import ActorDep, CallerDep, ServiceDep, error_responses
from agora_agent.web.schemas import (
    MessageOut,
    OkResponse,
    PersonaOut,
    RenameThreadRequest,
    RunStatusOut,
    ThreadDetailOut,
    ThreadSummaryOut,
    ToolCallOut,
)

__all__ = [
    "add_routes",
    "delete_thread",
    "fork_thread",
    "get_thread",
    "list_threads",
    "persona_catalog",
    "rename_thread",
]


async def list_threads(service: ServiceDep, actor: ActorDep) -> list[ThreadSummaryOut]:
    """The caller's threads, newest activity first (50)."""
    return [ThreadSummaryOut.of_summary(s) for s in await service.list_threads(actor, limit=50)]


async def persona_catalog(
    service: ServiceDep,
    actor: ActorDep,
    agent: Annotated[str | None, Query(description="A named agent (default agent)")] = None,
) -> list[PersonaOut]:
    """The agent's personas as `[{id, label}]`, in declaration order."""
    return [PersonaOut(id=p.id, label=p.label) for p in service.persona_catalog(agent)]


async def get_thread(service: ServiceDep, caller: CallerDep, thread_id: str) -> ThreadDetailOut:
    """The thread with its messages and the audit rows of its tool calls."""
    detail = await service.get_thread(caller, thread_id)
    return ThreadDetailOut(
        **ThreadSummaryOut.of(detail.thread, detail.last_message_preview).model_dump(),
        messages=[MessageOut.of(m) for m in detail.messages],
        tool_calls=[ToolCallOut.of(t) for t in detail.tool_calls],
        runs=[
            RunStatusOut(run_id=r.id, status=r.status, started_at=r.started_at, finished_at=r.finished_at)
            for r in detail.runs
        ],
    )


async def rename_thread(
    service: ServiceDep, caller: CallerDep, thread_id: str, body: RenameThreadRequest
) -> OkResponse:
    """Rename the thread (1-200 characters)."""
    await service.rename_thread(caller, thread_id, body.title)
    return OkResponse()


async def delete_thread(service: ServiceDep, caller: CallerDep, thread_id: str) -> OkResponse:
    """Soft-delete the thread; afterwards it is 404 for everyone."""
    await service.delete_thread(caller, thread_id)
    return OkResponse()


async def fork_thread(service: ServiceDep, caller: CallerDep, thread_id: str, message_id: str) -> ThreadSummaryOut:
    """A new thread holding the messages up to and including `message_id`."""
    return ThreadSummaryOut.of_summary(await service.fork_thread(caller, thread_id, message_id))


def add_routes(router: APIRouter) -> None:
    """Add the thread routes (the persona catalogue first: its path would otherwise match a thread id)."""
    router.get("/threads", response_model=list[ThreadSummaryOut], responses=error_responses())(list_threads)
    router.get("/threads/personas/catalog", response_model=list[PersonaOut], responses=error_responses(404))(
        persona_catalog
    )
    router.get("/threads/{thread_id}", response_model=ThreadDetailOut, responses=error_responses(403, 404))(get_thread)
    router.delete("/threads/{thread_id}", response_model=OkResponse, responses=error_responses(403, 404))(delete_thread)
    router.patch("/threads/{thread_id}", response_model=OkResponse, responses=error_responses(403, 404, 422))(
        rename_thread
    )
    router.post(
        "/threads/{thread_id}/fork-from/{message_id}",
        response_model=ThreadSummaryOut,
        responses=error_responses(403, 404),
    )(fork_thread)
