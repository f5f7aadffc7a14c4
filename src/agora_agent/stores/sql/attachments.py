"""`SqlAttachmentIndex`: the metadata of filesystem-staged attachments, in the agent's SQL database."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.ext.asyncio import AsyncEngine

from agora_agent.stores.attachments import StagedFile
from agora_agent.stores.sql.engine import retry_transient
from agora_agent.stores.sql.tables import attachment

__all__ = ["SqlAttachmentIndex"]


class SqlAttachmentIndex:
    """One row per upload (`agent_attachment`); `put` of an existing id changes nothing."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine

    async def put(self, record: StagedFile) -> None:
        values = {
            "media_id": record.media_id,
            "filename": record.filename,
            "content_type": record.content_type,
            "size_bytes": record.size_bytes,
            "actor_ref": record.actor_id,
            "tenant_ref": record.tenant_ref,
            "sha256": record.sha256,
            "created_at": record.created_at,
        }

        async def attempt() -> None:
            async with self.engine.begin() as conn:
                await conn.execute(sa.insert(attachment).values(values))

        await retry_transient(attempt)

    async def get(self, media_id: str) -> StagedFile | None:
        async with self.engine.connect() as conn:
            query = sa.select(attachment).where(attachment.c.media_id == media_id)
            row = (await conn.execute(query)).mappings().first()
        if row is None:
            return None
        return StagedFile(
            media_id=row["media_id"],
            filename=row["filename"],
            content_type=row["content_type"],
            size_bytes=row["size_bytes"],
            actor_id=row["actor_ref"],
            tenant_ref=row["tenant_ref"],
            sha256=row["sha256"],
            created_at=row["created_at"],
        )
