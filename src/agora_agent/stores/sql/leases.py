"""`SqlLeaseStore`: process heartbeats and run owners in SQL (see stores/leases.py for the rules)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from agora_agent.stores.leases import ProcessIdentity
from agora_agent.stores.sql.engine import WRITE, retry_transient
from agora_agent.stores.sql.tables import process, run, run_owner
from agora_agent.stores.sql.units import units_for

__all__ = ["SqlLeaseStore", "claim_run_statement"]


def _build_claim(dialect_name: str) -> Any:
    insert = (postgresql.insert if dialect_name == "postgresql" else sqlite.insert)(run_owner).values(
        run_id=sa.bindparam("run_id"), owner_id=sa.bindparam("owner_id"), claimed_at=sa.bindparam("claimed_at")
    )
    return insert.on_conflict_do_update(
        index_elements=[run_owner.c.run_id], set_={"owner_id": insert.excluded.owner_id}
    )


# Built once per dialect: a statement reused as is compiles once (`direct.compiled` is keyed by its identity).
_CLAIMS = {name: _build_claim(name) for name in ("postgresql", "sqlite")}


def claim_run_statement(dialect_name: str) -> Any:
    """The upsert recording a run's owner; execute it with `{"run_id", "owner_id", "claimed_at"}`."""
    return _CLAIMS["postgresql" if dialect_name == "postgresql" else "sqlite"]


class SqlLeaseStore:
    """Leases shared by every process on one database."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        self._writer = engine.execution_options(**{WRITE: True})
        # The one-statement writes (a run's claim is on the path to a chat's first byte) run as the stores'
        # units: inline on a SQLite file (no aiosqlite thread hop), in autocommit on PostgreSQL.
        self._units = units_for(engine)
        self._claim = claim_run_statement(engine.dialect.name)

    def _insert(self, table: sa.Table) -> postgresql.Insert | sqlite.Insert:
        return (postgresql.insert if self.engine.dialect.name == "postgresql" else sqlite.insert)(table)

    async def _write(self, work: Callable[[AsyncConnection], object]) -> None:
        async def attempt() -> None:
            async with self._writer.begin() as conn:
                await work(conn)  # type: ignore[misc]

        await retry_transient(attempt)

    async def _one_statement(self, stmt: Any, params: dict[str, Any] | None = None) -> None:
        await self._units.run(lambda conn: conn.execute(stmt, params), write=True, one_statement=True)

    async def heartbeat(self, identity: ProcessIdentity, ttl: float) -> None:
        """Create or renew the lease of `identity` until now + `ttl` seconds."""
        now = datetime.now(UTC)
        expires = now + timedelta(seconds=ttl)
        stmt = self._insert(process).values(
            id=identity.id, host=identity.host, pid=identity.pid, started_at=now, heartbeat_at=now, expires_at=expires
        )
        stmt = stmt.on_conflict_do_update(
            index_elements=[process.c.id], set_={"heartbeat_at": now, "expires_at": expires}
        )
        await self._one_statement(stmt)

    async def release(self, owner_id: str) -> None:
        """Delete the lease (clean shutdown): this process's runs were closed by its runner."""
        await self._one_statement(sa.delete(process).where(process.c.id == owner_id))

    async def claim_run(self, run_id: str, owner_id: str) -> None:
        """Record the owner of a run started here (idempotent). On the path to a chat's first byte: one
        statement on the driver (`Units.one`, compiled once)."""
        params = {"run_id": run_id, "owner_id": owner_id, "claimed_at": datetime.now(UTC)}
        await self._units.one(self._claim, params, write=True)

    async def take_over(self, run_id: str, owner_id: str, previous: str | None) -> bool:
        """Compare-and-set the owner: True only for the one process that moved it from `previous`."""
        won = False

        async def work(conn: AsyncConnection) -> None:
            nonlocal won
            now = datetime.now(UTC)
            if previous is None:
                inserted = await conn.execute(
                    self._insert(run_owner)
                    .values(run_id=run_id, owner_id=owner_id, claimed_at=now)
                    .on_conflict_do_nothing()
                )
                won = inserted.rowcount > 0
            else:
                updated = await conn.execute(
                    sa.update(run_owner)
                    .where(run_owner.c.run_id == run_id, run_owner.c.owner_id == previous)
                    .values(owner_id=owner_id, claimed_at=now)
                )
                won = updated.rowcount > 0

        await self._write(work)
        return won

    async def lapsed_runs(
        self,
        *,
        now: datetime,
        ttl: float,
        host: str,
        alive: Callable[[int], bool],
        limit: int = 100,
        run_id: str | None = None,
        durable: bool = False,
    ) -> list[tuple[str, str | None]]:
        """`running` top-level runs whose owner's lease lapsed, whose owner is a dead pid on `host`, or
        that were never claimed and are older than `ttl` (a crash between the run row and the claim)."""
        stmt = (
            sa.select(
                run.c.id, run.c.started_at, run_owner.c.owner_id, process.c.host, process.c.pid, process.c.expires_at
            )
            .select_from(
                run.outerjoin(run_owner, run_owner.c.run_id == run.c.id).outerjoin(
                    process, process.c.id == run_owner.c.owner_id
                )
            )
            .where(
                run.c.status == "running",
                run.c.durable.is_(sa.true()) if durable else run.c.durable.is_(sa.false()),
                *([run.c.id == run_id] if run_id is not None else []),
                # Only candidates count toward the limit: a thousand runs parked on live owners must not
                # hide a lapsed one (the dead-pid check on this host is made below).
                sa.or_(
                    run_owner.c.owner_id.is_(None),
                    process.c.expires_at.is_(None),
                    process.c.expires_at < now,
                    process.c.host == host,
                ),
            )
            .order_by(run.c.started_at, run.c.id)
            .limit(limit * 4)
        )

        async def read() -> list[tuple[Any, ...]]:
            async with self.engine.connect() as conn:
                return [tuple(row) for row in (await conn.execute(stmt)).all()]

        lapsed: list[tuple[str, str | None]] = []
        for found, started_at, owner_id, owner_host, pid, expires_at in await retry_transient(read):
            if owner_id is None:
                if started_at < now - timedelta(seconds=ttl):
                    lapsed.append((found, None))
            elif expires_at is None or expires_at < now or (owner_host == host and pid is not None and not alive(pid)):
                lapsed.append((found, owner_id))
            if len(lapsed) >= limit:
                break
        return lapsed

    async def owners(self, run_ids: Sequence[str]) -> dict[str, str]:
        """The recorded owner of each of these runs (a run without an owner row is left out)."""
        if not run_ids:
            return {}
        stmt = sa.select(run_owner.c.run_id, run_owner.c.owner_id).where(run_owner.c.run_id.in_(list(run_ids)))

        async def read() -> dict[str, str]:
            async with self.engine.connect() as conn:
                return {str(r): str(o) for r, o in (await conn.execute(stmt)).all()}

        return await retry_transient(read)

    async def live_owners(self, *, now: datetime, host: str, alive: Callable[[int], bool]) -> list[str]:
        """Ids of the processes whose lease holds at `now` (a dead pid on `host` does not count)."""
        stmt = sa.select(process.c.id, process.c.host, process.c.pid).where(process.c.expires_at >= now)

        async def read() -> list[tuple[Any, ...]]:
            async with self.engine.connect() as conn:
                return [tuple(row) for row in (await conn.execute(stmt)).all()]

        return [
            found
            for found, owner_host, pid in await retry_transient(read)
            if not (owner_host == host and pid is not None and not alive(pid))
        ]
