"""What the AI SDK and AG-UI routes share: the caller, the client's chat id -> OUR thread, a decision the
client carries -> OUR approvals check, and the run's stream through the encoder seam.

- Identity: the router's resolver, then the agent's own when the body names an agent that has one, which
  must agree with it (as `POST /chat`); 401/403 before anything else is looked at.
- Threads: a client names its chat (`id` in the AI SDK body, `threadId` in AG-UI). When that is one of
  our thread ids it is that thread (ownership: 404/403). Otherwise it maps to `ui-<sha256(actor, id)>`,
  created on first use, so a client id never reaches another user's thread. The history the model sees
  is always OUR store's; the client's copy of the messages is read only for the new user text and for
  the decisions it carries.
- Decisions: an approval answer in a client's message history is a REQUEST. It must name a pending
  approval of a run in this thread that the caller owns (or may govern), with the same arguments as
  the parked call; then `AgentService.approve/reject` applies its own rules (requester or privileged,
  `approver_roles`, not decided yet). Any refusal is a 4xx JSON answer and changes nothing.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
from collections.abc import AsyncIterator, Sequence
from dataclasses import dataclass
from typing import Any

from fastapi import Request
from starlette.responses import Response

from agora_agent.errors import ConflictError, InvalidRequestError, NotFoundError
from agora_agent.governance.gate import Caller
from agora_agent.records import RunRecord
from agora_agent.service import AgentService
from agora_agent.streaming.encoding import Parked, RunSummary, StreamEncoder, approval_id, encode_run, parse_approval_id
from agora_agent.streaming.frames import StreamEvent, ToolFrame
from agora_agent.tools.registry import args_hash
from agora_agent.web.access import authenticate_for_agent
from agora_agent.web.route_class import set_actor
from agora_agent.web.sse import event_source_response

__all__ = [
    "NO_ARGUMENTS",
    "ClientDecision",
    "ThreadTarget",
    "VerifiedDecision",
    "active_run",
    "apply_decisions",
    "caller_for",
    "map_thread",
    "stream_response",
    "verify_decisions",
]

logger = logging.getLogger("agora_agent.web")

NO_ARGUMENTS: Any = object()
"""`ClientDecision.arguments` when the client sent no copy of the call's arguments."""

_PARK_LOOKUP_SECONDS = 5.0


async def caller_for(service: AgentService, request: Request, agent_name: str | None) -> Caller:
    """The caller (`web.access.authenticate_for_agent`: the router's resolver, refined by the agent's own
    when it has one); recorded on the request."""
    try:
        definition = service.agent(agent_name)
    except NotFoundError:
        definition = None
    actor = await authenticate_for_agent(service.config.actor_resolver, definition, request)
    set_actor(request, actor)
    return Caller(actor, request)


# -- threads ---------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ThreadTarget:
    """Where a client's chat lives: an existing thread, or the id a new one gets."""

    thread_id: str | None
    new_thread_id: str

    @property
    def id(self) -> str:
        return self.thread_id or self.new_thread_id


def derived_thread_id(actor_id: str, client_id: str) -> str:
    """`ui-` + 32 hex of sha256(actor, client id): stable for one user, disjoint between users."""
    digest = hashlib.sha256(f"{actor_id}\x00{client_id}".encode()).hexdigest()
    return f"ui-{digest[:32]}"


async def map_thread(service: AgentService, caller: Caller, client_id: str) -> ThreadTarget:
    """The caller's thread for a client chat id (see the module docstring); ForbiddenError when it is
    someone else's and no grant covers it."""
    for candidate in (client_id, derived_thread_id(caller.actor.id, client_id)):
        try:
            await service.thread_record(caller, candidate)
        except NotFoundError:
            continue
        return ThreadTarget(thread_id=candidate, new_thread_id=candidate)
    return ThreadTarget(thread_id=None, new_thread_id=derived_thread_id(caller.actor.id, client_id))


async def active_run(service: AgentService, caller: Caller, target: ThreadTarget) -> RunRecord | None:
    """The thread's run in flight (its active stream, still running), or None."""
    if target.thread_id is None:
        return None
    thread = await service.thread_record(caller, target.thread_id)
    if thread.active_stream_id is None:
        return None
    try:
        run = await service.get_run(caller, thread.active_stream_id)
    except NotFoundError:
        return None
    return run if run.status == "running" else None


# -- decisions -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ClientDecision:
    """An approval answer as a client sent it (untrusted)."""

    approval_id: str
    tool_call_id: str | None
    approved: bool
    reason: str | None = None
    arguments: Any = NO_ARGUMENTS


@dataclass(frozen=True, slots=True)
class VerifiedDecision:
    """A decision that passed our checks; `park` is the parked call's frame in the run's stream."""

    run_id: str
    tool_call_id: str
    approved: bool
    reason: str | None
    park: StreamEvent | None


def _canonical(value: Any) -> Any:
    """JSON as a JavaScript client re-serializes it: an integral float is an integer (1.0 -> 1)."""
    if isinstance(value, bool) or value is None or isinstance(value, str | int):
        return value
    if isinstance(value, float):
        return int(value) if value.is_integer() else value
    if isinstance(value, dict):
        return {str(k): _canonical(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_canonical(v) for v in value]
    return value


def _same_arguments(client: Any, parked: Any) -> bool:
    dumps = json.dumps
    return dumps(_canonical(client), sort_keys=True) == dumps(_canonical(parked), sort_keys=True)


async def find_park(service: AgentService, caller: Caller, run_id: str, tool_call_id: str) -> StreamEvent | None:
    """The run's `pending_approval` frame for the call (a replay of its stream), or None when this
    process no longer holds the stream. Bounded: the frame follows the approval row within moments."""

    async def scan() -> StreamEvent | None:
        events = await service.subscribe(caller, run_id)
        try:
            async for event in events:
                frame = event.frame
                if (
                    isinstance(frame, ToolFrame)
                    and frame.tool_call_id == tool_call_id
                    and frame.status == "pending_approval"
                    and frame.agent is None
                ):
                    return event
        finally:
            aclose = getattr(events, "aclose", None)
            if aclose is not None:
                await aclose()
        return None

    try:
        return await asyncio.wait_for(scan(), _PARK_LOOKUP_SECONDS)
    except TimeoutError:
        return None


async def verify_decisions(
    service: AgentService, caller: Caller, thread_id: str | None, decisions: Sequence[ClientDecision]
) -> list[VerifiedDecision]:
    """Check every decision before any is applied (see the module docstring). Raises the first refusal:
    NotFoundError (unknown, or not this thread's), ForbiddenError (not the caller's run), ConflictError
    (already decided, or the arguments differ), InvalidRequestError (malformed)."""
    if not decisions:
        raise InvalidRequestError("no approval response to apply")
    verified: list[VerifiedDecision] = []
    for decision in decisions:
        ids = parse_approval_id(decision.approval_id)
        if ids is None:
            raise NotFoundError(f"approval {decision.approval_id!r} not found")
        run_id, tool_call_id = ids
        if decision.tool_call_id is not None and decision.tool_call_id != tool_call_id:
            raise InvalidRequestError(
                f"approval {decision.approval_id!r} does not belong to tool call {decision.tool_call_id!r}"
            )
        run = await service.store.get_run(run_id)  # a run outside this chat is not found, whoever owns it
        if run is None or thread_id is None or run.thread_id != thread_id:
            raise NotFoundError(f"approval {decision.approval_id!r} not found in this chat")
        await service.get_run(caller, run_id)  # ForbiddenError: not the caller's to decide
        approval = await service.store.get_approval(run_id, tool_call_id)
        if approval is None:
            raise NotFoundError(f"approval {decision.approval_id!r} not found")
        if approval.status != "pending":
            raise ConflictError(
                f"tool call already {approval.status}",
                detail={"status": approval.status, "decidedBy": approval.decided_by, "reason": approval.reason},
            )
        park = await find_park(service, caller, run_id, tool_call_id)
        if decision.arguments is not NO_ARGUMENTS:
            if park is not None:
                assert isinstance(park.frame, ToolFrame)
                same = _same_arguments(decision.arguments, park.frame.input) and (
                    args_hash(park.frame.input) == approval.args_hash
                )
            else:
                same = isinstance(decision.arguments, dict) and args_hash(decision.arguments) == approval.args_hash
            if not same:
                raise ConflictError(
                    f"the arguments in this approval differ from the call awaiting approval ({approval.tool_name})"
                )
        verified.append(
            VerifiedDecision(
                run_id=run_id,
                tool_call_id=tool_call_id,
                approved=decision.approved,
                reason=decision.reason,
                park=park,
            )
        )
    if len({v.run_id for v in verified}) > 1:
        raise InvalidRequestError("approval responses for more than one run in one request")
    return verified


async def apply_decisions(
    service: AgentService, caller: Caller, verified: Sequence[VerifiedDecision]
) -> list[dict[str, Any]]:
    """Hand each verified decision to the service, which applies its own rules (403/409 may still come).

    Returns the recorded decisions (`{toolCallId, status, decidedBy, decidedAt, reason}`), which the
    continuation stream carries so the client sees who decided."""
    decided: list[dict[str, Any]] = []
    for v in verified:
        if v.approved:
            record = await service.approve(caller, v.run_id, v.tool_call_id)
        else:
            record = await service.reject(caller, v.run_id, v.tool_call_id, reason=v.reason)
        decided.append(
            {
                "toolCallId": record.tool_call_id,
                "status": record.status,
                "decidedBy": record.decided_by,
                "decidedAt": record.decided_at.isoformat().replace("+00:00", "Z") if record.decided_at else None,
                "reason": record.reason,
            }
        )
    return decided


# -- streaming -------------------------------------------------------------------------------------


async def run_summary(service: AgentService, caller: Caller, run_id: str) -> RunSummary | None:
    """Status, tokens and cost of the run from the store."""
    try:
        run = await service.get_run(caller, run_id)
    except NotFoundError:
        return None
    return RunSummary(
        run_id=run.id,
        thread_id=run.thread_id,
        status=run.status,
        input_tokens=run.input_tokens,
        output_tokens=run.output_tokens,
        cost_usd=run.cost_usd,
        error=run.error,
    )


def stream_response(
    service: AgentService,
    caller: Caller,
    encoder: StreamEncoder,
    run_id: str,
    thread_id: str,
    events: AsyncIterator[StreamEvent],
    *,
    ping_seconds: float,
) -> Response:
    """The SSE response of one encoder over the run's events, with the run/thread headers; its head and the
    encoder's opening events are written as soon as the response is called."""

    async def still_parked(event: StreamEvent) -> Parked | None:
        frame = event.frame
        assert isinstance(frame, ToolFrame)
        approval = await service.store.get_approval(run_id, frame.tool_call_id)
        if approval is None or approval.status != "pending":
            return None  # decided meanwhile (or on a replay): keep streaming
        return Parked(
            frame=frame,
            event_id=event.id,
            approval_id=approval_id(run_id, frame.tool_call_id),
            approver_roles=approval.approver_roles,
            deadline=approval.deadline,
        )

    def on_error(exc: BaseException) -> None:
        logger.error("agora-agent: streaming run %s failed", run_id, exc_info=exc)

    # The encoder's opening events go out with the head at once, before the run's first step (as `POST /chat`
    # sends its `meta` frame): the same bytes, only sooner.
    first = b"".join(encoder.start())
    body = encode_run(
        encoder,
        events,
        still_parked=still_parked,
        summary=lambda: run_summary(service, caller, run_id),
        on_error=on_error,
        started=True,
    )
    headers = {**encoder.headers, "X-Agent-Run-Id": run_id, "X-Agent-Thread-Id": thread_id}
    response: Response = event_source_response(body, headers=headers, ping_seconds=ping_seconds, first=first or None)
    return response
