"""`SqlAgentStore`: the `AgentStore` protocol on SQLite or PostgreSQL (SQLAlchemy 2 Core).

Every call is ONE unit of work — a sync function over one connection, run as one transaction by
`units.units_for(engine)` (on SQLite a file's units run on one worker thread that owns a synchronous
connection: one thread hop per call instead of one per statement) — and is retried as a whole after a
deadlock, serialization failure or lost connection. The write calls are the logical steps of a run
(`record_model_step`: quota settle + assistant message + usage row + daily rollup; `record_tool_call`:
the call, with its approval for an action; `update_tool_call`: its result), so a crash leaves a step
either wholly written or not at all. Compare-and-set operations are single conditional UPDATEs:
`record_run_end` (`… WHERE status = 'running'`) and `decide_approval` (`… WHERE status = 'pending'`,
then a re-read), so concurrent callers on any number of processes agree on one winner.
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from datetime import UTC, datetime
from functools import partial
from typing import Any, Literal, TypeVar

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncEngine

from agora_agent.errors import ConflictError, NotFoundError, QuotaExceededError, StoreError
from agora_agent.governance.quota import Reservation
from agora_agent.messages import Attachment, ToolCall
from agora_agent.records import (
    ApprovalRecord,
    MessageRecord,
    RunRecord,
    RunStatus,
    ThreadHistory,
    ThreadRecord,
    ThreadSummary,
    ToolCallPatch,
    ToolCallRecord,
    UsageRecord,
)
from agora_agent.stores.base import ModelStep, NewMessage, NewThread, QuotaReserve, RunOpened, record_tool_call_once
from agora_agent.stores.sql import direct, pg_steps, run_start
from agora_agent.stores.sql import records as rec
from agora_agent.stores.sql.quota import (
    RowUpdate,
    SqlQuotaStore,
    claim_won,
    crossings_to_claim,
    settle_reservation,
    settled_counters,
)
from agora_agent.stores.sql.rollup import run_daily_params, upsert_run_daily, upsert_usage_daily, usage_daily_params
from agora_agent.stores.sql.tables import (
    MICROS_PER_DAY,
    approval,
    message,
    run,
    thread,
    to_micros,
    token_usage,
    tool_call,
    usage_daily,
)
from agora_agent.stores.sql.units import units_for

__all__ = ["SqlAgentStore"]

T = TypeVar("T")
PREVIEW_CHARS = 120


def _now() -> datetime:
    return datetime.now(UTC)


def _new_id() -> str:
    return str(uuid.uuid4())


class _Replayed(Exception):
    """Raised inside `record_model_step`'s unit when its message exists: roll back, return the stored one."""


_live_thread = (thread.c.id == sa.bindparam("tid"), thread.c.deleted_at.is_(None))
_BUMP_THREAD = sa.update(thread).where(*_live_thread).values(updated_at=sa.bindparam("now"))
_MESSAGES_OF = sa.select(message).where(message.c.thread_id == sa.bindparam("tid")).order_by(message.c.seq)
# On the run alone, so that the run index is the one index that serves it (with the thread too, SQLite may pick
# the thread's index and read all of a long thread's rows); the thread is checked on the rows it returns.
_RUN_MESSAGES = sa.select(message).where(message.c.run_id == sa.bindparam("rid")).order_by(message.c.seq)
_TOOL_CALLS_OF = (
    sa.select(tool_call)
    .where(tool_call.c.thread_id == sa.bindparam("tid"))
    .order_by(tool_call.c.created_at, tool_call.c.seq)
)
_THREAD = sa.select(thread).where(*_live_thread)
_ANCHOR_SEQ = (
    sa.select(message.c.seq)
    .where(message.c.thread_id == sa.bindparam("tid"), message.c.id == sa.bindparam("mid"))
    .scalar_subquery()
)
_MESSAGES_FROM = (  # the anchor message and every later one; no row at all when the anchor is gone
    sa.select(message)
    .where(message.c.thread_id == sa.bindparam("tid"), message.c.seq >= _ANCHOR_SEQ)
    .order_by(message.c.seq)
)
_TOOL_CALLS_OF_MESSAGES = (
    sa.select(tool_call)
    .where(
        tool_call.c.thread_id == sa.bindparam("tid"), tool_call.c.message_id.in_(sa.bindparam("mids", expanding=True))
    )
    .order_by(tool_call.c.created_at, tool_call.c.seq)
)
_approval_table = approval  # `record_tool_call`'s parameter is called `approval`
_message_table = message  # and `append_and_load`'s `message`
# Hot-path statements are built once: building one costs more than running it on SQLite, and a statement object
# reused as is keeps its memoized cache key, so SQLAlchemy's compiled cache hits without re-walking it.
_INSERT_USAGE = sa.insert(token_usage)
_INSERT_MESSAGE = sa.insert(message)
_INSERT = {t.name: sa.insert(t) for t in (tool_call, approval, run, thread)}
_INSERT_MESSAGE_ONCE = {
    "postgresql": postgresql.insert(message).on_conflict_do_nothing(index_elements=["id"]),
    "sqlite": sqlite.insert(message).on_conflict_do_nothing(index_elements=["id"]),
}
_MESSAGE_BY_ID = sa.select(message).where(message.c.id == sa.bindparam("mid"))
_TOOL_CALL_KEY = (tool_call.c.run_id == sa.bindparam("_run_id"), tool_call.c.id == sa.bindparam("_tool_call_id"))
_UPDATE_TOOL_CALL = sa.update(tool_call).where(*_TOOL_CALL_KEY)  # SET columns = the keys of the parameters
_TOOL_CALL = sa.select(tool_call).where(*_TOOL_CALL_KEY)
_END_RUN = (
    sa.update(run)
    .where(run.c.id == sa.bindparam("_run_id"), run.c.status == "running")
    .returning(run.c.started_at, run.c.agent_name, run.c.finished_at)
)
_RUN = sa.select(run).where(run.c.id == sa.bindparam("_run_id"))
_STREAMING = sa.update(thread).where(thread.c.id == sa.bindparam("tid")).values(active_stream_id=sa.bindparam("rid"))
_RENAME_RUN_THREAD = (
    sa.update(thread)
    .where(thread.c.id == sa.select(run.c.thread_id).where(run.c.id == sa.bindparam("_run_id")).scalar_subquery())
    .values(title=sa.bindparam("_title"))
)
_APPROVAL_KEY = (approval.c.run_id == sa.bindparam("_run_id"), approval.c.tool_call_id == sa.bindparam("_tcid"))
_APPROVAL = sa.select(approval).where(*_APPROVAL_KEY)


class SqlAgentStore:
    """Threads, messages, tool calls, approvals, the usage ledger and runs in SQL tables.

    Build it on an engine from `create_engine_from_url` (or use `open_sql_backend`, which also checks or
    creates the schema). Errors: `NotFoundError` for an unknown thread where one is required,
    `ConflictError` for a duplicate tool call / approval / run id; driver errors propagate.
    """

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._units = units_for(engine)
        self._postgres = engine.dialect.name == "postgresql"

    async def _write(self, work: Callable[[sa.Connection], T], *, one_statement: bool = False) -> T:
        return await self._units.run(work, write=True, one_statement=one_statement)

    async def _read(self, work: Callable[[sa.Connection], T]) -> T:
        return await self._units.run(work, write=False)

    async def _insert(self, table: sa.Table, values: dict[str, Any], conflict: str) -> None:
        """Insert one row; a duplicate key (or a missing parent row) is a ConflictError saying `conflict`."""

        def work(conn: sa.Connection) -> None:
            _insert_or_conflict(conn, table, values, conflict)

        await self._write(work, one_statement=True)

    async def _read_one(self, stmt: sa.Select[Any]) -> sa.RowMapping | None:
        return await self._read(lambda conn: conn.execute(stmt).mappings().first())

    async def _read_all(self, stmt: sa.Select[Any]) -> Sequence[sa.RowMapping]:
        return await self._read(lambda conn: conn.execute(stmt).mappings().all())

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

        await self._units.one(_INSERT[thread.name], _thread_values(record), write=True, keyed=True)
        return record

    async def get_thread(self, thread_id: str) -> ThreadRecord | None:
        row = (await self._units.one(_THREAD, {"tid": thread_id}, write=False)).first()
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
        stmt = sa.select(thread.c.actor_ref).where(thread.c.id == thread_id, thread.c.deleted_at.is_(None))
        owner: str | None = await self._read(lambda conn: conn.scalar(stmt))
        return owner

    async def soft_delete_thread(self, thread_id: str) -> bool:
        def work(conn: sa.Connection) -> bool:
            result = conn.execute(
                sa.update(thread)
                .where(thread.c.id == thread_id, thread.c.deleted_at.is_(None))
                .values(deleted_at=_now())
            )
            return result.rowcount > 0

        return await self._write(work, one_statement=True)

    async def fork_thread(self, thread_id: str, from_message_id: str) -> ThreadRecord:
        def work(conn: sa.Connection) -> ThreadRecord:
            source = conn.execute(_THREAD, {"tid": thread_id}).mappings().first()
            if source is None:
                raise NotFoundError(f"thread {thread_id} not found")
            rows = conn.execute(_MESSAGES_OF, {"tid": thread_id}).mappings().all()
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
            conn.execute(sa.insert(thread).values(_thread_values(forked)))
            # One INSERT per message keeps `seq` in the source order on every backend.
            for row in rows[: cut + 1]:
                values = {k: v for k, v in row.items() if k != "seq"}
                values.update(id=_new_id(), thread_id=forked.id, run_id=None)
                conn.execute(sa.insert(message).values(values))
            return forked

        return await self._write(work)

    async def truncate_from(self, thread_id: str, message_id: str) -> None:
        def work(conn: sa.Connection) -> None:
            seq = conn.scalar(
                sa.select(message.c.seq).where(message.c.thread_id == thread_id, message.c.id == message_id)
            )
            if seq is None:
                return
            doomed = sa.select(message.c.id).where(message.c.thread_id == thread_id, message.c.seq >= seq)
            conn.execute(
                sa.delete(tool_call).where(tool_call.c.thread_id == thread_id, tool_call.c.message_id.in_(doomed))
            )
            conn.execute(sa.delete(message).where(message.c.thread_id == thread_id, message.c.seq >= seq))

        await self._write(work)

    async def set_title(self, thread_id: str, title: str) -> None:
        await self._update_thread(thread_id, title=title)

    async def set_active_stream(self, thread_id: str, run_id: str | None) -> None:
        await self._update_thread(thread_id, active_stream_id=run_id)

    async def _update_thread(self, thread_id: str, **values: Any) -> None:
        stmt = sa.update(thread).where(thread.c.id == thread_id).values(**values)
        await self._write(lambda conn: conn.execute(stmt), one_statement=True)

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
        message_id: str | None = None,
    ) -> MessageRecord:
        now = _now()
        record = MessageRecord(
            id=message_id or _new_id(),
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
        values = _message_values(record, tool_calls, attachments)
        try:
            if self._postgres:  # insert once already: a replayed message is reported, not written
                params = {**pg_steps.message_params(values), "m_created_at_bump": values["created_at"]}

                outcome = await self._units.one(pg_steps.append_message_statement(), params, write=True)
                _live_and_new(outcome.one(), thread_id)
            elif message_id is None:
                await self._write(lambda conn: _append(conn, values))
            else:

                def once(conn: sa.Connection) -> None:
                    _bump(conn, thread_id, now)
                    if not direct.execute(conn, _INSERT_MESSAGE_ONCE["sqlite"], values, keyed=True).rowcount:
                        raise _Replayed

                await self._write(once)
        except _Replayed:  # written by an earlier attempt of this step (a replayed durable step, a retried unit)
            return await self._stored_message(record.id)
        return record

    async def append_and_load(self, message: NewMessage, *, after: str | None = None) -> ThreadHistory:
        """The message (written once by its id) and then the thread's history, in one transaction — on
        PostgreSQL ONE statement (`pg_steps.append_and_load_statement`), whose reads do not see the message it
        appends: it is added here, as the thread's newest."""
        values = _new_message_values(message)
        if not self._postgres:
            loaded = await self._write(partial(_append_and_load_unit, values, after))
            return _history(*loaded)
        since = after is not None
        params = _append_and_load_params(values, after)
        found = (await self._units.one(pg_steps.append_and_load_statement(since), params, write=True)).one()
        return await self._appended_history(found, values, since)

    async def append_load_and_reserve(
        self, message: NewMessage, reserve: QuotaReserve, *, after: str | None = None
    ) -> tuple[ThreadHistory, Reservation | None]:
        """`append_and_load` and the reservation `reserve` asks for in ONE transaction (on PostgreSQL with one
        limit: one statement) when its quota is a `SqlQuotaStore` on this database: a run's user message, its
        history and its first model call's reservation, one commit. The message is written whatever the grant
        decides; the reservation is None when it was not granted here (refused, a new period's first grant, or
        another quota): the caller takes it on its own then (`reserve.take()`), which refuses or grants."""
        quota = reserve.quota
        if not (isinstance(quota, SqlQuotaStore) and quota.shares_transactions_with(self.engine)):
            return await self.append_and_load(message, after=after), None
        planned = await reserve.call(quota.plan)
        if not planned.limits:  # nothing to hold: the reservation is granted as it is
            return await self.append_and_load(message, after=after), planned.reservation
        values = _new_message_values(message)
        if not self._postgres:

            def unit(conn: sa.Connection) -> _Loaded:
                loaded = _append_and_load_unit(values, after, conn)
                quota.grant_within(conn, planned)
                return loaded

            try:
                return _history(*(await self._write(unit))), planned.reservation
            except QuotaExceededError:  # rolled back with the refused grant: the message alone, the caller refuses
                return await self.append_and_load(message, after=after), None
        if len(planned.limits) != 1:  # several limits: their grant is the quota's multi-statement unit
            return await self.append_and_load(message, after=after), None
        limit = planned.limits[0]
        since = after is not None
        stmt = pg_steps.append_load_and_reserve_statement(
            since, limit.tokens is not None, limit.usd is not None, self._units.defer_flush
        )
        params = {**_append_and_load_params(values, after), **quota.grant_params(planned)}
        found = (await self._units.one(stmt, params, write=True)).one()
        self._units.deferred(planned.reservation.run_id, found)
        history = await self._appended_history(found, values, since)
        return history, planned.reservation if found["granted"] or found["held"] else None

    async def _appended_history(self, found: Mapping[str, Any], values: dict[str, Any], since: bool) -> ThreadHistory:
        """The history an append-and-load statement read on PostgreSQL, with the message it appended as the newest."""
        thread_id = values["thread_id"]
        if not found["live"]:
            raise NotFoundError(f"thread {thread_id} not found")
        if since and not found["anchored"]:  # the kept message is gone: everything (the message committed)
            return _history(*(await self._load_statement(thread_id, None)))
        heads = pg_steps.json_rows(thread, None if found["head"] is None else [found["head"]])
        messages = pg_steps.json_rows(_message_table, found["messages"])
        if found["inserted"]:
            messages.append(values)
            if heads:
                heads[0]["updated_at"] = values["created_at"]
        calls = pg_steps.json_rows(tool_call, found["calls"])
        return _history(heads[0] if heads else None, messages, calls, not since)

    async def _stored_message(self, message_id: str) -> MessageRecord:
        row = (await self._units.one(_MESSAGE_BY_ID, {"mid": message_id}, write=False)).first()
        assert row is not None
        return rec.message_record(row)

    async def record_model_step(self, step: ModelStep) -> MessageRecord:
        """The step's quota settle, assistant message, usage row and rollup in ONE transaction.

        When the settlement's quota is a `SqlQuotaStore` on another database (or not SQL at all), it is
        settled first on its own, as before. A step whose `message_id` is stored already writes nothing.
        """
        now = _now()
        record = MessageRecord(
            id=step.message_id,
            thread_id=step.thread_id,
            role="assistant",
            content=step.content,
            tool_calls=None if step.tool_calls is None else list(step.tool_calls),
            usage=step.usage,
            persona=step.persona,
            run_id=step.run_id,
            created_at=now,
        )
        values = _message_values(record, step.tool_calls, None)
        settlement = step.settlement
        settle_here = (
            settlement is not None
            and isinstance(settlement.quota, SqlQuotaStore)
            and settlement.quota.shares_transactions_with(self.engine)
        )
        if settlement is not None and not settle_here:
            await settlement.quota.settle(settlement.reservation, tokens=settlement.tokens, usd=settlement.usd)
        end = step.run_end
        ending = None
        if end is not None:
            ending = _run_end_values(
                end.status, None, end.step_count, end.input_tokens, end.output_tokens, end.cost_usd, _now()
            )
        try:
            if self._postgres:
                await self._model_step_statement(step, values, now, settle_here, ending)
            else:
                await self._write(partial(_model_step_unit, step, values, now, settle_here, ending))
        except _Replayed:
            # Written before (the message, and with it the tool call and the run end), unless by an older
            # writer that wrote them one after the other: those are written once, on their own.
            if step.tool_call is not None:
                await record_tool_call_once(self, step.tool_call, step.approval)
            if end is not None:
                await end.record(self)
            return await self._stored_message(step.message_id)
        except (ConflictError, sa.exc.IntegrityError):
            if step.tool_call is None:
                raise
            # Another call under the tool call's id (the whole write rolled back): the step as it was written
            # before the call joined it, then the conflict, as a separate `record_tool_call_once` raises it.
            await self.record_model_step(dataclasses.replace(step, tool_call=None, approval=None))
            await record_tool_call_once(self, step.tool_call, step.approval)
        return record

    async def _model_step_statement(
        self,
        step: ModelStep,
        values: dict[str, Any],
        now: datetime,
        settle_here: bool,
        ending: dict[str, Any] | None,
    ) -> None:
        """PostgreSQL: the step as ONE statement in autocommit (`pg_steps.model_step_statement`), then the
        budget thresholds its settle reached claimed right after it (a crash in between: the next settle on
        that counter claims them)."""
        settlement = step.settlement
        held = None
        if settle_here and settlement is not None and settlement.reservation.scopes:
            held = settlement.reservation
        approval_values = None if step.approval is None else _approval_values(step.approval)
        end = step.run_end
        # After a commit that did not wait for the disk (store_commit="effects"), written only on the same server.
        deferred_on = self._units.take_deferred(step.run_id)
        stmt = pg_steps.model_step_statement(
            None if held is None else len(held.scopes),
            step.ledger is not None,
            tool_call=step.tool_call is not None,
            approval=approval_values is not None,
            run_end=None if ending is None else tuple(sorted(ending)),
            titled=end is not None and end.thread_title is not None,
            guarded=deferred_on is not None,
        )
        settle = None
        if held is not None and settlement is not None:
            settle = (held.id, settled_counters(held), held.tokens, held.usd, settlement.tokens, settlement.usd)
        params = pg_steps.model_step_params(values, now, settle, step.ledger)
        if step.tool_call is not None:
            params.update(pg_steps.tool_call_params(_row(step.tool_call), approval_values))
        if end is not None and ending is not None:
            params.update(_run_end_params(end.run_id, ending, end.thread_title))
        if deferred_on is not None:
            params["_server_started"] = deferred_on
        outcome = (await self._units.one(stmt, params, write=True)).one()
        if deferred_on is not None and outcome["restarted"]:
            raise StoreError(
                f"the PostgreSQL server restarted after run {step.run_id}'s last commit, which did not wait for the "
                'disk (store_commit="effects") and may be lost: its model step is not written on top of it'
            )
        _live_and_new(outcome, step.thread_id)
        if held is None or settlement is None:
            return
        used = {(str(s), str(k), str(p)): (int(t), float(u)) for s, k, p, t, u in outcome["used"]}
        reached = crossings_to_claim(self.engine.sync_engine, held, settlement.tokens, settlement.usd, used)
        if reached:
            await self._units.run(lambda conn: claim_won(conn, held, reached), write=True, one_statement=True)

    async def list_messages(self, thread_id: str, *, run_id: str | None = None) -> list[MessageRecord]:
        """The thread's messages, oldest first; with `run_id`, only that run's."""
        if run_id is None:
            rows = await self._read(lambda conn: conn.execute(_MESSAGES_OF, {"tid": thread_id}).mappings().all())
        else:
            every = await self._read(lambda conn: conn.execute(_RUN_MESSAGES, {"rid": run_id}).mappings().all())
            rows = [r for r in every if r["thread_id"] == thread_id]
        return [rec.message_record(r) for r in rows]

    async def load_thread(self, thread_id: str, *, after: str | None = None) -> ThreadHistory:
        """The thread, its messages and its tool calls, read in one transaction (a consistent snapshot).

        With `after` (a message id of the thread): only the later messages and their tool calls
        (`complete=False`); when that message is gone (truncated), everything. On PostgreSQL at READ
        COMMITTED each statement takes its own snapshot in a transaction or not, so they run in autocommit,
        each on the driver.
        """
        if self._postgres:
            return _history(*(await self._load_statement(thread_id, after)))
        return _history(*(await self._read(partial(_load_unit, thread_id, after))))

    async def _load_statement(self, thread_id: str, after: str | None) -> _Loaded:
        """PostgreSQL: `load_thread` as ONE statement (`pg_steps.load_thread_statement`), a second one only
        when the `after` message is gone."""
        since = after is not None
        params: dict[str, Any] = {"tid": thread_id, "mid": after} if since else {"tid": thread_id}
        found = (await self._units.one(pg_steps.load_thread_statement(since), params, write=False)).one()
        if since and not found["anchored"]:
            return await self._load_statement(thread_id, None)
        heads = pg_steps.json_rows(thread, None if found["head"] is None else [found["head"]])
        messages = pg_steps.json_rows(_message_table, found["messages"])
        return heads[0] if heads else None, messages, pg_steps.json_rows(tool_call, found["calls"]), not since

    # -- tool calls --

    async def record_tool_call(self, record: ToolCallRecord, approval: ApprovalRecord | None = None) -> None:
        """The audit row and, for an action parked for approval, its approval row — one transaction."""
        if approval is None:  # the common case: one statement, in autocommit
            conflict = f"tool call {record.id} of run {record.run_id} is already recorded (or its thread is unknown)"
            try:
                await self._units.one(_INSERT[tool_call.name], _row(record), write=True, keyed=True)
            except sa.exc.IntegrityError as exc:
                raise ConflictError(conflict) from exc
            return
        await self._units.run(lambda conn: _insert_tool_call(conn, record, approval), write=True)

    async def update_tool_call(self, run_id: str, tool_call_id: str, patch: ToolCallPatch) -> None:
        changes = _tool_call_changes(patch)
        if not changes:
            if await self.get_tool_call(run_id, tool_call_id) is None:
                raise NotFoundError(f"tool call {tool_call_id} of run {run_id} not found")
            return
        params = {**changes, "_run_id": run_id, "_tool_call_id": tool_call_id}
        if (await self._units.one(_UPDATE_TOOL_CALL, params, write=True, keyed=True)).rowcount == 0:
            raise NotFoundError(f"tool call {tool_call_id} of run {run_id} not found")

    async def record_tool_result(
        self, run_id: str, tool_call_id: str, patch: ToolCallPatch, *, reserve: QuotaReserve | None = None
    ) -> Reservation | None:
        """The tool call's result and the next model call's reservation in ONE transaction (on PostgreSQL with one
        limit: one statement) when the quota is a `SqlQuotaStore` on this database; else one after the other."""
        quota = None if reserve is None else reserve.quota
        changes = _tool_call_changes(patch)
        if (
            reserve is None
            or not changes
            or not (isinstance(quota, SqlQuotaStore) and quota.shares_transactions_with(self.engine))
        ):
            await self.update_tool_call(run_id, tool_call_id, patch)
            return None if reserve is None else await reserve.take()
        first = RowUpdate(
            table=tool_call.name,
            key={"run_id": run_id, "id": tool_call_id},
            values=changes,
            missing=f"tool call {tool_call_id} of run {run_id} not found",
        )
        return await reserve.call(quota.reserve, first=first)

    async def get_tool_call(self, run_id: str, tool_call_id: str) -> ToolCallRecord | None:
        params = {"_run_id": run_id, "_tool_call_id": tool_call_id}
        row = (await self._units.one(_TOOL_CALL, params, write=False)).first()
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
        await self._insert(
            approval,
            _approval_values(record),
            f"an approval for tool call {record.tool_call_id} of run {record.run_id} already exists",
        )

    async def get_approval(self, run_id: str, tool_call_id: str) -> ApprovalRecord | None:
        params = {"_run_id": run_id, "_tcid": tool_call_id}
        row = await self._read(lambda conn: conn.execute(_APPROVAL, params).mappings().first())
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

        def work(conn: sa.Connection) -> tuple[ApprovalRecord, bool]:
            result = conn.execute(
                sa.update(approval)
                .where(*key, approval.c.status == "pending")
                .values(status=status, decided_by=decided_by, reason=reason, decided_at=_now())
            )
            row = conn.execute(sa.select(approval).where(*key)).mappings().first()
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
        values = _row(record)

        def work(conn: sa.Connection) -> None:
            conn.execute(_INSERT_USAGE, values)
            conn.execute(upsert_usage_daily(conn.dialect.name), usage_daily_params(record))

        await self._write(work)

    async def usage_tokens(self, actor_ref: str, start: datetime, end: datetime) -> int:
        """Input + output tokens of the actor's ledger rows with start <= created_at <= end.

        Whole UTC days (the quota endpoint's "today") are read from the daily rollup — a few rows by primary
        key, kept in step with the ledger in the same transactions — instead of summing the ledger.
        """
        first, last = to_micros(start), to_micros(end) + 1
        if first % MICROS_PER_DAY == 0 and last % MICROS_PER_DAY == 0 and last > first:
            d = usage_daily.c
            days = sa.select(sa.func.coalesce(sa.func.sum(d.input_tokens + d.output_tokens), 0)).where(
                d.actor_ref == actor_ref, d.day >= first // MICROS_PER_DAY, d.day < last // MICROS_PER_DAY
            )
            by_day = await self._read(lambda conn: conn.scalar(days))
            return int(by_day or 0)
        stmt = sa.select(
            sa.func.coalesce(sa.func.sum(token_usage.c.input_tokens + token_usage.c.output_tokens), 0)
        ).where(
            token_usage.c.actor_ref == actor_ref,
            token_usage.c.created_at >= start,
            token_usage.c.created_at <= end,
        )
        total = await self._read(lambda conn: conn.scalar(stmt))
        return int(total or 0)

    # -- runs --

    async def record_run_start(self, record: RunRecord, *, active_stream: bool = False) -> None:
        """Insert the run row; with `active_stream`, also mark it the thread's active stream (one transaction)."""
        values = _row(record)
        conflict = f"run {record.id} already exists (or thread {record.thread_id} is unknown)"

        rollup = run_daily_params(
            record.started_at, record.agent_name, started=True, status=record.status, finished_at=record.finished_at
        )

        def work(conn: sa.Connection) -> None:
            _insert_or_conflict(conn, run, values, conflict)
            direct.execute(conn, upsert_run_daily(conn.dialect.name), rollup, keyed=True)
            if active_stream:
                direct.execute(conn, _STREAMING, {"tid": record.thread_id, "rid": record.id})

        if not self._postgres:
            await self._write(work)
            return
        stmt = pg_steps.run_start_statement(active_stream)
        try:
            await self._units.one(stmt, pg_steps.run_start_params(values, rollup), write=True)
        except sa.exc.IntegrityError as exc:
            raise ConflictError(conflict) from exc

    async def open_run(
        self,
        record: RunRecord,
        *,
        new_thread: NewThread | None = None,
        owner_id: str | None = None,
        active_stream: bool = False,
    ) -> RunOpened:
        """The run's start as one transaction (SQLite) or one statement (PostgreSQL): `stores/sql/run_start.py`.
        The owner row is the lease store's (`agent_run_owner`, this database's)."""
        now = _now()
        created: ThreadRecord | None = None
        if new_thread is not None:
            created = ThreadRecord(
                id=new_thread.thread_id or _new_id(),
                actor_ref=new_thread.actor_ref,
                tenant_ref=new_thread.tenant_ref,
                title=new_thread.title,
                persona=new_thread.persona,
                transient=new_thread.transient,
                active_stream_id=record.id if active_stream else None,
                created_at=now,
                updated_at=now,
            )
            record = _with_thread(record, created.id)
        rows = run_start.OpenRunRows(
            thread=None if created is None else _thread_values(created),
            run=_row(record),
            rollup=run_daily_params(
                record.started_at, record.agent_name, started=True, status=record.status, finished_at=record.finished_at
            ),
            owner=None if owner_id is None else {"run_id": record.id, "owner_id": owner_id, "claimed_at": now},
        )
        if not self._postgres:
            await self._write(partial(run_start.open_run_unit, rows, active_stream))
        else:
            stmt = run_start.open_run_statement(created is not None, active_stream, owner_id is not None)
            try:
                outcome = (await self._units.one(stmt, run_start.open_run_params(rows), write=True)).one()
            except sa.exc.IntegrityError as exc:
                raise rows.run_conflict() from exc
            if not outcome["live"]:
                raise rows.thread_conflict() if created is not None else NotFoundError("thread not found")
        return RunOpened(run=record, thread=created)

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
        thread_title: str | None = None,
    ) -> bool:
        values = _run_end_values(
            status, error, step_count, input_tokens, output_tokens, cost_usd, finished_at or _now()
        )
        if not self._postgres:
            return await self._write(partial(_run_end_unit, run_id, values, thread_title))
        self._units.take_deferred(run_id)  # ended before its next model step (a failed model call)
        stmt = pg_steps.run_end_statement(tuple(sorted(values)), thread_title is not None)
        return bool(
            (await self._units.one(stmt, _run_end_params(run_id, values, thread_title), write=True)).one()["ended"]
        )

    async def get_run(self, run_id: str) -> RunRecord | None:
        row = (await self._units.one(_RUN, {"_run_id": run_id}, write=False)).first()
        return None if row is None else rec.run_record(row)

    async def run_owner(self, run_id: str) -> str | None:
        stmt = sa.select(run.c.actor_ref).where(run.c.id == run_id)
        owner: str | None = await self._read(lambda conn: conn.scalar(stmt))
        return owner

    async def list_runs_by_status(self, status: RunStatus, *, limit: int = 100) -> list[RunRecord]:
        stmt = sa.select(run).where(run.c.status == status).order_by(run.c.started_at, run.c.id).limit(limit)
        return [rec.run_record(r) for r in await self._read_all(stmt)]


def _row(record: Any) -> dict[str, Any]:
    """A record's fields as column values. Shallow, unlike `dataclasses.asdict` (which deep-copies every
    nested dict and list on the hot path): the JSON columns serialise nested values as they are."""
    return {f.name: getattr(record, f.name) for f in fields(record)}


def _with_thread(record: RunRecord, thread_id: str) -> RunRecord:
    """A copy of `record` on `thread_id` (shallow, as `_row`: `dataclasses.replace` re-runs `__init__`)."""
    clone: RunRecord = object.__new__(RunRecord)
    clone.__dict__.update(record.__dict__)
    clone.thread_id = thread_id
    return clone


def _run_end_values(
    status: str,
    error: str | None,
    step_count: int | None,
    input_tokens: int | None,
    output_tokens: int | None,
    cost_usd: float | None,
    finished_at: datetime,
) -> dict[str, Any]:
    """The run columns `record_run_end` sets (the counters only when given)."""
    values: dict[str, Any] = {"status": status, "error": error, "finished_at": finished_at}
    optional = {"step_count": step_count, "input_tokens": input_tokens, "output_tokens": output_tokens}
    values.update({k: v for k, v in optional.items() if v is not None})
    if cost_usd is not None:
        values["cost_usd"] = cost_usd
    return values


def _run_end_params(run_id: str, values: dict[str, Any], thread_title: str | None) -> dict[str, Any]:
    """`pg_steps.run_end_statement`'s parameters (`model_step_statement`'s with a run end)."""
    params = {f"e_{k}": v for k, v in values.items()}
    params.update(_run_id=run_id, _title=thread_title)
    return params


def _run_end_unit(run_id: str, values: dict[str, Any], thread_title: str | None, conn: sa.Connection) -> bool:
    """`record_run_end` in the caller's transaction: (the title,) the compare-and-set end, the rollup."""
    if thread_title is not None:  # the title first, as the loop wrote it before the run end
        direct.execute(conn, _RENAME_RUN_THREAD, {"_run_id": run_id, "_title": thread_title})
    ended = direct.execute(conn, _END_RUN, {**values, "_run_id": run_id}, keyed=True).first()
    if ended is None:
        return False
    rollup = run_daily_params(
        ended["started_at"],
        ended["agent_name"],
        started=False,
        status=values["status"],
        finished_at=ended["finished_at"],
    )
    direct.execute(conn, upsert_run_daily(conn.dialect.name), rollup, keyed=True)
    return True


def _tool_call_changes(patch: ToolCallPatch) -> dict[str, Any]:
    """The columns `patch` sets; a result (executed or failed) also stamps `executed_at`."""
    changes = patch.changes()
    if changes.get("status") in ("executed", "failed"):
        changes["executed_at"] = _now()
    return changes


def _insert_or_conflict(conn: sa.Connection, table: sa.Table, values: dict[str, Any], conflict: str) -> None:
    # No savepoint: an IntegrityError ends the whole unit (rolled back), which is what a conflict means here.
    try:
        stmt = _INSERT.get(table.name)
        if stmt is None:
            conn.execute(sa.insert(table), values)
        else:
            direct.execute(conn, stmt, values, keyed=True)
    except sa.exc.IntegrityError as exc:
        raise ConflictError(conflict) from exc


def _model_step_unit(
    step: ModelStep,
    values: dict[str, Any],
    now: datetime,
    settle_here: bool,
    ending: dict[str, Any] | None,
    conn: sa.Connection,
) -> None:
    """`record_model_step` as one transaction: settle, thread bump, message (once), usage row, daily rollup,
    the first tool call's row, the run's end."""
    settlement = step.settlement
    if settle_here and settlement is not None:  # undone with the unit when the message is stored already
        settle_reservation(conn, settlement.reservation, settlement.tokens, settlement.usd, charge_released=True)
    _bump(conn, step.thread_id, now)
    if direct.execute(conn, _INSERT_MESSAGE_ONCE[conn.dialect.name], values, keyed=True).rowcount == 0:
        raise _Replayed
    if step.ledger is not None:
        direct.execute(conn, _INSERT_USAGE, _row(step.ledger), keyed=True)
        direct.execute(conn, upsert_usage_daily(conn.dialect.name), usage_daily_params(step.ledger), keyed=True)
    if step.tool_call is not None:
        _insert_tool_call(conn, step.tool_call, step.approval)
    if step.run_end is not None and ending is not None:
        _run_end_unit(step.run_end.run_id, ending, step.run_end.thread_title, conn)


def _insert_tool_call(conn: sa.Connection, record: ToolCallRecord, approval: ApprovalRecord | None) -> None:
    """The audit row and an action's approval, in the caller's transaction (a duplicate: ConflictError)."""
    conflict = f"tool call {record.id} of run {record.run_id} is already recorded (or its thread is unknown)"
    _insert_or_conflict(conn, tool_call, _row(record), conflict)
    if approval is not None:
        _insert_or_conflict(
            conn,
            _approval_table,
            _approval_values(approval),
            f"an approval for tool call {approval.tool_call_id} of run {approval.run_id} already exists",
        )


_Loaded = tuple[Mapping[Any, Any] | None, Sequence[Mapping[Any, Any]], Sequence[Mapping[Any, Any]], bool]


def _tool_calls_of_messages(conn: sa.Connection, thread_id: str, asked: list[str]) -> Sequence[Mapping[Any, Any]]:
    return list(conn.execute(_TOOL_CALLS_OF_MESSAGES, {"tid": thread_id, "mids": asked}).mappings().all())


def _load_unit(thread_id: str, after: str | None, conn: sa.Connection) -> _Loaded:
    """`load_thread`'s reads in one transaction: (thread row, message rows, tool call rows, complete)."""
    params: dict[str, Any] = {"tid": thread_id}
    head = direct.execute(conn, _THREAD, params).first()
    since = [] if after is None else direct.execute(conn, _MESSAGES_FROM, {**params, "mid": after}).rows
    if not since or since[0]["id"] != after:
        messages = direct.execute(conn, _MESSAGES_OF, params).rows
        return head, messages, direct.execute(conn, _TOOL_CALLS_OF, params).rows, True
    messages = since[1:]
    asked = [m["id"] for m in messages if m["tool_calls"]]
    if not asked:
        return head, messages, [], False
    return head, messages, _tool_calls_of_messages(conn, thread_id, asked), False


def _history(
    head: Mapping[Any, Any] | None,
    messages: Sequence[Mapping[Any, Any]],
    calls: Sequence[Mapping[Any, Any]],
    complete: bool,
) -> ThreadHistory:
    return ThreadHistory(
        thread=None if head is None else rec.thread_record(head),
        messages=[rec.message_record(r) for r in messages],
        tool_calls=[rec.tool_call_record(r) for r in calls],
        complete=complete,
    )


def _new_message_values(message: NewMessage) -> dict[str, Any]:
    """The row of a `NewMessage` appended now (its id chosen here when it has none)."""
    record = MessageRecord(
        id=message.message_id or _new_id(),
        thread_id=message.thread_id,
        role=message.role,
        content=message.content,
        attachments=None if message.attachments is None else list(message.attachments),
        persona=message.persona,
        run_id=message.run_id,
        created_at=_now(),
    )
    return _message_values(record, None, message.attachments)


def _append_and_load_params(values: dict[str, Any], after: str | None) -> dict[str, Any]:
    params = {**pg_steps.message_params(values), "m_created_at_bump": values["created_at"], "tid": values["thread_id"]}
    if after is not None:
        params["mid"] = after
    return params


def _append_and_load_unit(values: dict[str, Any], after: str | None, conn: sa.Connection) -> _Loaded:
    """`append_and_load` on SQLite: the message once (into a live thread, bumped only when new), then the
    reads of `_load_unit` in the same transaction."""
    thread_id = values["thread_id"]
    try:
        inserted = direct.execute(conn, _INSERT_MESSAGE_ONCE["sqlite"], values, keyed=True).rowcount
    except sa.exc.IntegrityError as exc:  # no such thread (the foreign key)
        raise NotFoundError(f"thread {thread_id} not found") from exc
    if inserted:
        _bump(conn, thread_id, values["created_at"])  # a deleted thread: NotFoundError, the insert rolled back
    return _load_unit(thread_id, after, conn)


def _live_and_new(outcome: dict[str, Any], thread_id: str) -> None:
    """What a one-statement message write on PostgreSQL found: a missing thread or a replayed message."""
    if not outcome["live"]:
        raise NotFoundError(f"thread {thread_id} not found")
    if not outcome["inserted"]:
        raise _Replayed


def _bump(conn: sa.Connection, thread_id: str, now: datetime) -> None:
    if direct.execute(conn, _BUMP_THREAD, {"tid": thread_id, "now": now}).rowcount == 0:
        raise NotFoundError(f"thread {thread_id} not found")


def _append(conn: sa.Connection, values: dict[str, Any]) -> None:
    _bump(conn, values["thread_id"], values["created_at"])
    direct.execute(conn, _INSERT_MESSAGE, values, keyed=True)


def _message_values(
    record: MessageRecord, tool_calls: Sequence[ToolCall] | None, attachments: Sequence[Attachment] | None
) -> dict[str, Any]:
    return {
        "id": record.id,
        "thread_id": record.thread_id,
        "role": record.role,
        "content": record.content,
        "tool_calls": rec.tool_calls_json(tool_calls),
        "attachments": rec.attachments_json(attachments),
        "usage": record.usage,
        "persona": record.persona,
        "run_id": record.run_id,
        "created_at": record.created_at,
    }


def _approval_values(record: ApprovalRecord) -> dict[str, Any]:
    values = _row(record)
    values["approver_roles"] = None if record.approver_roles is None else list(record.approver_roles)
    return values


def _thread_values(record: ThreadRecord) -> dict[str, Any]:
    return _row(record)
