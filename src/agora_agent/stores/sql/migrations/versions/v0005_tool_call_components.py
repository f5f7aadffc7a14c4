"""genui and attachments: the components a successful tool call drew (kept with the thread), and the
metadata of filesystem-staged attachments

Revision ID: 0005
Revises: 0004
Create Date: 2026-12-01 08:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0005"
down_revision: str | None = "0004"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("agent_tool_call") as batch:
        batch.add_column(sa.Column("components", sa.JSON(), nullable=True))
    op.create_table(
        "agent_attachment",
        sa.Column("media_id", sa.String(length=255), nullable=False),
        sa.Column("filename", sa.String(length=255), nullable=False),
        sa.Column("content_type", sa.String(length=255), nullable=False),
        sa.Column("size_bytes", sa.BigInteger(), nullable=False),
        sa.Column("actor_ref", sa.String(length=255), nullable=False),
        sa.Column("tenant_ref", sa.String(length=255), nullable=True),
        sa.Column("sha256", sa.String(length=64), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("media_id"),
    )
    op.create_index("ix_agent_attachment_actor", "agent_attachment", ["actor_ref", "created_at"])


def downgrade() -> None:
    op.drop_index("ix_agent_attachment_actor", table_name="agent_attachment")
    op.drop_table("agent_attachment")
    with op.batch_alter_table("agent_tool_call") as batch:
        batch.drop_column("components")
