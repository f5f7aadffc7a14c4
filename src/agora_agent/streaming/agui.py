"""Frames -> AG-UI events (`ag-ui-protocol`'s models and encoder; what `@ag-ui/client`'s `HttpAgent` reads).

One AG-UI run per response, `data: <camelCase json>` SSE events:

    RUN_STARTED {threadId, runId}            (the client's ids) + CUSTOM "agora.run" {runId, threadId} (ours)
    TextFrame        TEXT_MESSAGE_START {messageId, role: assistant} once per segment + TEXT_MESSAGE_CONTENT
    ToolFrame        TOOL_CALL_START {toolCallId, toolCallName, parentMessageId} + TOOL_CALL_ARGS (the
                     validated input as JSON) + TOOL_CALL_END; its result (executed, rejected, expired,
                     failed) -> TOOL_CALL_RESULT {messageId, toolCallId, content, role: tool}
    pending_approval the call, then RUN_FINISHED {outcome: {type: interrupt, interrupts: [{id, reason:
                     "tool_approval", toolCallId, message, responseSchema, expiresAt, metadata}]}}: the
                     client answers with a new run whose `resume` names the interrupt
    ComponentFrame   CUSTOM {name: "agora.component", value: {name, data, id?}}
    AgentFrame       SUBAGENT_STARTED {subagentRunId, name, parentToolCallId} then the sub-agent's text
                     and tool calls carry `subagentRunId`; SUBAGENT_FINISHED / SUBAGENT_ERROR when the
                     delegation call ends
    ErrorFrame       RUN_ERROR {message, code} (nothing may follow it)
    end              CUSTOM "agora.usage" {status, usage, costUsd} + RUN_FINISHED {outcome, usage}

Every event that completes a frame carries that frame's SSE `id:`.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from ag_ui.core import (
    BaseEvent,
    CustomEvent,
    Interrupt,
    RunErrorEvent,
    RunFinishedCancelledOutcome,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunFinishedSuccessOutcome,
    RunStartedEvent,
    SubagentErrorEvent,
    SubagentFinishedEvent,
    SubagentStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from pydantic_core import to_jsonable_python

from agora_agent.streaming.encoding import Parked, RunSummary
from agora_agent.streaming.frames import AgentFrame, ComponentFrame, ErrorFrame, StreamEvent, TextFrame, ToolFrame

__all__ = ["APPROVAL_RESPONSE_SCHEMA", "AGUIEncoder"]

APPROVAL_RESPONSE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"approved": {"type": "boolean"}, "reason": {"type": "string"}},
    "required": ["approved"],
}
"""What a `resume` entry's `payload` must look like to answer an approval interrupt."""


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=to_jsonable_python)


def _sse(event: BaseEvent, event_id: int | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}data: {event.model_dump_json(by_alias=True)}\n\n".encode()


class AGUIEncoder:
    """One AG-UI run's events. Stateful: create one per response.

    `thread_id`/`run_id` are the client's (`RunAgentInput`); `agora_run_id`/`agora_thread_id` ours.
    `known_tool_calls` were announced in an earlier response (a resumed run), so only results follow.
    `preamble` events go right after RUN_STARTED (a re-attach sends the stored history as MESSAGES_SNAPSHOT).
    """

    media_type = "text/event-stream"
    headers: Mapping[str, str] = {}
    stops_at_parks = True

    def __init__(
        self,
        *,
        thread_id: str,
        run_id: str,
        agora_run_id: str,
        agora_thread_id: str,
        known_tool_calls: Collection[str] = (),
        preamble: Sequence[BaseEvent] = (),
    ) -> None:
        self._preamble = list(preamble)
        self._thread_id = thread_id
        self._run_id = run_id
        self._agora_run_id = agora_run_id
        self._agora_thread_id = agora_thread_id
        self._tools: set[str] = set(known_tool_calls)
        self._text: dict[str | None, str] = {}  # lane (None = the agent, else a subagentRunId) -> open message id
        self._parent_message: str | None = None
        self._delegation: str | None = None  # the open delegation call id
        self._subagent: tuple[str, str] | None = None  # (subagentRunId, agent) of the open sub-agent
        self._subagents = 0
        self._messages = 0
        self._errored = False

    # -- the seam ----------------------------------------------------------------------------------

    def start(self) -> list[bytes]:
        ours = {"runId": self._agora_run_id, "threadId": self._agora_thread_id}
        return [
            _sse(RunStartedEvent(thread_id=self._thread_id, run_id=self._run_id)),
            *(_sse(e) for e in self._preamble),
            _sse(CustomEvent(name="agora.run", value=ours)),
        ]

    def event(self, event: StreamEvent) -> list[bytes]:
        if self._errored:
            return []
        frame = event.frame
        message_id = self._text.get(None)
        if isinstance(frame, TextFrame) and message_id is not None and self._subagent is None:
            # The hot path (every token after the first): one format call, the same bytes as the model's dump.
            return [
                f'id: {event.id}\ndata: {{"type":"TEXT_MESSAGE_CONTENT","messageId":{_json(message_id)},'
                f'"delta":{_json(frame.delta)}}}\n\n'.encode()
            ]
        events = self._events(event)
        if not events:
            return []
        *head, last = events
        return [*(_sse(e) for e in head), _sse(last, event.id)]

    def parked(self, parked: Parked, summary: RunSummary | None) -> list[bytes]:
        if self._errored:
            return []
        frame = parked.frame
        metadata: dict[str, Any] = {"runId": self._agora_run_id, "toolName": frame.name, "input": frame.input}
        if parked.approver_roles:
            metadata["approverRoles"] = list(parked.approver_roles)
        interrupt = Interrupt(
            id=parked.approval_id,
            reason="tool_approval",
            message=f'Approve "{frame.name}"?',
            tool_call_id=frame.tool_call_id,
            response_schema=APPROVAL_RESPONSE_SCHEMA,
            expires_at=parked.deadline.isoformat() if parked.deadline else None,
            metadata=metadata,
        )
        outcome = RunFinishedInterruptOutcome(type="interrupt", interrupts=[interrupt])
        return [*(_sse(e) for e in self._close_all()), *self._finished(outcome, summary)]

    def finish(self, summary: RunSummary | None) -> list[bytes]:
        if self._errored:
            return []
        status = summary.status if summary is not None else "completed"
        outcome: RunFinishedSuccessOutcome | RunFinishedCancelledOutcome = (
            RunFinishedCancelledOutcome(type="cancelled")
            if status == "cancelled"
            else RunFinishedSuccessOutcome(type="success")
        )
        return [*(_sse(e) for e in self._close_all()), *self._finished(outcome, summary)]

    def interrupted(self) -> list[bytes]:
        if self._errored:
            return []
        self._errored = True
        text = "the stream was interrupted; re-attach to continue"
        return [_sse(RunErrorEvent(message=text, code="stream_interrupted"))]

    # -- mapping -----------------------------------------------------------------------------------

    def _finished(self, outcome: Any, summary: RunSummary | None) -> list[bytes]:
        usage = None
        out: list[bytes] = []
        if summary is not None:
            usage = [
                TokenUsage(
                    model=summary.model_id,
                    input_tokens=summary.input_tokens,
                    output_tokens=summary.output_tokens,
                    total_tokens=summary.input_tokens + summary.output_tokens,
                )
            ]
            value = {"status": summary.status, "usage": summary.usage(), "costUsd": summary.cost_usd}
            out.append(_sse(CustomEvent(name="agora.usage", value=value)))
        out.append(_sse(RunFinishedEvent(thread_id=self._thread_id, run_id=self._run_id, outcome=outcome, usage=usage)))
        return out

    def _close_text(self, lane: str | None) -> list[BaseEvent]:
        message_id = self._text.pop(lane, None)
        if message_id is None:
            return []
        return [TextMessageEndEvent(message_id=message_id, subagent_run_id=lane)]

    def _close_subagent(self, *, error: str | None = None) -> list[BaseEvent]:
        if self._subagent is None:
            return []
        sub_id, _agent = self._subagent
        self._subagent = None
        out = self._close_text(sub_id)
        if error is not None:
            out.append(SubagentErrorEvent(subagent_run_id=sub_id, message=error))
        else:
            out.append(SubagentFinishedEvent(subagent_run_id=sub_id))
        return out

    def _close_all(self) -> list[BaseEvent]:
        return [*self._close_subagent(), *self._close_text(None)]

    def _new_message_id(self) -> str:
        self._messages += 1
        return f"{self._agora_run_id}-m{self._messages}"

    def _open_subagent(self, agent: str) -> list[BaseEvent]:
        if self._subagent is not None and self._subagent[1] == agent:
            return []
        out = self._close_subagent()
        self._subagents += 1
        sub_id = f"{self._agora_run_id}-sub{self._subagents}"
        self._subagent = (sub_id, agent)
        out.append(SubagentStartedEvent(subagent_run_id=sub_id, name=agent, parent_tool_call_id=self._delegation))
        return out

    def _events(self, event: StreamEvent) -> list[BaseEvent]:
        frame = event.frame
        if isinstance(frame, TextFrame):
            out = self._close_subagent()
            message_id = self._text.get(None)
            if message_id is None:
                message_id = self._text[None] = self._parent_message = self._new_message_id()
                out.append(TextMessageStartEvent(message_id=message_id, role="assistant"))
            out.append(TextMessageContentEvent(message_id=message_id, delta=frame.delta))
            return out
        if isinstance(frame, AgentFrame):
            out = [*self._close_text(None), *self._open_subagent(frame.agent)]
            assert self._subagent is not None
            lane = self._subagent[0]
            message_id = self._text.get(lane)
            if message_id is None:
                message_id = self._text[lane] = self._new_message_id()
                out.append(TextMessageStartEvent(message_id=message_id, role="assistant", subagent_run_id=lane))
            out.append(TextMessageContentEvent(message_id=message_id, delta=frame.delta, subagent_run_id=lane))
            return out
        if isinstance(frame, ToolFrame):
            return self._tool(frame)
        if isinstance(frame, ComponentFrame):
            value: dict[str, Any] = {"name": frame.name, "data": frame.data}
            component_id = frame.id  # a later component with this id replaces it
            if component_id is not None:
                value["id"] = component_id
            return [CustomEvent(name="agora.component", value=value)]
        if isinstance(frame, ErrorFrame):
            self._errored = True
            return [RunErrorEvent(message=frame.message, code=frame.code)]
        return []

    def _tool(self, frame: ToolFrame) -> list[BaseEvent]:
        call_id = frame.tool_call_id
        nested = frame.agent is not None
        out: list[BaseEvent] = []
        lane: str | None = None
        if nested:
            out += self._close_text(None)
            out += self._open_subagent(frame.agent or "")
            assert self._subagent is not None
            lane = self._subagent[0]
            out += self._close_text(lane)
        else:
            if not (frame.kind == "agent" and frame.status != "started"):
                out += self._close_subagent()
            out += self._close_text(None)
        if call_id not in self._tools:
            self._tools.add(call_id)
            parent = None
            if not nested:
                parent = self._parent_message or self._new_message_id()
                self._parent_message = parent
            out.append(
                ToolCallStartEvent(
                    tool_call_id=call_id, tool_call_name=frame.name, parent_message_id=parent, subagent_run_id=lane
                )
            )
            args = frame.input if frame.input is not None else {}
            out.append(ToolCallArgsEvent(tool_call_id=call_id, delta=_json(args), subagent_run_id=lane))
            out.append(ToolCallEndEvent(tool_call_id=call_id, subagent_run_id=lane))
        status = frame.status
        if not nested and frame.kind == "agent":
            if status == "started":
                self._delegation = call_id
            else:
                out += self._close_subagent(error=frame.error if status == "failed" else None)
                self._delegation = None
        result: Any
        if status == "executed":
            result = frame.output
        elif status in ("rejected", "expired"):
            result = {"rejected": True, "status": status, "reason": frame.error}
        elif status == "failed":
            result = {"error": frame.error or "tool call failed"}
        else:  # started, pending_approval, approved: no result yet
            return out
        content = result if isinstance(result, str) else _json(result)
        out.append(
            ToolCallResultEvent(
                message_id=f"{call_id}-result", tool_call_id=call_id, content=content, role="tool", subagent_run_id=lane
            )
        )
        return out
