"""PostgreSQL: the hot path's multi-statement units as ONE statement each (data-modifying CTEs).

On PostgreSQL a unit costs its round trips: BEGIN, each statement, COMMIT. A model step's write (quota
settle + assistant message + thread bump + usage row + daily rollup) was eight of them, a budget
reservation five. Written as one statement, each is ONE round trip and runs in autocommit
(`Units.run(..., one_statement=True)`): a single statement is atomic, so it still commits wholly or not at
all, and what it writes is exactly what the multi-statement unit wrote (the store contract suite runs
against both).

How the conditions of the multi-statement units carry over, since a CTE cannot roll the others back:
every write is made conditional on the one it depended on. The message is inserted only into a live thread
(the thread row locked `FOR NO KEY UPDATE`, so a concurrent soft delete is waited for and re-checked) and
only once (`ON CONFLICT (id) DO NOTHING`); the thread bump, the settle and the usage rows only happen when
that insert did. The statement returns whether the thread was live and whether the message was new, which
is all the caller needs to raise `NotFoundError` or read the replayed message.

Reads of several tables (the quota check's rules and counters, `load_thread`'s thread, messages and tool
calls) are ONE statement as well: each table's rows aggregated as a JSON array (`json_build_object` per
row), read back by `json_rows` with the values the columns' types give.

The statements are built once per shape and reused as is; they run on asyncpg directly (`direct.py`),
compiled once, through asyncpg's prepared-statement cache.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg

from agora_agent.stores.sql.rollup import usage_daily_params
from agora_agent.stores.sql.tables import (
    MICROS_PER_DAY,
    UtcMicros,
    budget_counter,
    budget_reservation,
    budget_rule,
    from_micros,
    message,
    metadata,
    run,
    run_daily,
    thread,
    token_usage,
    tool_call,
    usage_daily,
)
from agora_agent.stores.sql.tables import approval as approval_table
from agora_agent.stores.sql.tables import tool_call as tool_call_table

__all__ = [
    "append_and_load_statement",
    "append_message_statement",
    "counters_by_key",
    "json_rows",
    "load_thread_statement",
    "message_params",
    "model_step_params",
    "model_step_statement",
    "quota_check_statement",
    "reserve_statement",
    "row_update",
    "row_update_cte",
    "run_end_statement",
    "run_start_params",
    "run_start_statement",
    "tool_call_params",
]

_MESSAGE_COLUMNS = (
    "id",
    "thread_id",
    "role",
    "content",
    "tool_calls",
    "attachments",
    "usage",
    "persona",
    "run_id",
    "created_at",
)
_USAGE_COLUMNS = tuple(c.name for c in token_usage.columns)
_DAILY_SUMMED = tuple(c.name for c in usage_daily.columns if c.name not in ("day", "actor_ref", "model_id"))
_DAILY_COLUMNS = tuple(c.name for c in usage_daily.columns)


def _bound(table: sa.Table, columns: Sequence[str], prefix: str) -> list[sa.BindParameter[Any]]:
    """One typed bind parameter per column (`<prefix><column>`): the column's type processes the value."""
    return [sa.bindparam(prefix + name, type_=table.c[name].type) for name in columns]


def _insert_from(table: sa.Table, columns: Sequence[str], prefix: str, source: sa.CTE) -> Any:
    """INSERT one row of bound values, once per row of `source` (zero rows: nothing inserted)."""
    select = sa.select(*_bound(table, columns, prefix)).select_from(source)
    return pg.insert(table).from_select(list(columns), select)


_SERVER_STARTED = sa.literal_column("pg_postmaster_start_time()", sa.DateTime(timezone=True))
_SERVER_STARTED_BEFORE = sa.bindparam("_server_started", type_=sa.DateTime(timezone=True))


def _message_into_live_thread(
    now_param: str, titled: bool = False, guarded: bool = False
) -> tuple[sa.CTE, sa.CTE, sa.CTE]:
    """The CTEs `live` (the thread, locked, if not deleted), `inserted` (the new message) and `bumped` (with
    `titled`, renamed to `_title` too: a statement may change a row once). `guarded`: `live` (and so every write
    after it) also needs the server to be the one that took the run's last deferred commit (`_server_started`)."""
    conditions = [thread.c.id == sa.bindparam("m_thread_id", type_=thread.c.id.type), thread.c.deleted_at.is_(None)]
    if guarded:
        conditions.append(_SERVER_STARTED == _SERVER_STARTED_BEFORE)
    live = sa.select(thread.c.id).where(*conditions).with_for_update(key_share=True).cte("live")
    inserted = (
        _insert_from(message, _MESSAGE_COLUMNS, "m_", live)
        .on_conflict_do_nothing(index_elements=["id"])
        .returning(message.c.id)
        .cte("inserted")
    )
    changes: dict[str, Any] = {"updated_at": sa.bindparam(now_param, type_=thread.c.updated_at.type)}
    if titled:
        changes["title"] = sa.bindparam("_title", type_=thread.c.title.type)
    bumped = (
        sa.update(thread)
        .where(thread.c.id.in_(sa.select(live.c.id)), sa.exists(sa.select(inserted.c.id)))
        .values(changes)
        .cte("bumped")
    )
    return live, inserted, bumped


def _outcome(live: sa.CTE, inserted: sa.CTE, *writes: sa.CTE, used: Any = None) -> sa.Select[Any]:
    """`(live, inserted[, used])`: whether the thread was live, whether the message was new (and the settled
    counters' new used totals, as JSON `[[scope, key, period, tokens, usd], …]`)."""
    columns: list[Any] = [
        sa.exists(sa.select(live.c.id)).label("live"),
        sa.exists(sa.select(inserted.c.id)).label("inserted"),
    ]
    if used is not None:
        columns.append(used.label("used"))
    return sa.select(*columns).add_cte(*writes)


@cache
def append_message_statement() -> sa.Executable:
    """A message appended to a live thread, which is bumped (`_append` of the store as one statement)."""
    live, inserted, bumped = _message_into_live_thread("m_created_at_bump")
    return _outcome(live, inserted, inserted, bumped)


_TOOL_CALL_COLUMNS = tuple(c.name for c in tool_call.columns if c.name != "seq")
_APPROVAL_COLUMNS = tuple(c.name for c in approval_table.columns)


@cache
def model_step_statement(
    settle_scopes: int | None,
    ledger: bool,
    *,
    tool_call: bool = False,
    approval: bool = False,
    run_end: tuple[str, ...] | None = None,
    titled: bool = False,
    guarded: bool = False,
) -> sa.Executable:
    """`record_model_step` as one statement: settle `settle_scopes` counters (None: no settlement), message,
    thread bump, with `ledger` the usage row and its daily rollup, with `tool_call` the first tool call's audit
    row (and with `approval` its approval row), with `run_end` (the columns it sets) the run's end as
    `run_end_statement` writes it (with `titled`, the thread's new title) — all only if the message is new.
    A duplicate tool call or approval fails the whole statement. `guarded`: nothing is written unless the server
    started at `_server_started` (the run's last deferred commit went there); `restarted` says it did not."""
    live, inserted, bumped = _message_into_live_thread("now", titled, guarded)
    writes: list[sa.CTE] = [inserted, bumped]
    used: Any = None
    if settle_scopes:
        r, c = budget_reservation.c, budget_counter.c
        settled = (
            sa.delete(budget_reservation)
            .where(r.id == sa.bindparam("r_id", type_=r.id.type), sa.exists(sa.select(inserted.c.id)))
            .returning(r.id)
            .cte("settled")
        )
        scope_match = sa.or_(
            *(
                sa.and_(
                    c.scope == sa.bindparam(f"r_scope_{i}", type_=c.scope.type),
                    c.key == sa.bindparam(f"r_key_{i}", type_=c.key.type),
                    c.period == sa.bindparam(f"r_period_{i}", type_=c.period.type),
                )
                for i in range(settle_scopes)
            )
        )
        # The step's usage is charged whenever its message is new — also when its reservation was released
        # meanwhile (an expiry sweep, a process that lost the run): the usage row is written then too, and the
        # counter must not fall behind the ledger. Only a reservation still held gives its reserved part back.
        held = sa.exists(sa.select(settled.c.id))
        counters = (
            sa.update(budget_counter)
            .where(scope_match, sa.exists(sa.select(inserted.c.id)))
            .values(
                reserved_tokens=c.reserved_tokens
                - sa.case((held, sa.bindparam("r_reserved_tokens", type_=sa.BigInteger())), else_=0),
                reserved_usd=c.reserved_usd
                - sa.case((held, sa.bindparam("r_reserved_usd", type_=sa.Float())), else_=0.0),
                used_tokens=c.used_tokens + sa.bindparam("r_tokens", type_=sa.BigInteger()),
                used_usd=c.used_usd + sa.bindparam("r_usd", type_=sa.Float()),
            )
            .returning(c.scope, c.key, c.period, c.used_tokens, c.used_usd)
            .cte("counted")
        )
        writes += [settled, counters]
        k = counters.c
        rows = sa.func.json_agg(sa.func.json_build_array(k.scope, k.key, k.period, k.used_tokens, k.used_usd))
        used = sa.select(sa.func.coalesce(rows, sa.literal_column("'[]'::json"))).select_from(counters)
        used = sa.type_coerce(used.scalar_subquery(), sa.JSON)
    if ledger:
        usage = _insert_from(token_usage, _USAGE_COLUMNS, "u_", inserted).cte("ledger")
        daily_insert = _insert_from(usage_daily, _DAILY_COLUMNS, "d_", inserted)
        daily = daily_insert.on_conflict_do_update(
            index_elements=["day", "actor_ref", "model_id"],
            set_={name: usage_daily.c[name] + daily_insert.excluded[name] for name in _DAILY_SUMMED},
        ).cte("daily")
        writes += [usage, daily]
    if tool_call:
        writes.append(_insert_from(tool_call_table, _TOOL_CALL_COLUMNS, "t_", inserted).cte("called"))
        if approval:
            writes.append(_insert_from(approval_table, _APPROVAL_COLUMNS, "a_", inserted).cte("parked"))
    if run_end is not None:
        writes += _run_end_ctes(run_end, sa.exists(sa.select(inserted.c.id)), prefix="run_")
    outcome = _outcome(live, inserted, *writes, used=used)
    if guarded:
        outcome = outcome.add_columns((_SERVER_STARTED != _SERVER_STARTED_BEFORE).label("restarted"))
    return outcome


def tool_call_params(values: Mapping[str, Any], approval: Mapping[str, Any] | None) -> dict[str, Any]:
    """The `t_` (tool call row) and `a_` (approval row) parameters of `model_step_statement`."""
    params = {f"t_{name}": values[name] for name in _TOOL_CALL_COLUMNS}
    if approval is not None:
        params.update({f"a_{name}": approval[name] for name in _APPROVAL_COLUMNS})
    return params


def message_params(values: dict[str, Any]) -> dict[str, Any]:
    """The `m_` parameters of a message row (the store's `_message_values`)."""
    return {f"m_{name}": values[name] for name in _MESSAGE_COLUMNS}


def model_step_params(
    values: dict[str, Any],
    now: Any,
    settlement: tuple[str, Sequence[tuple[str, str, str]], int, float, int, float] | None,
    ledger: Any,
) -> dict[str, Any]:
    """Parameters of `model_step_statement`: the message values, the settlement (reservation id, its
    (scope, key, period) counters, reserved tokens/usd, used tokens/usd) and the ledger `UsageRecord`."""
    params = message_params(values)
    params["now"] = now
    if settlement is not None:
        reservation_id, counters, reserved_tokens, reserved_usd, tokens, usd = settlement
        params.update(
            r_id=reservation_id,
            r_reserved_tokens=reserved_tokens,
            r_reserved_usd=reserved_usd,
            r_tokens=tokens,
            r_usd=usd,
        )
        for i, (scope, key, period) in enumerate(counters):
            params[f"r_scope_{i}"] = scope
            params[f"r_key_{i}"] = key
            params[f"r_period_{i}"] = period
    if ledger is not None:
        params.update({f"u_{name}": getattr(ledger, name) for name in _USAGE_COLUMNS})
        params.update({f"d_{name}": value for name, value in usage_daily_params(ledger).items()})
    return params


RowShape = tuple[str, tuple[str, ...], tuple[str, ...]]
"""A one-row UPDATE's shape: (table name, key columns, changed columns); parameters `k_<key>`, `w_<column>`."""


@cache
def row_update(shape: RowShape) -> Any:
    """The UPDATE of `shape` (built once per shape, so it compiles once)."""
    name, keys, columns = shape
    table = metadata.tables[name]
    return (
        sa.update(table)
        .where(*(table.c[k] == sa.bindparam(f"k_{k}", type_=table.c[k].type) for k in keys))
        .values({c: sa.bindparam(f"w_{c}", type_=table.c[c].type) for c in columns})
    )


@cache
def row_update_cte(shape: RowShape) -> Any:
    """`row_update(shape)` as the CTE `written`, returning its first key column for the row it changed."""
    table = metadata.tables[shape[0]]
    stmt: Any = row_update(shape)
    return stmt.returning(table.c[shape[1][0]]).cte("written")


def _without_flush_wait() -> list[Any]:
    """Result columns that let the statement's own commit return before its WAL reaches the disk
    (`synchronous_commit=off` for this transaction only: `set_config(..., is_local => true)`; the setting is read
    at commit, and the connection's own setting is untouched), and name the server that took it (its start
    time, `server_started`). For the statements whose commit only precedes a model call (`SqlBackend` with
    `store_commit="effects"`): the next statement that precedes an effect — the model step — waits for its own
    flush, and the WAL is flushed in order, so that wait covers these commits too. That model step is written
    only on the same server (`model_step_statement(guarded=True)`): a server restarted in between may have lost
    the deferred commit, and the run must not go on as if it had not."""
    return [
        sa.literal_column("set_config('synchronous_commit', 'off', true)").label("flush_deferred"),
        _SERVER_STARTED.label("server_started"),
    ]


@cache
def reserve_statement(
    tokens_limited: bool, usd_limited: bool, first: RowShape | None = None, defer_flush: bool = False
) -> sa.Executable:
    """The common case of a one-limit budget reservation as one statement: `(granted, held)`.

    With `first`, the statement begins with that row update (`written`: whether it found its row), and grants
    only if it did: the tool result before the next model call's reservation, committed together.

    The counter grows only while `used + reserved < limit` (a conditional UPDATE, re-checked by PostgreSQL
    on the latest row after waiting for its lock, as in the multi-statement unit) and only if this
    reservation's row does not exist yet (a retry after a lost commit reply grants nothing twice); the
    reservation row is written only when the counter grew. `held`: the row existed before the statement.
    Neither (no counter row yet this period, or no headroom): nothing was written, and the caller runs the
    full unit, which seeds the counter from the ledger or builds the refusal. `defer_flush`: its commit does not
    wait for the WAL flush (`_without_flush_wait`: a reservation always precedes a model call).
    """
    written = None if first is None else row_update_cte(first)
    held, columns = grant_ctes(
        tokens_limited, usd_limited, () if written is None else (sa.exists(sa.select(*written.c)),)
    )
    if defer_flush:
        columns += _without_flush_wait()
    if written is None:
        return sa.select(*columns).add_cte(held)
    return sa.select(*columns, sa.exists(sa.select(*written.c)).label("written")).add_cte(written, held)


def grant_ctes(tokens_limited: bool, usd_limited: bool, only_if: Sequence[Any] = ()) -> tuple[sa.CTE, list[Any]]:
    """`reserve_statement`'s grant as CTEs for a statement of its own or another's: the `held` CTE to add (it
    reads `granted`) and the `(granted, held)` columns; `only_if`: more conditions the grant needs. Parameters:
    `SqlQuotaStore.grant_params`."""
    c, r = budget_counter.c, budget_reservation.c
    reservation_id = sa.bindparam("_id", type_=r.id.type)
    conditions = [
        c.scope == sa.bindparam("_scope", type_=c.scope.type),
        c.key == sa.bindparam("_key", type_=c.key.type),
        c.period == sa.bindparam("_period", type_=c.period.type),
        ~sa.exists(sa.select(r.id).where(r.id == reservation_id)),
        *only_if,
    ]
    if tokens_limited:
        conditions.append(c.used_tokens + c.reserved_tokens < sa.bindparam("_limit_tokens", type_=sa.BigInteger()))
    if usd_limited:
        conditions.append(c.used_usd + c.reserved_usd < sa.bindparam("_limit_usd", type_=sa.Float()))
    granted = (
        sa.update(budget_counter)
        .where(*conditions)
        .values(
            reserved_tokens=c.reserved_tokens + sa.bindparam("_tokens", type_=sa.BigInteger()),
            reserved_usd=c.reserved_usd + sa.bindparam("_usd", type_=sa.Float()),
        )
        .returning(c.scope)
        .cte("granted")
    )
    held_columns = ("id", "scopes", "period", "tokens", "usd", "created_at", "run_id", "expires_at")
    held = _insert_from(budget_reservation, held_columns, "h_", granted).cte("held")
    columns = [
        sa.exists(sa.select(granted.c.scope)).label("granted"),
        sa.exists(sa.select(r.id).where(r.id == reservation_id)).label("held"),
    ]
    return held, columns


_RUN_DAILY_COUNTS = ("runs", "completed", "failed", "cancelled", "running", "settled", "duration_ms")


def _run_daily_upsert(select: sa.Select[Any]) -> Any:
    insert = pg.insert(run_daily).from_select(["day", "agent_name", *_RUN_DAILY_COUNTS], select)
    return insert.on_conflict_do_update(
        index_elements=["day", "agent_name"],
        set_={name: run_daily.c[name] + insert.excluded[name] for name in _RUN_DAILY_COUNTS},
    )


@cache
def run_start_statement(active_stream: bool) -> sa.Executable:
    """`record_run_start` as one statement: the run row, its daily rollup row and (with `active_stream`)
    the thread's active stream. A duplicate run id or an unknown thread fails the whole statement."""
    started = (
        pg.insert(run)
        .values({c.name: sa.bindparam(f"s_{c.name}", type_=c.type) for c in run.columns})
        .returning(run.c.id)
        .cte("started")
    )
    rollup_columns = ("day", "agent_name", *_RUN_DAILY_COUNTS)
    daily = _run_daily_upsert(sa.select(*_bound(run_daily, rollup_columns, "d_")).select_from(started)).cte("daily")
    writes = [started, daily]
    if active_stream:
        streaming = (
            sa.update(thread)
            .where(
                thread.c.id == sa.bindparam("s_thread_id", type_=thread.c.id.type), sa.exists(sa.select(started.c.id))
            )
            .values(active_stream_id=sa.bindparam("s_id_stream", type_=thread.c.active_stream_id.type))
            .cte("streaming")
        )
        writes.append(streaming)
    return sa.select(sa.exists(sa.select(started.c.id)).label("started")).add_cte(*writes)


def run_start_params(values: dict[str, Any], rollup: dict[str, Any]) -> dict[str, Any]:
    """Parameters of `run_start_statement`: the run row's values and `run_daily_params(...)`."""
    params = {f"s_{c.name}": values[c.name] for c in run.columns if c.name in values}
    params.update({f"d_{name}": value for name, value in rollup.items()})
    params["s_id_stream"] = values["id"]
    return params


def _run_end_ctes(changed: tuple[str, ...], *conditions: Any, prefix: str = "") -> tuple[sa.CTE, sa.CTE]:
    """The CTEs `<prefix>ended` (the run's end if it is still `running`, and `conditions`) and `<prefix>daily`
    (its move in the daily rollup)."""
    r = run.c
    ended = (
        sa.update(run)
        .where(r.id == sa.bindparam("_run_id", type_=r.id.type), r.status == "running", *conditions)
        .values({name: sa.bindparam(f"e_{name}", type_=r[name].type) for name in changed})
        .returning(r.started_at, r.agent_name, r.finished_at)
        .cte(f"{prefix}ended")
    )
    e = ended.c
    started = sa.type_coerce(e.started_at, sa.BigInteger())
    finished = sa.type_coerce(e.finished_at, sa.BigInteger())
    status = sa.bindparam("e_status", type_=r.status.type)
    one, zero = sa.literal(1, sa.BigInteger()), sa.literal(0, sa.BigInteger())
    rollup = sa.select(
        sa.cast(started // MICROS_PER_DAY, sa.Integer()),
        sa.func.coalesce(e.agent_name, ""),
        zero,
        sa.case((status == "completed", one), else_=zero),
        sa.case((status == "failed", one), else_=zero),
        sa.case((status == "cancelled", one), else_=zero),
        sa.literal(-1, sa.BigInteger()),
        sa.case((finished.is_not(None), one), else_=zero),
        sa.case((finished.is_not(None), finished // 1000 - started // 1000), else_=zero),
    ).select_from(ended)
    return ended, _run_daily_upsert(rollup).cte(f"{prefix}daily")


@cache
def run_end_statement(changed: tuple[str, ...], titled: bool) -> sa.Executable:
    """`record_run_end` as one statement: (the thread's title,) the run's end if it is still `running`
    (compare-and-set), and its move in the daily rollup from running to its terminal status.

    The rollup increments are computed from the row the end returns, like `run_daily_params(started=False)`
    does from it: the UTC day of `started_at`, `settled` = 1 (a terminal status always has `finished_at`),
    and the duration in whole milliseconds `finished_at / 1000 - started_at / 1000` (integer division of
    non-negative BIGINTs, i.e. Python's `//`).
    """
    r = run.c
    ended, daily = _run_end_ctes(changed)
    writes: list[sa.CTE] = []
    if titled:
        writes.append(
            sa.update(thread)
            .where(thread.c.id == sa.select(r.thread_id).where(r.id == sa.bindparam("_run_id")).scalar_subquery())
            .values(title=sa.bindparam("_title", type_=thread.c.title.type))
            .cte("titled")
        )
    writes += [ended, daily]
    return sa.select(sa.exists(sa.select(ended.c.started_at)).label("ended")).add_cte(*writes)


# -- reads of several tables as ONE statement: each table's rows as a JSON array ---------------------------------


def _json_object(table: sa.Table) -> Any:
    """A row of `table` as a JSON object keyed by column name (`json_build_object`; JSON columns nest as is)."""
    pairs: list[Any] = [(sa.literal_column(f"'{c.name}'"), c) for c in table.columns]
    return sa.func.json_build_object(*itertools.chain.from_iterable(pairs))


def _json_array(table: sa.Table, *order_by: Any) -> Any:
    row = _json_object(table)
    return sa.func.json_agg(pg.aggregate_order_by(row, *order_by) if order_by else row)


def json_rows(table: sa.Table, rows: Sequence[dict[str, Any]] | None) -> list[dict[str, Any]]:
    """Rows of `table` read back from `_json_object`s, with the values their columns' types give: the
    timestamps (BIGINT microseconds in JSON) as datetimes; everything else JSON returns as is (text,
    numbers — float8 prints its shortest exact form —, booleans, and the JSON columns' values)."""
    micros = [c.name for c in table.columns if isinstance(c.type, UtcMicros)]
    for row in rows or ():
        for name in micros:
            if row[name] is not None:
                row[name] = from_micros(row[name])
    return list(rows or ())


@cache
def load_thread_statement(since: bool) -> sa.Executable:
    """`load_thread` as ONE statement (one snapshot): the live thread row (`head`), its messages in order and
    its tool calls, as JSON. With `since`: only the messages after the message `mid` and their tool calls,
    and `anchored` — whether `mid` is still there (when not, the caller reads everything)."""
    return sa.select(*_thread_reads(since))


@cache
def append_and_load_statement(since: bool) -> sa.Executable:
    """`append_message` (of `append_message_statement`) and `load_thread_statement`'s reads as ONE statement:
    `(live, inserted, head, messages, calls[, anchored])`. The reads see the thread as it was before the
    statement (one snapshot): the message appended now is not among `messages` (nor the thread's bump in
    `head`) — the caller adds it."""
    live, inserted, bumped = _message_into_live_thread("m_created_at_bump")
    outcome = [sa.exists(sa.select(live.c.id)).label("live"), sa.exists(sa.select(inserted.c.id)).label("inserted")]
    return sa.select(*outcome, *_thread_reads(since)).add_cte(inserted, bumped)


@cache
def append_load_and_reserve_statement(
    since: bool, tokens_limited: bool, usd_limited: bool, defer_flush: bool = False
) -> sa.Executable:
    """`append_and_load_statement` and a one-limit grant (`grant_ctes`, only into a live thread) as ONE statement:
    a run's user message, its thread's history and its first model call's reservation, one commit. The message
    is written whatever the grant decides; neither `granted` nor `held`: the caller takes the reservation on its
    own (the full unit seeds a new period's counter or builds the refusal). `defer_flush`: as for
    `reserve_statement` (the first model call follows)."""
    live, inserted, bumped = _message_into_live_thread("m_created_at_bump")
    held, grant = grant_ctes(tokens_limited, usd_limited, (sa.exists(sa.select(live.c.id)),))
    if defer_flush:
        grant += _without_flush_wait()
    outcome = [sa.exists(sa.select(live.c.id)).label("live"), sa.exists(sa.select(inserted.c.id)).label("inserted")]
    return sa.select(*outcome, *grant, *_thread_reads(since)).add_cte(inserted, bumped, held)


def _thread_reads(since: bool) -> list[Any]:
    tid = sa.bindparam("tid", type_=thread.c.id.type)
    m, t = message.c, tool_call.c
    later: list[Any] = [m.thread_id == tid]
    asked: list[Any] = [t.thread_id == tid]
    extra: list[Any] = []
    if since:
        # The anchor is looked up by its id alone (the unique index), and the tool calls by their message ids:
        # with the thread in the same condition, a planner without fresh statistics (a table grown since its
        # last ANALYZE) walks the whole thread's index for them instead — 5 ms at 500 turns, not 0.6.
        # `anchored` checks the thread: when the anchor is not this thread's, the caller reads everything.
        mid = sa.bindparam("mid", type_=m.id.type)
        a = message.alias("anchor")
        anchor = sa.select(a.c.seq).where(a.c.id == mid).scalar_subquery()
        b = message.alias("asked")
        later.append(m.seq > anchor)
        asked = [t.message_id.in_(sa.select(b.c.id).where(b.c.thread_id == tid, b.c.seq > anchor))]
        owner = sa.select(a.c.thread_id).where(a.c.id == mid).scalar_subquery()
        extra.append(sa.func.coalesce(owner == tid, sa.false()).label("anchored"))
    head = sa.select(_json_object(thread)).where(thread.c.id == tid, thread.c.deleted_at.is_(None))
    messages = sa.select(_json_array(message, m.seq)).where(*later)
    calls = sa.select(_json_array(tool_call, t.created_at, t.seq)).where(*asked)
    return [
        sa.type_coerce(head.scalar_subquery(), sa.JSON).label("head"),
        sa.type_coerce(messages.scalar_subquery(), sa.JSON).label("messages"),
        sa.type_coerce(calls.scalar_subquery(), sa.JSON).label("calls"),
        *extra,
    ]


@cache
def quota_check_statement(rules_condition: Any) -> sa.Executable:
    """The quota check's reads as ONE statement: the budget rules matching `rules_condition` (parameters
    `_actor`, `_tenant`) and the counters of the actor (`_actor`) and its tenant (`_tenant`) in the periods
    `_day` and `_month`, as JSON arrays (`rules`, `counters`)."""
    c = budget_counter.c
    counters = sa.select(_json_array(budget_counter)).where(
        sa.or_(
            sa.and_(c.scope == "actor", c.key == sa.bindparam("_actor", type_=c.key.type)),
            sa.and_(c.scope == "tenant", c.key == sa.bindparam("_tenant", type_=c.key.type)),
        ),
        c.period.in_([sa.bindparam("_day", type_=c.period.type), sa.bindparam("_month", type_=c.period.type)]),
    )
    rules = sa.select(_json_array(budget_rule)).where(rules_condition)
    return sa.select(
        sa.type_coerce(rules.scalar_subquery(), sa.JSON).label("rules"),
        sa.type_coerce(counters.scalar_subquery(), sa.JSON).label("counters"),
    )


def counters_by_key(rows: Sequence[Mapping[str, Any]] | None) -> dict[tuple[str, str, str], Mapping[str, Any]]:
    """`quota_check_statement`'s counters by (scope, key, period)."""
    return {(r["scope"], r["key"], r["period"]): r for r in rows or ()}
