"""Frames -> the AI SDK UI message stream, v1 (`x-vercel-ai-ui-message-stream: v1`, the v6 chunk set).

What `useChat` / `DefaultChatTransport` + `readUIMessageStream` read. One assistant UI message per run
(its id is the run id), SSE `data: <json>` chunks ending with `data: [DONE]`:

    start {messageId, messageMetadata: {runId, threadId}}   start-step
    TextFrame          text-start {id} (once per text segment) + text-delta {id, delta}; text-end closes it
    ToolFrame started  tool-input-available {toolCallId, toolName, input}
      pending_approval tool-input-available + tool-approval-request {approvalId, toolCallId}
      executed         tool-output-available {toolCallId, output}
      rejected         tool-output-denied {toolCallId}
      expired, failed  tool-output-error {toolCallId, errorText} (tool-input-error when refused up front)
    ComponentFrame     data-<name> {id, data}: a component with an id (the frame's, else a string "id"
                       in its data) replaces the earlier part with that id (the AI SDK's own rule)
    AgentFrame         data-agent {id, data: {agent, text}}: one part per sub-agent run, replaced as it grows
    ErrorFrame         error {errorText}
    end                finish {finishReason, messageMetadata: {runId, threadId, status, usage, costUsd}}

A parked approval ends the response with `finish {finishReason: "tool-calls"}`; the client answers with
`addToolApprovalResponse`, which sends the next request, and the continuation streams the rest of
the SAME run into the same message (its `start` metadata carries `decisions`: who decided, when).
The model gives no reasoning stream through our adapters, so no reasoning chunks are sent.
Every chunk that completes a frame carries that frame's SSE `id:`.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Mapping, Sequence
from typing import Any

from pydantic_core import to_jsonable_python

from agora_agent.streaming.encoding import Parked, RunSummary, approval_id
from agora_agent.streaming.frames import AgentFrame, ComponentFrame, ErrorFrame, StreamEvent, TextFrame, ToolFrame

__all__ = ["UI_MESSAGE_STREAM_HEADERS", "UIMessageStreamEncoder"]

UI_MESSAGE_STREAM_HEADERS: Mapping[str, str] = {"x-vercel-ai-ui-message-stream": "v1"}

_FINISH_REASON = {"completed": "stop", "failed": "error", "cancelled": "other", "running": "other"}


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=to_jsonable_python)


def _sse(chunk: Mapping[str, Any], event_id: int | None = None) -> bytes:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}data: {_json(chunk)}\n\n".encode()


class UIMessageStreamEncoder:
    """One response of the UI message stream. Stateful: create one per response.

    `known_tool_calls` are tool calls the client's message already has (a continuation after an
    approval), so their output can arrive without a new input chunk.
    """

    media_type = "text/event-stream"
    headers = UI_MESSAGE_STREAM_HEADERS
    stops_at_parks = True

    def __init__(
        self,
        *,
        run_id: str,
        thread_id: str,
        known_tool_calls: Collection[str] = (),
        decisions: Sequence[Mapping[str, Any]] = (),
    ) -> None:
        self._decisions = [dict(d) for d in decisions]
        self._run_id = run_id
        self._thread_id = thread_id
        self._text_id: str | None = None
        self._tools: set[str] = set(known_tool_calls)
        self._agent_parts: dict[str, tuple[str, str]] = {}  # agent -> (part id, text so far)
        self._agent_runs = 0
        self._failed = False

    # -- the seam ----------------------------------------------------------------------------------

    def start(self) -> list[bytes]:
        meta: dict[str, Any] = {"runId": self._run_id, "threadId": self._thread_id}
        if self._decisions:  # a continuation after the client's approval answer: who decided, when
            meta["decisions"] = self._decisions
        return [
            _sse({"type": "start", "messageId": self._run_id, "messageMetadata": meta}),
            _sse({"type": "start-step"}),
        ]

    def event(self, event: StreamEvent) -> list[bytes]:
        frame = event.frame
        if isinstance(frame, TextFrame) and self._text_id is not None:
            # The hot path (every token after the first): one format call, the same bytes as `_sse`.
            return [
                f'id: {event.id}\ndata: {{"type":"text-delta","id":{_json(self._text_id)},'
                f'"delta":{_json(frame.delta)}}}\n\n'.encode()
            ]
        chunks = self._chunks(event)
        if not chunks:
            return []
        *head, last = chunks
        return [*(_sse(c) for c in head), _sse(last, event.id)]

    def parked(self, parked: Parked, summary: RunSummary | None) -> list[bytes]:
        pending = {
            "toolCallId": parked.frame.tool_call_id,
            "toolName": parked.frame.name,
            "approvalId": parked.approval_id,
            "approverRoles": list(parked.approver_roles) if parked.approver_roles else None,
            "expiresAt": parked.deadline.isoformat() if parked.deadline else None,
        }
        metadata = {**self._metadata(summary), "status": "awaiting_approval", "pendingApproval": pending}
        return [*self._close_text(), *self._end("tool-calls", metadata)]

    def finish(self, summary: RunSummary | None) -> list[bytes]:
        status = summary.status if summary is not None else "completed"
        reason = "error" if self._failed else _FINISH_REASON.get(status, "other")
        return [*self._close_text(), *self._end(reason, self._metadata(summary))]

    def interrupted(self) -> list[bytes]:
        text = "the stream was interrupted; re-attach to continue"
        return [
            *self._close_text(),
            _sse({"type": "error", "errorText": text}),
            *self._end("error", self._metadata(None)),
        ]

    # -- mapping -----------------------------------------------------------------------------------

    def _metadata(self, summary: RunSummary | None) -> dict[str, Any]:
        meta: dict[str, Any] = {"runId": self._run_id, "threadId": self._thread_id}
        if summary is not None:
            meta.update(status=summary.status, usage=summary.usage(), costUsd=summary.cost_usd)
            if summary.model_id:
                meta["model"] = summary.model_id
        return meta

    def _end(self, reason: str, metadata: dict[str, Any]) -> list[bytes]:
        return [
            _sse({"type": "finish-step"}),
            _sse({"type": "finish", "finishReason": reason, "messageMetadata": metadata}),
            b"data: [DONE]\n\n",
        ]

    def _close_text(self) -> list[bytes]:
        return [_sse(c) for c in self._text_end()]

    def _text_end(self) -> list[dict[str, Any]]:
        if self._text_id is None:
            return []
        chunk = {"type": "text-end", "id": self._text_id}
        self._text_id = None
        return [chunk]

    def _chunks(self, event: StreamEvent) -> list[dict[str, Any]]:
        frame = event.frame
        if isinstance(frame, TextFrame):
            out: list[dict[str, Any]] = []
            if self._text_id is None:
                self._text_id = f"text-{event.id}"
                out.append({"type": "text-start", "id": self._text_id})
            out.append({"type": "text-delta", "id": self._text_id, "delta": frame.delta})
            return out
        closing = self._text_end()
        if isinstance(frame, ToolFrame):
            return closing + self._tool(frame)
        if isinstance(frame, ComponentFrame):
            data = frame.data
            # The component's own id (genui's ComponentFrame.id, else a string `id` in its data) makes a later
            # frame replace the part, as the AI SDK does for data parts with the same id.
            own = frame.id or (data.get("id") if isinstance(data, dict) else None)
            part_id = own if isinstance(own, str) and own else f"c{event.id}"
            return [*closing, {"type": f"data-{frame.name}", "id": part_id, "data": data}]
        if isinstance(frame, AgentFrame):
            part_id, text = self._agent_parts.get(frame.agent, ("", ""))
            if not part_id:
                self._agent_runs += 1
                part_id = f"agent-{self._agent_runs}"
            text += frame.delta
            self._agent_parts[frame.agent] = (part_id, text)
            return [*closing, {"type": "data-agent", "id": part_id, "data": {"agent": frame.agent, "text": text}}]
        if isinstance(frame, ErrorFrame):
            self._failed = True
            return [*closing, {"type": "error", "errorText": frame.message}]
        return closing

    def _tool(self, frame: ToolFrame) -> list[dict[str, Any]]:
        call_id = frame.tool_call_id
        out: list[dict[str, Any]] = []

        def ensure_input() -> None:
            if call_id not in self._tools:
                self._tools.add(call_id)
                out.append(self._input(frame))

        status = frame.status
        if status == "started":
            ensure_input()
        elif status == "pending_approval":
            ensure_input()
            if frame.agent is None:  # a nested sub-agent's actions are declined, never asked
                out.append(
                    {
                        "type": "tool-approval-request",
                        "approvalId": approval_id(self._run_id, call_id),
                        "toolCallId": call_id,
                    }
                )
        elif status == "approved":
            ensure_input()
        elif status == "executed":
            ensure_input()
            out.append({"type": "tool-output-available", "toolCallId": call_id, "output": frame.output})
        elif status == "rejected":
            ensure_input()
            out.append({"type": "tool-output-denied", "toolCallId": call_id})
        elif status == "failed" and call_id not in self._tools:
            # Refused before it ran (unknown, forbidden, bad input): the input itself was the problem.
            self._tools.add(call_id)
            out.append(
                {
                    "type": "tool-input-error",
                    "toolCallId": call_id,
                    "toolName": frame.name,
                    "input": frame.input,
                    "errorText": frame.error or "tool call failed",
                }
            )
        else:  # failed after it started, or expired
            ensure_input()
            text = frame.error or ("approval expired" if status == "expired" else "tool call failed")
            out.append({"type": "tool-output-error", "toolCallId": call_id, "errorText": text})
        if frame.agent is not None:
            for chunk in out:
                if chunk["type"] == "tool-input-available":
                    chunk["title"] = f"{frame.agent}: {frame.name}"
        return out

    def _input(self, frame: ToolFrame) -> dict[str, Any]:
        return {
            "type": "tool-input-available",
            "toolCallId": frame.tool_call_id,
            "toolName": frame.name,
            "input": frame.input if frame.input is not None else {},
        }
