"""Row <-> record conversion for the SQL store (one place that knows both shapes)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from agora_agent.messages import Attachment, ToolCall, stored_usage
from agora_agent.records import ApprovalRecord, MessageRecord, RunRecord, ThreadRecord, ToolCallRecord, UsageRecord

__all__ = [
    "approval_record",
    "attachments_json",
    "message_record",
    "run_record",
    "thread_record",
    "tool_call_record",
    "tool_calls_json",
    "usage_record",
]

Row = Mapping[Any, Any]


def thread_record(row: Row) -> ThreadRecord:
    return ThreadRecord(
        id=row["id"],
        actor_ref=row["actor_ref"],
        tenant_ref=row["tenant_ref"],
        title=row["title"],
        persona=row["persona"],
        transient=bool(row["transient"]),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
        deleted_at=row["deleted_at"],
        pinned_at=row["pinned_at"],
        active_stream_id=row["active_stream_id"],
    )


def tool_calls_json(calls: Sequence[ToolCall] | None) -> list[dict[str, Any]] | None:
    if calls is None:
        return None
    return [{"id": c.id, "name": c.name, "input": c.input} for c in calls]


def attachments_json(attachments: Sequence[Attachment] | None) -> list[dict[str, Any]] | None:
    if attachments is None:
        return None
    return [{"media_id": a.media_id, "url": a.url, "content_type": a.content_type, "name": a.name} for a in attachments]


def message_record(row: Row) -> MessageRecord:
    calls = row["tool_calls"]
    attachments = row["attachments"]
    return MessageRecord(
        id=row["id"],
        thread_id=row["thread_id"],
        role=row["role"],
        content=row["content"],
        tool_calls=None if calls is None else [ToolCall(id=c["id"], name=c["name"], input=c["input"]) for c in calls],
        attachments=None if attachments is None else [Attachment(**a) for a in attachments],
        usage=stored_usage(row["usage"]),
        persona=row["persona"],
        run_id=row["run_id"],
        created_at=row["created_at"],
    )


def tool_call_record(row: Row) -> ToolCallRecord:
    return ToolCallRecord(
        id=row["id"],
        run_id=row["run_id"],
        thread_id=row["thread_id"],
        message_id=row["message_id"],
        tool_name=row["tool_name"],
        tool_type=row["tool_type"],
        input=row["input"],
        output=row["output"],
        error=row["error"],
        status=row["status"],
        actor_ref=row["actor_ref"],
        tenant_ref=row["tenant_ref"],
        policy_decision=row["policy_decision"],
        idempotency_key=row["idempotency_key"],
        executed_by_ref=row["executed_by_ref"],
        decided_by=row["decided_by"],
        execution_ms=row["execution_ms"],
        created_at=row["created_at"],
        executed_at=row["executed_at"],
        components=row["components"],
    )


def approval_record(row: Row) -> ApprovalRecord:
    roles = row["approver_roles"]
    return ApprovalRecord(
        run_id=row["run_id"],
        tool_call_id=row["tool_call_id"],
        thread_id=row["thread_id"],
        tool_name=row["tool_name"],
        args_hash=row["args_hash"],
        requested_by=row["requested_by"],
        approver_roles=None if roles is None else tuple(roles),
        status=row["status"],
        reason=row["reason"],
        decided_by=row["decided_by"],
        decided_at=row["decided_at"],
        deadline=row["deadline"],
        created_at=row["created_at"],
    )


def usage_record(row: Row) -> UsageRecord:
    return UsageRecord(
        id=row["id"],
        thread_id=row["thread_id"],
        run_id=row["run_id"],
        message_id=row["message_id"],
        actor_ref=row["actor_ref"],
        tenant_ref=row["tenant_ref"],
        model_id=row["model_id"],
        purpose=row["purpose"],
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        cache_read_tokens=row["cache_read_tokens"],
        cache_write_tokens=row["cache_write_tokens"],
        cost_usd=row["cost_usd"],
        created_at=row["created_at"],
    )


def run_record(row: Row) -> RunRecord:
    return RunRecord(
        id=row["id"],
        thread_id=row["thread_id"],
        agent_name=row["agent_name"],
        actor_ref=row["actor_ref"],
        tenant_ref=row["tenant_ref"],
        status=row["status"],
        started_at=row["started_at"],
        finished_at=row["finished_at"],
        step_count=row["step_count"],
        input_tokens=row["input_tokens"],
        output_tokens=row["output_tokens"],
        cost_usd=row["cost_usd"],
        error=row["error"],
        durable=bool(row["durable"]),
        parent_run_id=row["parent_run_id"],
    )
