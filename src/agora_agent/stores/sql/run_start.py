"""A chat's start as ONE write: `SqlAgentStore.open_run` on SQLite (one transaction) and PostgreSQL (one statement).

A chat used to start with three units before its stream could open — `create_thread`, the lease store's
`claim_run`, `record_run_start` — each its own transaction (on a SQLite file, BEGIN IMMEDIATE … COMMIT three
times: most of what a chat cost before its first byte). Here they are one, and they write the same rows:

- the new thread, its `active_stream_id` already the run (what `record_run_start(active_stream=True)` set
  by an UPDATE right after); or, for an existing thread, that UPDATE made conditional on the thread being
  live — the liveness check the service's read made, now inside the write, so a thread deleted between
  the read and the write gets no run (NotFoundError, nothing written);
- the run row and its daily run-rollup increment (`rollup.run_daily_params(started=True)`);
- the run-owner lease row (`agent_run_owner`, as `SqlLeaseStore.claim_run` writes it): in the same
  transaction, so no crash leaves a run row without its owner, nor an owner without its run.

On PostgreSQL the same writes are data-modifying CTEs of one statement (as `pg_steps`), each conditional
on the one it depends on: the run is inserted once per row of the new thread (`ON CONFLICT DO NOTHING`:
a chosen id that exists inserts nothing) or of the live thread (locked `FOR KEY SHARE` against a concurrent
soft delete); the rollup, active stream and owner rows once per inserted run.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, fields
from functools import cache
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql as pg

from agora_agent.errors import ConflictError, NotFoundError
from agora_agent.records import RunRecord, ThreadRecord
from agora_agent.stores.sql import direct
from agora_agent.stores.sql.leases import claim_run_statement
from agora_agent.stores.sql.rollup import upsert_run_daily
from agora_agent.stores.sql.tables import run, run_daily, run_owner, thread

__all__ = ["OpenRunRows", "open_run_params", "open_run_statement", "open_run_unit"]

_LIVE = (thread.c.id == sa.bindparam("tid"), thread.c.deleted_at.is_(None))
_STREAM_INTO_LIVE = sa.update(thread).where(*_LIVE).values(active_stream_id=sa.bindparam("rid"))
_LIVE_THREAD = sa.select(thread.c.id).where(*_LIVE)
_INSERT_THREAD = sa.insert(thread)
_INSERT_RUN = sa.insert(run)
# the records' fields: the columns the store writes (the others keep their server defaults)
_THREAD_COLUMNS = tuple(f.name for f in fields(ThreadRecord) if f.name in thread.c)
_RUN_COLUMNS = tuple(f.name for f in fields(RunRecord) if f.name in run.c)
_RUN_DAILY_COLUMNS = tuple(c.name for c in run_daily.columns)


@dataclass(frozen=True, slots=True)
class OpenRunRows:
    """The rows of one run start: the new thread's values (None: an existing thread), the run's, its
    rollup increments and the owner row (None: no lease)."""

    thread: dict[str, Any] | None
    run: dict[str, Any]
    rollup: dict[str, Any]
    owner: dict[str, Any] | None

    def run_conflict(self) -> ConflictError:
        return ConflictError(f"run {self.run['id']} already exists (or thread {self.run['thread_id']} is unknown)")

    def thread_conflict(self) -> ConflictError:
        assert self.thread is not None
        return ConflictError(f"thread {self.thread['id']} already exists")


def open_run_unit(rows: OpenRunRows, active_stream: bool, conn: sa.Connection) -> None:
    """SQLite (and any non-PostgreSQL connection): the run start as one transaction (see the module docstring)."""
    if rows.thread is not None:
        try:
            direct.execute(conn, _INSERT_THREAD, rows.thread, keyed=True)
        except sa.exc.IntegrityError as exc:
            raise rows.thread_conflict() from exc
    else:
        tid = rows.run["thread_id"]
        if active_stream:
            found = direct.execute(conn, _STREAM_INTO_LIVE, {"tid": tid, "rid": rows.run["id"]}).rowcount > 0
        else:
            found = direct.execute(conn, _LIVE_THREAD, {"tid": tid}).first() is not None
        if not found:  # raised inside the unit: the transaction rolls back, nothing is written
            raise NotFoundError("thread not found")
    try:
        direct.execute(conn, _INSERT_RUN, rows.run, keyed=True)
    except sa.exc.IntegrityError as exc:
        raise rows.run_conflict() from exc
    direct.execute(conn, upsert_run_daily(conn.dialect.name), rows.rollup, keyed=True)
    if rows.owner is not None:
        direct.execute(conn, claim_run_statement(conn.dialect.name), rows.owner)


def _bound(table: sa.Table, columns: Sequence[str], prefix: str) -> list[sa.BindParameter[Any]]:
    return [sa.bindparam(prefix + name, type_=table.c[name].type) for name in columns]


def _insert_from(table: sa.Table, columns: Sequence[str], prefix: str, source: sa.CTE) -> Any:
    """INSERT one row of bound values once per row of `source` (zero rows: nothing inserted)."""
    return pg.insert(table).from_select(list(columns), sa.select(*_bound(table, columns, prefix)).select_from(source))


@cache
def open_run_statement(new_thread: bool, active_stream: bool, owned: bool) -> sa.Executable:
    """PostgreSQL: the run start as one statement returning `(live, started)` — whether the thread was
    created (`new_thread`) or found live, and whether the run row was inserted."""
    if new_thread:
        values = {name: sa.bindparam(f"t_{name}", type_=thread.c[name].type) for name in _THREAD_COLUMNS}
        parent = (
            pg.insert(thread).values(values).on_conflict_do_nothing(index_elements=["id"]).returning(thread.c.id)
        ).cte("created")
    else:
        parent = (
            sa.select(thread.c.id)
            .where(thread.c.id == sa.bindparam("s_thread_id", type_=thread.c.id.type), thread.c.deleted_at.is_(None))
            .with_for_update(key_share=True)
            .cte("live")
        )
    started = _insert_from(run, _RUN_COLUMNS, "s_", parent).returning(run.c.id).cte("started")
    daily_insert = _insert_from(run_daily, _RUN_DAILY_COLUMNS, "d_", started)
    counts = [c for c in _RUN_DAILY_COLUMNS if c not in ("day", "agent_name")]
    daily = daily_insert.on_conflict_do_update(
        index_elements=["day", "agent_name"],
        set_={name: run_daily.c[name] + daily_insert.excluded[name] for name in counts},
    ).cte("daily")
    writes: list[sa.CTE] = [parent, started, daily]
    if active_stream and not new_thread:  # a new thread is inserted with its active stream
        writes.append(
            sa.update(thread)
            .where(thread.c.id.in_(sa.select(parent.c.id)), sa.exists(sa.select(started.c.id)))
            .values(active_stream_id=sa.bindparam("o_run_id", type_=thread.c.active_stream_id.type))
            .cte("streaming")
        )
    if owned:
        claim = _insert_from(run_owner, ("run_id", "owner_id", "claimed_at"), "o_", started)
        writes.append(
            claim.on_conflict_do_update(
                index_elements=[run_owner.c.run_id], set_={"owner_id": claim.excluded.owner_id}
            ).cte("owned")
        )
    return sa.select(
        sa.exists(sa.select(parent.c.id)).label("live"), sa.exists(sa.select(started.c.id)).label("started")
    ).add_cte(*writes)


def open_run_params(rows: OpenRunRows) -> dict[str, Any]:
    """The parameters of `open_run_statement` for `rows`."""
    params = {f"s_{name}": rows.run[name] for name in _RUN_COLUMNS}
    params.update({f"d_{name}": value for name, value in rows.rollup.items()})
    params["o_run_id"] = rows.run["id"]
    if rows.thread is not None:
        params.update({f"t_{name}": rows.thread[name] for name in _THREAD_COLUMNS})
    if rows.owner is not None:
        params.update(o_owner_id=rows.owner["owner_id"], o_claimed_at=rows.owner["claimed_at"])
    return params
