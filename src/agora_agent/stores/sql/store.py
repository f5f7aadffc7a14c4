"""`SqlAgentStore`: the `AgentStore` protocol on SQLite or PostgreSQL (SQLAlchemy 2 async Core).

Every write is one transaction (a crash mid-write leaves nothing half-written) and is retried as a
whole after a deadlock or serialization failure. Compare-and-set operations are single conditional
UPDATEs: `record_run_end` (`… WHERE status = 'running'`) and `decide_approval` (`… WHERE status = 'pending'`,
then a re-read), so concurrent callers on any number of processes agree on one winner.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any, Literal, TypeVar

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from agora_agent.errors import ConflictError, NotFoundError
from agora_agent.messages import Attachment, ToolCall
from agora_agent.stores.base import (
    ApprovalRecord,
    MessageRecord,
    RunRecord,
    RunStatus,
    ThreadRecord,
    ThreadSummary,
    ToolCallPatch,
    ToolCallRecord,
    UsageRecord,
)
from agora_agent.stores.sql import records as rec
from agora_agent.stores.sql.engine import WRITE, retry_transient
from agora_agent.stores.sql.rollup import upsert_usage_daily
from agora_agent.stores.sql.tables import approval, message, run, thread, token_usage, tool_call

__all__ = ["SqlAgentStore"]

T = TypeVar("T")
PREVIEW_CHARS = 120


def _now() -> datetime:
    return datetime.now(UTC)


def _new_id() -> str:
    return str(uuid.uuid4())


class SqlAgentStore:
    """Threads, messages, tool calls, approvals, the usage ledger and runs in SQL tables.

    Build it on an engine from `create_engine_from_url` (or use `open_sql_backend`, which also checks or
    creates the schema). Errors: `NotFoundError` for an unknown thread where one is required,
    `ConflictError` for a duplicate tool call / approval / run id; driver errors propagate.
    """

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._writer = engine.execution_options(**{WRITE: True})

    async def _write(self, work: Callable[[AsyncConnection], Awaitable[T]]) -> T:
        async def attempt() -> T:
            async with self._writer.begin() as conn:
                return await work(conn)

        return await retry_transient(attempt)

    async def _insert(self, table: sa.Table, values: dict[str, Any], conflict: str) -> None:
        """Insert one row; a duplicate key (or a missing parent row) is a ConflictError saying `conflict`."""

        async def work(conn: AsyncConnection) -> None:
            try:
                async with conn.begin_nested():
                    await conn.execute(sa.insert(table).values(values))
            except sa.exc.IntegrityError as exc:
                raise ConflictError(conflict) from exc

        await self._write(work)

    async def _read_one(self, stmt: sa.Select[Any]) -> sa.RowMapping | None:
        async with self.engine.connect() as conn:
            row: sa.RowMapping | None = (await conn.execute(stmt)).mappings().first()
        return row

    async def _read_all(self, stmt: sa.Select[Any]) -> Sequence[sa.RowMapping]:
        async with self.engine.connect() as conn:
            rows: Sequence[sa.RowMapping] = (await conn.execute(stmt)).mappings().all()
        return rows

    # -- threads --

    async def create_thread(
        self,
        *,
        actor_ref: str,
        tenant_ref: str | None = None,
        persona: str = "default",
        transient: bool = False,
        title: str = "New chat",
        thread_id: str | None = None,
    ) -> ThreadRecord:
        now = _now()
        record = ThreadRecord(
            id=thread_id or _new_id(),
            actor_ref=actor_ref,
            tenant_ref=tenant_ref,
            title=title,
            persona=persona,
            transient=transient,
            created_at=now,
            updated_at=now,
        )

        if thread_id is not None:  # a chosen id may exist already
            await self._insert(thread, _thread_values(record), f"thread {thread_id} already exists")
            return record

        async def work(conn: AsyncConnection) -> None:
            await conn.execute(sa.insert(thread).values(_thread_values(record)))

        await self._write(work)
        return record

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        row = await self._read_one(sa.select(thread).where(thread.c.id == thread_id, thread.c.deleted_at.is_(None)))
        return None if row is None else rec.thread_record(row)

    async def list_threads(self, actor_ref: str, *, limit: int = 50) -> list[ThreadSummary]:
        last_content = (
            sa.select(message.c.content)
            .where(message.c.thread_id == thread.c.id)
            .order_by(message.c.seq.desc())
            .limit(1)
            .scalar_subquery()
        )
        stmt = (
            sa.select(thread, last_content.label("last_content"))
            .where(thread.c.actor_ref == actor_ref, thread.c.deleted_at.is_(None), thread.c.transient.is_(False))
            .order_by(thread.c.updated_at.desc(), thread.c.id.desc())
            .limit(limit)
        )
        rows = await self._read_all(stmt)
        return [
            ThreadSummary(
                thread=rec.thread_record(row),
                last_message_preview=None if row["last_content"] is None else row["last_content"][:PREVIEW_CHARS],
            )
            for row in rows
        ]

    async def thread_owner(self, thread_id: str) -> str | None:
        async with self.engine.connect() as conn:
            return await conn.scalar(
                sa.select(thread.c.actor_ref).where(thread.c.id == thread_id, thread.c.deleted_at.is_(None))
            )

    async def soft_delete_thread(self, thread_id: str) -> bool:
        async def work(conn: AsyncConnection) -> bool:
            result = await conn.execute(
                sa.update(thread)
                .where(thread.c.id == thread_id, thread.c.deleted_at.is_(None))
                .values(deleted_at=_now())
            )
            return result.rowcount > 0

        return await self._write(work)

    async def fork_thread(self, thread_id: str, from_message_id: str) -> ThreadRecord:
        async def work(conn: AsyncConnection) -> ThreadRecord:
            source = (
                (await conn.execute(sa.select(thread).where(thread.c.id == thread_id, thread.c.deleted_at.is_(None))))
                .mappings()
                .first()
            )
            if source is None:
                raise NotFoundError(f"thread {thread_id} not found")
            rows = (
                (await conn.execute(sa.select(message).where(message.c.thread_id == thread_id).order_by(message.c.seq)))
                .mappings()
                .all()
            )
            cut = next((i for i, r in enumerate(rows) if r["id"] == from_message_id), len(rows) - 1)
            now = _now()
            forked = ThreadRecord(
                id=_new_id(),
                actor_ref=source["actor_ref"],
                tenant_ref=source["tenant_ref"],
                title=source["title"],
                persona=source["persona"],
                transient=False,
                created_at=now,
                updated_at=now,
            )
            await conn.execute(sa.insert(thread).values(_thread_values(forked)))
            # One INSERT per message keeps `seq` in the source order on every backend.
            for row in rows[: cut + 1]:
                values = {k: v for k, v in row.items() if k != "seq"}
                values.update(id=_new_id(), thread_id=forked.id, run_id=None)
                await conn.execute(sa.insert(message).values(values))
            return forked

        return await self._write(work)

    async def truncate_from(self, thread_id: str, message_id: str) -> None:
        async def work(conn: AsyncConnection) -> None:
            seq = await conn.scalar(
                sa.select(message.c.seq).where(message.c.thread_id == thread_id, message.c.id == message_id)
            )
            if seq is None:
                return
            doomed = sa.select(message.c.id).where(message.c.thread_id == thread_id, message.c.seq >= seq)
            await conn.execute(
                sa.delete(tool_call).where(tool_call.c.thread_id == thread_id, tool_call.c.message_id.in_(doomed))
            )
            await conn.execute(sa.delete(message).where(message.c.thread_id == thread_id, message.c.seq >= seq))

        await self._write(work)

    async def set_title(self, thread_id: str, title: str) -> None:
        await self._update_thread(thread_id, title=title)

    async def set_active_stream(self, thread_id: str, run_id: str | None) -> None:
        await self._update_thread(thread_id, active_stream_id=run_id)

    async def _update_thread(self, thread_id: str, **values: Any) -> None:
        async def work(conn: AsyncConnection) -> None:
            await conn.execute(sa.update(thread).where(thread.c.id == thread_id).values(**values))

        await self._write(work)

    # -- messages --

    async def append_message(
        self,
        *,
        thread_id: str,
        role: Literal["user", "assistant"],
        content: str,
        run_id: str | None = None,
        persona: str | None = None,
        tool_calls: Sequence[ToolCall] | None = None,
        attachments: Sequence[Attachment] | None = None,
        usage: dict[str, Any] | None = None,
    ) -> MessageRecord:
        now = _now()
        record = MessageRecord(
            id=_new_id(),
            thread_id=thread_id,
            role=role,
            content=content,
            tool_calls=None if tool_calls is None else list(tool_calls),
            attachments=None if attachments is None else list(attachments),
            usage=usage,
            persona=persona,
            run_id=run_id,
            created_at=now,
        )

        async def work(conn: AsyncConnection) -> None:
            bumped = await conn.execute(
                sa.update(thread).where(thread.c.id == thread_id, thread.c.deleted_at.is_(None)).values(updated_at=now)
            )
            if bumped.rowcount == 0:
                raise NotFoundError(f"thread {thread_id} not found")
            await conn.execute(
                sa.insert(message).values(
                    id=record.id,
                    thread_id=thread_id,
                    role=role,
                    content=content,
                    tool_calls=rec.tool_calls_json(tool_calls),
                    attachments=rec.attachments_json(attachments),
                    usage=usage,
                    persona=persona,
                    run_id=run_id,
                    created_at=now,
                )
            )

        await self._write(work)
        return record

    async def list_messages(self, thread_id: str) -> list[MessageRecord]:
        rows = await self._read_all(sa.select(message).where(message.c.thread_id == thread_id).order_by(message.c.seq))
        return [rec.message_record(r) for r in rows]

    # -- tool calls --

    async def record_tool_call(self, record: ToolCallRecord) -> None:
        values = asdict(record)

        await self._insert(
            tool_call,
            values,
            f"tool call {record.id} of run {record.run_id} is already recorded (or its thread is unknown)",
        )

    async def update_tool_call(self, run_id: str, tool_call_id: str, patch: ToolCallPatch) -> None:
        changes = patch.changes()
        if changes.get("status") in ("executed", "failed"):
            changes["executed_at"] = _now()
        if not changes:
            if await self.get_tool_call(run_id, tool_call_id) is None:
                raise NotFoundError(f"tool call {tool_call_id} of run {run_id} not found")
            return

        async def work(conn: AsyncConnection) -> None:
            result = await conn.execute(
                sa.update(tool_call).where(tool_call.c.run_id == run_id, tool_call.c.id == tool_call_id).values(changes)
            )
            if result.rowcount == 0:
                raise NotFoundError(f"tool call {tool_call_id} of run {run_id} not found")

        await self._write(work)

    async def get_tool_call(self, run_id: str, tool_call_id: str) -> ToolCallRecord | None:
        row = await self._read_one(
            sa.select(tool_call).where(tool_call.c.run_id == run_id, tool_call.c.id == tool_call_id)
        )
        return None if row is None else rec.tool_call_record(row)

    async def list_tool_calls(self, *, thread_id: str | None = None, run_id: str | None = None) -> list[ToolCallRecord]:
        stmt = sa.select(tool_call).order_by(tool_call.c.created_at, tool_call.c.seq)
        if thread_id is not None:
            stmt = stmt.where(tool_call.c.thread_id == thread_id)
        if run_id is not None:
            stmt = stmt.where(tool_call.c.run_id == run_id)
        return [rec.tool_call_record(r) for r in await self._read_all(stmt)]

    # -- approvals --

    async def create_approval(self, record: ApprovalRecord) -> None:
        values = asdict(record)
        values["approver_roles"] = None if record.approver_roles is None else list(record.approver_roles)

        await self._insert(
            approval, values, f"an approval for tool call {record.tool_call_id} of run {record.run_id} already exists"
        )

    async def get_approval(self, run_id: str, tool_call_id: str) -> ApprovalRecord | None:
        row = await self._read_one(
            sa.select(approval).where(approval.c.run_id == run_id, approval.c.tool_call_id == tool_call_id)
        )
        return None if row is None else rec.approval_record(row)

    async def decide_approval(
        self,
        run_id: str,
        tool_call_id: str,
        *,
        status: Literal["approved", "rejected", "expired"],
        decided_by: str | None,
        reason: str | None = None,
    ) -> tuple[ApprovalRecord, bool]:
        key = (approval.c.run_id == run_id, approval.c.tool_call_id == tool_call_id)

        async def work(conn: AsyncConnection) -> tuple[ApprovalRecord, bool]:
            result = await conn.execute(
                sa.update(approval)
                .where(*key, approval.c.status == "pending")
                .values(status=status, decided_by=decided_by, reason=reason, decided_at=_now())
            )
            row = (await conn.execute(sa.select(approval).where(*key))).mappings().first()
            if row is None:
                raise NotFoundError(f"no approval for tool call {tool_call_id} of run {run_id}")
            return rec.approval_record(row), result.rowcount > 0

        return await self._write(work)

    async def list_pending_approvals(self, *, actor_ref: str | None = None, limit: int = 50) -> list[ApprovalRecord]:
        stmt = (
            sa.select(approval)
            .where(approval.c.status == "pending")
            .order_by(approval.c.created_at, approval.c.run_id, approval.c.tool_call_id)
            .limit(limit)
        )
        if actor_ref is not None:
            stmt = stmt.where(approval.c.requested_by == actor_ref)
        return [rec.approval_record(r) for r in await self._read_all(stmt)]

    # -- usage ledger --

    async def record_usage(self, record: UsageRecord) -> None:
        values = asdict(record)

        async def work(conn: AsyncConnection) -> None:
            await conn.execute(sa.insert(token_usage).values(values))
            await conn.execute(upsert_usage_daily(conn.dialect.name, record))

        await self._write(work)

    async def usage_tokens(self, actor_ref: str, start: datetime, end: datetime) -> int:
        async with self.engine.connect() as conn:
            total = await conn.scalar(
                sa.select(
                    sa.func.coalesce(sa.func.sum(token_usage.c.input_tokens + token_usage.c.output_tokens), 0)
                ).where(
                    token_usage.c.actor_ref == actor_ref,
                    token_usage.c.created_at >= start,
                    token_usage.c.created_at <= end,
                )
            )
        return int(total or 0)

    # -- runs --

    async def record_run_start(self, record: RunRecord) -> None:
        values = asdict(record)

        await self._insert(run, values, f"run {record.id} already exists (or thread {record.thread_id} is unknown)")

    async def record_run_end(
        self,
        run_id: str,
        *,
        status: Literal["completed", "failed", "cancelled"],
        error: str | None = None,
        step_count: int | None = None,
        input_tokens: int | None = None,
        output_tokens: int | None = None,
        cost_usd: float | None = None,
        finished_at: datetime | None = None,
    ) -> bool:
        values: dict[str, Any] = {"status": status, "error": error, "finished_at": finished_at or _now()}
        optional = {
            "step_count": step_count,
            "input_tokens": input_tokens,
            "output_tokens": output_tokens,
            "cost_usd": cost_usd,
        }
        values.update({k: v for k, v in optional.items() if v is not None})

        async def work(conn: AsyncConnection) -> bool:
            result = await conn.execute(
                sa.update(run).where(run.c.id == run_id, run.c.status == "running").values(values)
            )
            return result.rowcount > 0

        return await self._write(work)

    async def get_run(self, run_id: str) -> RunRecord | None:
        row = await self._read_one(sa.select(run).where(run.c.id == run_id))
        return None if row is None else rec.run_record(row)

    async def run_owner(self, run_id: str) -> str | None:
        async with self.engine.connect() as conn:
            return await conn.scalar(sa.select(run.c.actor_ref).where(run.c.id == run_id))

    async def list_runs_by_status(self, status: RunStatus, *, limit: int = 100) -> list[RunRecord]:
        stmt = sa.select(run).where(run.c.status == status).order_by(run.c.started_at, run.c.id).limit(limit)
        return [rec.run_record(r) for r in await self._read_all(stmt)]


def _thread_values(record: ThreadRecord) -> dict[str, Any]:
    return asdict(record)
