"""The AG-UI routes: `POST {prefix}/ag-ui` (what `@ag-ui/client`'s `HttpAgent.runAgent` sends) and
`POST {prefix}/ag-ui/connect` (`connectAgent`: re-attach to the thread's run in flight).

The body is a `RunAgentInput` (`ag-ui-protocol`'s model; camelCase or snake_case). `threadId` names
the chat (mapped onto our thread, see `client_protocols`); `forwardedProps` may carry `agent`,
`persona` and `pageContext`. Then:

- `resume` present: each entry answers an interrupt of an earlier run (`RUN_FINISHED.outcome.interrupts`).
  `status: "resolved"` with `payload: {approved: bool, reason?}` approves or rejects; `"cancelled"`
  rejects. Each is a request to our approvals check (the tool call's arguments in the client's
  `messages`, when present, must be the parked call's); refused -> 4xx JSON, nothing changes; accepted ->
  this new AG-UI run streams the rest of OUR run (the result, then the model's answer).
- otherwise the last message must be a user message: its text starts a run on our thread, whose
  history comes from our store (the client's earlier messages are not read). Same checks and order as
  `POST /chat`: 401 -> 422 -> 404 agent -> 404/403 thread -> 429 budget -> the stream.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from ag_ui.core import (
    AssistantMessage,
    CustomEvent,
    FunctionCall,
    MessagesSnapshotEvent,
    RunAgentInput,
    ToolMessage,
    UserMessage,
)
from ag_ui.core import ToolCall as AguiToolCall
from fastapi import APIRouter, Depends, Header, Request
from pydantic_core import to_jsonable_python
from starlette.responses import Response

from agora_agent.errors import InvalidRequestError
from agora_agent.governance.gate import Caller
from agora_agent.records import MessageRecord, ToolCallRecord
from agora_agent.streaming.agui import AGUIEncoder
from agora_agent.web.client_protocols import (
    NO_ARGUMENTS,
    ClientDecision,
    active_run,
    apply_decisions,
    caller_for,
    map_thread,
    stream_response,
    verify_decisions,
)
from agora_agent.web.deps import ContextDep, ServiceDep, error_responses
from agora_agent.web.route_class import resolves_own_identity
from agora_agent.web.routes.chat import parse_last_event_id

__all__ = ["add_routes", "agui_connect", "agui_identity", "agui_messages", "agui_run"]

_SSE_200: dict[str, Any] = {
    "content": {"text/event-stream": {"schema": {"type": "string"}}},
    "description": "AG-UI events (SSE)",
}


def _props(raw: Any) -> dict[str, Any]:
    props = raw.get("forwardedProps") if isinstance(raw, dict) else None
    if props is None and isinstance(raw, dict):
        props = raw.get("forwarded_props")
    return props if isinstance(props, dict) else {}


def _opt_str(props: dict[str, Any], key: str) -> str | None:
    value = props.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise InvalidRequestError(f"forwardedProps.{key} must be a non-empty string")
    return value


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    parts = content if isinstance(content, list) else []
    return "".join(getattr(p, "text", "") or "" for p in parts if getattr(p, "type", None) == "text")


def _client_arguments(messages: list[Any], tool_call_id: str) -> Any:
    """The client's copy of a tool call's arguments (from its assistant messages), if it has one."""
    for message in messages:
        for call in getattr(message, "tool_calls", None) or ():
            if call.id == tool_call_id:
                try:
                    return json.loads(call.function.arguments or "{}")
                except ValueError as exc:
                    raise InvalidRequestError(f"tool call {tool_call_id}: arguments are not JSON") from exc
    return NO_ARGUMENTS


async def agui_identity(request: Request, service: ServiceDep) -> Caller:
    """The caller, with the resolver of the agent `forwardedProps.agent` names (else the app's), before
    FastAPI validates the body: an anonymous caller gets 401, never a 422."""
    try:
        raw = json.loads(await request.body() or b"null")
    except ValueError:
        raw = None
    name = _props(raw).get("agent")
    return await caller_for(service, request, name if isinstance(name, str) else None)


AGUICallerDep = Annotated[Caller, Depends(agui_identity)]


@resolves_own_identity
async def agui_run(context: ContextDep, caller: AGUICallerDep, body: RunAgentInput) -> Response:
    """A user message starts a run; `resume` answers its approval interrupts (module docstring)."""
    service = context.service
    props = body.forwarded_props if isinstance(body.forwarded_props, dict) else {}
    agent = _opt_str(props, "agent")
    persona = _opt_str(props, "persona")
    page_context = props.get("pageContext")
    if page_context is not None and not isinstance(page_context, dict):
        raise InvalidRequestError("forwardedProps.pageContext must be an object")
    service.agent(agent)  # unknown agent -> 404
    target = await map_thread(service, caller, body.thread_id)
    if body.resume:
        verified = await verify_decisions(service, caller, target.thread_id, _decisions(body))
        decided = await apply_decisions(service, caller, verified)
        run_id = verified[0].run_id
        after = max((v.park.id for v in verified if v.park is not None), default=None)
        encoder = AGUIEncoder(
            thread_id=body.thread_id,
            run_id=body.run_id,
            agora_run_id=run_id,
            agora_thread_id=target.id,
            known_tool_calls={v.tool_call_id for v in verified},
            preamble=[CustomEvent(name="agora.decision", value=d) for d in decided],
        )
        events = await service.subscribe(caller, run_id, after=after)
        return stream_response(service, caller, encoder, run_id, target.id, events, ping_seconds=context.ping_seconds)
    last = body.messages[-1] if body.messages else None
    if last is None or last.role != "user":
        raise InvalidRequestError("the last message must be a user message (or send `resume` for interrupts)")
    started = await service.chat(
        caller,
        _text(last.content),
        thread_id=target.thread_id,
        new_thread_id=None if target.thread_id else target.new_thread_id,
        agent=agent,
        persona=persona,
        page_context=page_context,
    )
    encoder = AGUIEncoder(
        thread_id=body.thread_id,
        run_id=body.run_id,
        agora_run_id=started.run_id,
        agora_thread_id=started.thread_id,
    )
    events = await service.subscribe(caller, started)
    return stream_response(
        service, caller, encoder, started.run_id, started.thread_id, events, ping_seconds=context.ping_seconds
    )


@resolves_own_identity
async def agui_connect(
    context: ContextDep,
    caller: AGUICallerDep,
    body: RunAgentInput,
    last_event_id: Annotated[
        str | None,
        Header(alias="Last-Event-ID", description="Resume after this frame id; replay the run without it."),
    ] = None,
) -> Response:
    """The thread's history from our store (MESSAGES_SNAPSHOT), then its run in flight replayed (after
    `Last-Event-ID` when given) and followed; with nothing in flight the run ends after the snapshot."""
    service = context.service
    after = parse_last_event_id(last_event_id)
    target = await map_thread(service, caller, body.thread_id)
    run = await active_run(service, caller, target)
    detail = await service.get_thread(caller, target.thread_id) if target.thread_id else None
    history = agui_messages(detail.messages, detail.tool_calls, live_run=run.id if run else None) if detail else []
    snapshot = MessagesSnapshotEvent(messages=history)
    if run is None:
        empty = AGUIEncoder(
            thread_id=body.thread_id,
            run_id=body.run_id,
            agora_run_id="",
            agora_thread_id=target.id,
            preamble=[snapshot],
        )
        return Response(
            b"".join([*empty.start()[:2], *empty.finish(None)]),
            media_type="text/event-stream",
            headers={"Cache-Control": "no-cache"},
        )
    encoder = AGUIEncoder(
        thread_id=body.thread_id,
        run_id=body.run_id,
        agora_run_id=run.id,
        agora_thread_id=run.thread_id,
        preamble=[snapshot],
    )
    events = await service.subscribe(caller, run.id, after=after)
    return stream_response(service, caller, encoder, run.id, run.thread_id, events, ping_seconds=context.ping_seconds)


def _result(row: ToolCallRecord) -> str | None:
    if row.status == "executed":
        return row.output if isinstance(row.output, str) else _json(row.output)
    if row.status in ("rejected", "expired"):
        return _json({"rejected": True, "status": row.status, "reason": row.error})
    if row.status in ("failed", "unknown_after_crash"):
        return _json({"error": row.error or row.status})
    return None  # started or pending: no result yet


def agui_messages(
    messages: list[MessageRecord], calls: list[ToolCallRecord], *, live_run: str | None
) -> list[AssistantMessage | ToolMessage | UserMessage]:
    """Our stored thread as AG-UI messages (tool results after the call that asked for them). The run
    in flight's assistant messages are left out: its replay follows the snapshot."""
    rows = {(c.run_id, c.id): c for c in calls}
    out: list[AssistantMessage | ToolMessage | UserMessage] = []
    for m in messages:
        if m.role == "user":
            out.append(UserMessage(id=m.id, role="user", content=m.content))
            continue
        if live_run is not None and m.run_id == live_run:
            continue
        tool_calls = [
            AguiToolCall(id=c.id, type="function", function=FunctionCall(name=c.name, arguments=_json(c.input)))
            for c in m.tool_calls or ()
        ]
        out.append(
            AssistantMessage(id=m.id, role="assistant", content=m.content or None, tool_calls=tool_calls or None)
        )
        for c in m.tool_calls or ():
            row = rows.get((m.run_id or "", c.id))
            content = _result(row) if row is not None else None
            if content is not None:
                out.append(ToolMessage(id=f"{c.id}-result", role="tool", content=content, tool_call_id=c.id))
    return out


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=to_jsonable_python)


def _decisions(body: RunAgentInput) -> list[ClientDecision]:
    decisions: list[ClientDecision] = []
    for entry in body.resume or ():
        payload = entry.payload if isinstance(entry.payload, dict) else {}
        answer = False if entry.status == "cancelled" else payload.get("approved")
        if not isinstance(answer, bool):
            raise InvalidRequestError(f"resume {entry.interrupt_id!r}: payload.approved must be true or false")
        reason = payload.get("reason")
        if entry.status == "cancelled" and reason is None:
            reason = "cancelled by the user"
        if reason is not None and not isinstance(reason, str):
            raise InvalidRequestError(f"resume {entry.interrupt_id!r}: payload.reason must be a string")
        call_id = entry.interrupt_id.partition(":")[2] or None
        arguments = payload.get("arguments", NO_ARGUMENTS)
        if arguments is NO_ARGUMENTS and call_id is not None:
            arguments = _client_arguments(body.messages, call_id)
        decisions.append(
            ClientDecision(
                approval_id=entry.interrupt_id, tool_call_id=None, approved=answer, reason=reason, arguments=arguments
            )
        )
    return decisions


def add_routes(router: APIRouter) -> None:
    """Add `POST /ag-ui` and `POST /ag-ui/connect`."""
    responses: dict[int | str, dict[str, Any]] = {200: _SSE_200, **error_responses(403, 404, 409, 413, 422, 429)}
    router.post(
        "/ag-ui",
        summary="Run the agent for an AG-UI client (RunAgentInput -> AG-UI events)",
        tags=["frontends"],
        response_class=Response,
        responses=responses,
    )(agui_run)
    router.post(
        "/ag-ui/connect",
        summary="Re-attach an AG-UI client to the thread's run in flight (connectAgent)",
        tags=["frontends"],
        response_class=Response,
        responses={200: _SSE_200, **error_responses(403, 404, 413, 422)},
    )(agui_connect)
