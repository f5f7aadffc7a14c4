"""`SqlConfirmTokenStore`: single use of confirmed-tool tokens across processes.

A token is used when its row is inserted; the primary key makes a second insert fail, so two
workers racing on one token cannot both commit. Expired rows are deleted as new ones arrive.
"""

from __future__ import annotations

from datetime import UTC, datetime

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from agora_agent.stores.sql.engine import WRITE, retry_transient
from agora_agent.stores.sql.tables import confirm_token

__all__ = ["SqlConfirmTokenStore"]


class SqlConfirmTokenStore:
    """The `ConfirmTokenStore` on the agent's database (table `agent_confirm_token`)."""

    def __init__(self, engine: AsyncEngine) -> None:
        self._writer = engine.execution_options(**{WRITE: True})

    async def consume(self, token_id: str, *, tool_name: str, actor_ref: str, expires_at: datetime) -> bool:
        now = datetime.now(UTC)

        async def work(conn: AsyncConnection) -> bool:
            await conn.execute(sa.delete(confirm_token).where(confirm_token.c.expires_at < now))
            try:
                async with conn.begin_nested():
                    await conn.execute(
                        sa.insert(confirm_token).values(
                            token_id=token_id,
                            tool_name=tool_name,
                            actor_ref=actor_ref,
                            expires_at=expires_at,
                            used_at=now,
                        )
                    )
            except sa.exc.IntegrityError:
                return False
            return True

        async def attempt() -> bool:
            async with self._writer.begin() as conn:
                return await work(conn)

        return await retry_transient(attempt)
