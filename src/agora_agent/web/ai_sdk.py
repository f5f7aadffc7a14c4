"""The AI SDK routes: `POST {prefix}/ai-sdk/chat` (what `useChat` / `DefaultChatTransport` send),
`GET {prefix}/ai-sdk/chat/{chat_id}/stream` (its `resume: true` re-attach) and
`GET {prefix}/ai-sdk/chat/{chat_id}/messages` (the history from our store, for `useChat({messages})`).

The body is the AI SDK's chat request (`{id, messages, trigger, messageId}` plus `agent`, `persona`,
`pageContext` from the transport's `body` option). `id` names the chat (mapped onto our thread, see
`client_protocols`). The last message decides what happens:

- a user message: its text parts are the new message; a run starts on our thread, whose history comes
  from our store (the client's earlier messages are never read). Same checks and order as `POST /chat`:
  401 -> 422 -> 404 agent -> 404/403 thread -> 429 budget -> the stream.
- an assistant message with `approval-responded` tool parts (sent by `addToolApprovalResponse` with
  `sendAutomaticallyWhen: lastAssistantMessageIsCompleteWithApprovalResponses`): each is a request to
  our approvals check; refused -> 4xx JSON and nothing changes; accepted -> the rest of the SAME run
  streams into the same assistant message (tool output or denial, then the model's answer).

The response is the UI message stream (`streaming/ui_message_stream.py`).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Header, Path, Request
from pydantic import BaseModel, ConfigDict, Field
from starlette.responses import Response

from agora_agent.errors import InvalidRequestError
from agora_agent.governance.gate import Caller
from agora_agent.messages import ToolCall
from agora_agent.records import MessageRecord, ToolCallRecord
from agora_agent.streaming.encoding import approval_id
from agora_agent.streaming.ui_message_stream import UIMessageStreamEncoder
from agora_agent.web.client_protocols import (
    ClientDecision,
    active_run,
    apply_decisions,
    map_thread,
    stream_response,
    verify_decisions,
)
from agora_agent.web.deps import CallerDep, ContextDep, error_responses
from agora_agent.web.route_class import resolves_own_identity
from agora_agent.web.routes.chat import ChatIdentity, chat_identity, parse_last_event_id

__all__ = [
    "AISDKChatRequest",
    "UIMessage",
    "UIMessagePart",
    "add_routes",
    "ai_sdk_chat",
    "ai_sdk_messages",
    "ai_sdk_resume",
    "ui_messages",
]

_SSE_200: dict[str, Any] = {
    "content": {"text/event-stream": {"schema": {"type": "string"}}},
    "description": "UI message stream",
}


class UIApproval(BaseModel):
    """A tool part's `approval` as the client holds it."""

    model_config = ConfigDict(extra="allow")
    id: str = Field(min_length=1, max_length=600)
    approved: bool | None = None
    reason: str | None = Field(default=None, max_length=4000)


class UIMessagePart(BaseModel):
    """One part of a UI message; only text parts and tool parts are read."""

    model_config = ConfigDict(extra="allow", populate_by_name=True)
    type: str = Field(min_length=1)
    text: str | None = None
    tool_call_id: str | None = Field(default=None, alias="toolCallId")
    state: str | None = None
    input: Any = None
    approval: UIApproval | None = None


class UIMessage(BaseModel):
    """A UI message (`{id, role, parts, metadata}`)."""

    model_config = ConfigDict(extra="allow")
    id: str = ""
    role: Literal["system", "user", "assistant"]
    parts: list[UIMessagePart] = Field(default_factory=list, max_length=1000)


class AISDKChatRequest(BaseModel):
    """The AI SDK chat request body, plus our optional `agent`, `persona` and `pageContext`."""

    model_config = ConfigDict(extra="ignore", populate_by_name=True)
    id: str = Field(min_length=1, max_length=200, description="The client's chat id (mapped onto our thread).")
    messages: list[UIMessage] = Field(min_length=1, max_length=10_000)
    trigger: Literal["submit-message", "regenerate-message"] = "submit-message"
    message_id: str | None = Field(default=None, alias="messageId")
    agent: str | None = Field(default=None, min_length=1)
    persona: str | None = Field(default=None, min_length=1)
    page_context: dict[str, Any] | None = Field(default=None, alias="pageContext")


def _user_text(message: UIMessage) -> str:
    return "".join(p.text or "" for p in message.parts if p.type == "text")


def _decisions(message: UIMessage) -> list[ClientDecision]:
    out: list[ClientDecision] = []
    for part in message.parts:
        if part.state != "approval-responded" or part.approval is None:
            continue
        if part.approval.approved is None:
            raise InvalidRequestError(f"approval {part.approval.id!r} has no `approved` answer")
        out.append(
            ClientDecision(
                approval_id=part.approval.id,
                tool_call_id=part.tool_call_id,
                approved=part.approval.approved,
                reason=part.approval.reason,
                arguments=part.input,
            )
        )
    return out


@resolves_own_identity
async def ai_sdk_chat(
    request: Request,
    context: ContextDep,
    identity: Annotated[ChatIdentity, Depends(chat_identity)],
    body: AISDKChatRequest,
) -> Response:
    """A new user message starts a run; approval responses continue the parked run (module docstring).

    The caller's identity comes from the named agent's own resolver when it has one (as `POST /chat`).
    """
    service, caller = context.service, Caller(identity.actor, request)
    agent = identity.agent or service.agent(body.agent)  # an unknown name raises the 404
    if body.trigger == "regenerate-message":
        raise InvalidRequestError("regenerate is not supported: send a new user message instead")
    target = await map_thread(service, caller, body.id)
    last = body.messages[-1]
    if last.role == "user":
        started = await service.chat(
            caller,
            _user_text(last),
            thread_id=target.thread_id,
            new_thread_id=None if target.thread_id else target.new_thread_id,
            agent=agent.name,
            persona=body.persona,
            page_context=body.page_context,
        )
        encoder = UIMessageStreamEncoder(run_id=started.run_id, thread_id=started.thread_id)
        events = await service.subscribe(caller, started)
        return stream_response(
            service, caller, encoder, started.run_id, started.thread_id, events, ping_seconds=context.ping_seconds
        )
    decisions = _decisions(last)
    if not decisions:
        raise InvalidRequestError("the last message must be a user message or carry approval responses")
    verified = await verify_decisions(service, caller, target.thread_id, decisions)
    decided = await apply_decisions(service, caller, verified)
    run_id = verified[0].run_id
    after = max((v.park.id for v in verified if v.park is not None), default=None)
    known = {p.tool_call_id for p in last.parts if p.tool_call_id}
    encoder = UIMessageStreamEncoder(run_id=run_id, thread_id=target.id, known_tool_calls=known, decisions=decided)
    events = await service.subscribe(caller, run_id, after=after)
    return stream_response(service, caller, encoder, run_id, target.id, events, ping_seconds=context.ping_seconds)


async def ai_sdk_resume(
    context: ContextDep,
    caller: CallerDep,
    chat_id: Annotated[str, Path(min_length=1, max_length=200)],
    last_event_id: Annotated[
        str | None,
        Header(alias="Last-Event-ID", description="Resume after this frame id; replay the run without it."),
    ] = None,
) -> Response:
    """Replay the chat's run in flight (the AI SDK resets the message on a replay), then follow it live;
    204 when nothing is in flight."""
    service = context.service
    after = parse_last_event_id(last_event_id)
    target = await map_thread(service, caller, chat_id)
    run = await active_run(service, caller, target)
    if run is None:
        return Response(status_code=204)
    encoder = UIMessageStreamEncoder(run_id=run.id, thread_id=run.thread_id)
    events = await service.subscribe(caller, run.id, after=after)
    return stream_response(service, caller, encoder, run.id, run.thread_id, events, ping_seconds=context.ping_seconds)


def _tool_part(call: ToolCall, row: ToolCallRecord | None) -> dict[str, Any]:
    """A stored tool call as the UI tool part the stream would have left (the audit row's redacted input)."""
    part: dict[str, Any] = {
        "type": f"tool-{call.name}",
        "toolCallId": call.id,
        "input": row.input if row is not None else call.input,
    }
    status = row.status if row is not None else "started"
    if status == "executed":
        part.update(state="output-available", output=row.output if row is not None else None)
    elif status == "pending_approval" and row is not None:
        part.update(state="approval-requested", approval={"id": approval_id(row.run_id, call.id)})
    elif status == "rejected" and row is not None:
        part.update(state="output-denied", approval={"id": approval_id(row.run_id, call.id), "approved": False})
    elif status in ("failed", "expired", "unknown_after_crash"):
        part.update(state="output-error", errorText=(row.error if row is not None else None) or status)
    else:
        part["state"] = "input-available"
    return part


def ui_messages(messages: list[MessageRecord], calls: list[ToolCallRecord]) -> list[dict[str, Any]]:
    """Our stored thread as AI SDK UI messages: one assistant message per run (its id is the run id, as
    streamed), text parts and tool parts in order, a pending approval as `approval-requested`."""
    rows = {(c.run_id, c.id): c for c in calls}
    out: list[dict[str, Any]] = []
    current: dict[str, Any] | None = None
    for m in messages:
        if m.role == "user":
            out.append({"id": m.id, "role": "user", "parts": [{"type": "text", "text": m.content}]})
            current = None
            continue
        key = m.run_id or m.id
        if current is None or current["id"] != key:
            current = {
                "id": key,
                "role": "assistant",
                "metadata": {"runId": m.run_id, "threadId": m.thread_id},
                "parts": [{"type": "step-start"}],
            }
            out.append(current)
        if m.content:
            current["parts"].append({"type": "text", "text": m.content, "state": "done"})
        for call in m.tool_calls or ():
            current["parts"].append(_tool_part(call, rows.get((m.run_id or "", call.id))))
    return out


async def ai_sdk_messages(
    context: ContextDep,
    caller: CallerDep,
    chat_id: Annotated[str, Path(min_length=1, max_length=200)],
) -> list[dict[str, Any]]:
    """The chat's history from our store as UI messages, for `useChat({messages})` after a reload
    (`[]` for a chat that has none yet)."""
    service = context.service
    target = await map_thread(service, caller, chat_id)
    if target.thread_id is None:
        return []
    detail = await service.get_thread(caller, target.thread_id)
    return ui_messages(detail.messages, detail.tool_calls)


def add_routes(router: APIRouter) -> None:
    """Add `POST /ai-sdk/chat`, `GET /ai-sdk/chat/{chat_id}/stream` and `GET /ai-sdk/chat/{chat_id}/messages`."""
    router.post(
        "/ai-sdk/chat",
        summary="Chat with the AI SDK's useChat (UI message stream v1)",
        tags=["frontends"],
        response_class=Response,
        responses={200: _SSE_200, **error_responses(403, 404, 409, 413, 422, 429)},
    )(ai_sdk_chat)
    router.get(
        "/ai-sdk/chat/{chat_id}/stream",
        summary="Re-attach useChat to the chat's run in flight (resume: true)",
        tags=["frontends"],
        response_class=Response,
        responses={
            200: _SSE_200,
            204: {"description": "The chat has no run in flight"},
            **error_responses(403, 404, 422),
        },
    )(ai_sdk_resume)
    router.get(
        "/ai-sdk/chat/{chat_id}/messages",
        summary="The chat's history from our store as AI SDK UI messages",
        tags=["frontends"],
        response_model=list[dict[str, Any]],
        responses=error_responses(403, 404, 422),
    )(ai_sdk_messages)
