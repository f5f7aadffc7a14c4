"""Wire models of the HTTP API: request bodies and responses, camelCase on the wire.

Field names are exactly the reference's (`runId`, `threadId`, `toolCallId`, `usedTokens`,
`inputPricePer1m`, …) so the reference's browser client and dashboard work unchanged. Python code
builds them with snake_case names (`populate_by_name`) and serialises with `by_alias=True`
(FastAPI does that for `response_model`).

Request bodies ignore unknown keys (forward compatibility with newer clients) but reject wrong types
and empty values with a 422 that lists every field error.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic.alias_generators import to_camel

from agora_agent.messages import Attachment
from agora_agent.records import ApprovalRecord, MessageRecord, ThreadRecord, ThreadSummary, ToolCallRecord

__all__ = [
    "AbortedResponse",
    "ApprovalDecisionResponse",
    "ApproveRequest",
    "AttachmentWire",
    "ChatRequest",
    "ErrorBody",
    "GrantOut",
    "MessageOut",
    "MessageToolCallOut",
    "OkResponse",
    "PersonaOut",
    "PriceOut",
    "PriceUpsertRequest",
    "QuotaTodayOut",
    "RejectRequest",
    "ThreadDetailOut",
    "ThreadSummaryOut",
    "ToolCallOut",
    "WireModel",
    "wire_dump",
    "wire_keys",
    "wire_name",
]


@functools.lru_cache(maxsize=4096)  # a few dozen names, renamed on every row of every governance response
def wire_name(name: str) -> str:
    """snake_case -> the reference's camelCase: `tool_call_id` -> `toolCallId`, `input_price_per_1m` ->
    `inputPricePer1m` (pydantic's `to_camel` would capitalise the unit: `Per1M`)."""
    return to_camel(name).replace("Per1M", "Per1m")


def wire_keys(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """A plain dict's own keys as the wire spells them (`period_key` -> `periodKey`); values untouched, nested
    dicts included (they are often a caller's data: tool arguments, a price's before/after)."""
    return {wire_name(str(key)): value for key, value in mapping.items()}


def wire_dump(value: Any, *, exclude_none: bool = False) -> Any:
    """A model (or a list of models) as wire JSON: `model_dump(mode="json")`, then every *field* name of
    every model renamed by `wire_name`, recursively. Values that are plain dicts (tool input, detail) keep
    their keys. This is how the Python-named models below the web layer reach the wire."""
    if isinstance(value, list | tuple):
        return [wire_dump(item, exclude_none=exclude_none) for item in value]
    if not isinstance(value, BaseModel):
        return value
    return _rename(value, value.model_dump(mode="json", exclude_none=exclude_none))


def _rename(model: BaseModel, dumped: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, data in dumped.items():
        attribute = getattr(model, name, None)
        if isinstance(attribute, BaseModel) and isinstance(data, dict):
            data = _rename(attribute, data)
        elif isinstance(attribute, list | tuple) and isinstance(data, list):
            data = [
                _rename(item, entry) if isinstance(item, BaseModel) and isinstance(entry, dict) else entry
                for item, entry in zip(attribute, data, strict=True)
            ]
        out[wire_name(name)] = data
    return out


class WireModel(BaseModel):
    """Base of every wire model: camelCase aliases, snake_case accepted in Python, unknown keys ignored."""

    model_config = ConfigDict(alias_generator=wire_name, populate_by_name=True, extra="ignore")


def _not_blank(value: str) -> str:
    if not value.strip():
        raise ValueError("must not be empty or only whitespace")
    return value


# -- requests ---------------------------------------------------------------------------------


class AttachmentWire(WireModel):
    """A staged file: `{mediaId, url, contentType, name}`."""

    media_id: str = Field(min_length=1)
    url: str = Field(min_length=1)
    content_type: str = Field(min_length=1)
    name: str

    def to_attachment(self) -> Attachment:
        return Attachment(media_id=self.media_id, url=self.url, content_type=self.content_type, name=self.name)

    @classmethod
    def of(cls, attachment: Attachment) -> AttachmentWire:
        return cls(
            media_id=attachment.media_id,
            url=attachment.url,
            content_type=attachment.content_type,
            name=attachment.name,
        )


class ChatRequest(WireModel):
    """`POST /chat`. An unknown `agent` is a 404, an unknown `persona` a 422."""

    message: str = Field(min_length=1, max_length=200_000, description="The user's message (not blank).")
    thread_id: str | None = Field(default=None, min_length=1, description="Continue this thread (yours).")
    agent: str | None = Field(default=None, min_length=1, description="A named agent; default agent when absent.")
    persona: str | None = Field(default=None, min_length=1, description="A persona id of the agent.")
    page_context: dict[str, Any] | None = Field(default=None, description="What the user is looking at.")
    attachments: list[AttachmentWire] | None = Field(default=None, max_length=32)
    ui_capabilities: list[str] | None = Field(
        default=None,
        max_length=200,
        description="The component names this client can draw; others are not pushed (absent: all).",
    )

    _check_message = field_validator("message")(_not_blank)


class ApproveRequest(WireModel):
    """`POST /tool-call/approve`."""

    run_id: str = Field(min_length=1)
    tool_call_id: str = Field(min_length=1)


class RejectRequest(ApproveRequest):
    """`POST /tool-call/reject`; `reason` is fed back to the model."""

    reason: str | None = Field(default=None, max_length=4000)


class PriceUpsertRequest(WireModel):
    """`POST /governance/pricing`: USD per million tokens; cache rates optional."""

    model_id: str = Field(min_length=1, max_length=255)  # the column is 255 wide
    input_price_per_1m: float = Field(ge=0, allow_inf_nan=False)
    output_price_per_1m: float = Field(ge=0, allow_inf_nan=False)
    cache_write_price_per_1m: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    cache_read_price_per_1m: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    confirm: bool = Field(
        default=False, description="Required to move a rate more than 10× (or below 1/10) of the current price."
    )

    _check_model = field_validator("model_id")(_not_blank)


# -- responses --------------------------------------------------------------------------------


class ErrorBody(WireModel):
    """Every error: `{"error": "<message>"}`, plus `detail` where it helps (field errors, a standing decision)."""

    error: str
    detail: Any = None


class OkResponse(WireModel):
    """`{"ok": true}`."""

    ok: Literal[True] = True


class AbortedResponse(WireModel):
    """`POST /chat/{runId}/cancel`: `aborted` is always true; `cancelled` tells whether this call
    ended the run (false when it had already finished)."""

    aborted: Literal[True] = True
    cancelled: bool


class ApprovalDecisionResponse(WireModel):
    """An approve/reject that took effect: `{"ok": true}` plus the recorded decision."""

    ok: Literal[True] = True
    run_id: str
    tool_call_id: str
    status: str
    decided_by: str | None
    decided_at: datetime | None

    @classmethod
    def of(cls, record: ApprovalRecord) -> ApprovalDecisionResponse:
        return cls(
            run_id=record.run_id,
            tool_call_id=record.tool_call_id,
            status=record.status,
            decided_by=record.decided_by,
            decided_at=record.decided_at,
        )


class PersonaOut(WireModel):
    """`{id, label}`."""

    id: str
    label: str


class MessageToolCallOut(WireModel):
    """A tool call as the model asked for it, on an assistant message."""

    id: str
    name: str
    input: dict[str, Any]


class MessageOut(WireModel):
    """A message of a thread; absent optional fields are omitted."""

    id: str
    role: str
    content: str
    tool_calls: list[MessageToolCallOut] | None = None
    attachments: list[AttachmentWire] | None = None
    usage: dict[str, Any] | None = None
    persona: str | None = None
    run_id: str | None = None
    created_at: datetime

    @classmethod
    def of(cls, m: MessageRecord) -> MessageOut:
        return cls(
            id=m.id,
            role=m.role,
            content=m.content,
            tool_calls=[MessageToolCallOut(id=c.id, name=c.name, input=c.input) for c in m.tool_calls]
            if m.tool_calls
            else None,
            attachments=[AttachmentWire.of(a) for a in m.attachments] if m.attachments else None,
            usage=wire_keys(m.usage) if m.usage is not None else None,
            persona=m.persona,
            run_id=m.run_id,
            created_at=m.created_at,
        )


class ComponentOut(WireModel):
    """A generative-UI component as stored with its tool call: draw `name` with `data`."""

    id: str
    name: str
    data: Any = None


class ToolCallOut(WireModel):
    """A tool call's audit row as the thread's owner sees it (status, result, who decided)."""

    tool_call_id: str
    run_id: str
    message_id: str | None
    tool_name: str
    tool_type: str
    status: str
    input: Any = None
    output: Any = None
    error: str | None = None
    decided_by: str | None = None
    execution_ms: int | None = None
    created_at: datetime
    executed_at: datetime | None = None
    components: list[ComponentOut] | None = Field(
        default=None, description="The UI components the call drew, in order (a reload shows them again)."
    )

    @classmethod
    def of(cls, t: ToolCallRecord) -> ToolCallOut:
        return cls(
            tool_call_id=t.id,
            run_id=t.run_id,
            message_id=t.message_id,
            tool_name=t.tool_name,
            tool_type=t.tool_type,
            status=t.status,
            input=t.input,
            output=t.output,
            error=t.error,
            decided_by=t.decided_by,
            execution_ms=t.execution_ms,
            created_at=t.created_at,
            executed_at=t.executed_at,
            components=[ComponentOut.model_validate(c) for c in t.components] if t.components else None,
        )


class ThreadSummaryOut(WireModel):
    """`{id, title, persona, transient, createdAt, updatedAt, pinnedAt?, lastMessagePreview?,
    activeStreamId?}`."""

    id: str
    title: str
    persona: str
    transient: bool
    created_at: datetime
    updated_at: datetime
    pinned_at: datetime | None = None
    last_message_preview: str | None = None
    active_stream_id: str | None = None

    @classmethod
    def of(cls, thread: ThreadRecord, preview: str | None = None) -> ThreadSummaryOut:
        return cls(**_thread_fields(thread), last_message_preview=preview)

    @classmethod
    def of_summary(cls, summary: ThreadSummary) -> ThreadSummaryOut:
        return cls.of(summary.thread, summary.last_message_preview)


class RunStatusOut(WireModel):
    """Where one run of a thread ended (`cancelled` marks a reply the user stopped)."""

    run_id: str
    status: str
    started_at: datetime
    finished_at: datetime | None = None


class ThreadDetailOut(ThreadSummaryOut):
    """The summary plus `messages[]` (oldest first) and the thread's `toolCalls[]` audit rows."""

    messages: list[MessageOut]
    tool_calls: list[ToolCallOut] = Field(default_factory=list)
    runs: list[RunStatusOut] = Field(default_factory=list, description="The status of each run of the thread.")


class RenameThreadRequest(WireModel):
    """`PATCH /threads/{id}`: a new title for the thread."""

    title: str = Field(min_length=1, max_length=200)


def _thread_fields(t: ThreadRecord) -> dict[str, Any]:
    return {
        "id": t.id,
        "title": t.title,
        "persona": t.persona,
        "transient": t.transient,
        "created_at": t.created_at,
        "updated_at": t.updated_at,
        "pinned_at": t.pinned_at,
        "active_stream_id": t.active_stream_id,
    }


class QuotaTodayOut(WireModel):
    """`{usedTokens}` for the caller's UTC day, plus the limits when a budget applies."""

    day: str
    used_tokens: int
    limit_tokens: int | None = None
    used_usd: float | None = None
    limit_usd: float | None = None
    period: str | None = Field(None, description="day | month: the period of the caller's own budget, when one applies")
    period_used_tokens: int | None = Field(None, description="Tokens counted against that budget in its period")


class GrantOut(WireModel):
    """`GET governance/grant`: what the caller's governance grant covers, so a page shows only what it may do.

    `scope` is `global` (every tenant; prices and `*` budget rules may be changed) or `tenants` (a tenant admin:
    `tenants` lists them; prices and `*` rules are read-only)."""

    scope: Literal["global", "tenants"]
    tenants: list[str] | None = Field(None, description="The tenants a tenant admin's grant covers (sorted)")


class PriceOut(WireModel):
    """`CurrentModelPrice`: cache rates omitted when unset."""

    model_id: str
    input_price_per_1m: float
    output_price_per_1m: float
    cache_write_price_per_1m: float | None = None
    cache_read_price_per_1m: float | None = None
    effective_from: datetime | None = None
