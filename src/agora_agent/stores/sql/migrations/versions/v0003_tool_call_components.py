"""tool call components: the generative-UI components a successful tool call drew, kept with the thread

Revision ID: 0003
Revises: 0002
Create Date: 2026-12-01 08:00:00
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0003"
down_revision: str | None = "0002"
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    with op.batch_alter_table("agent_tool_call") as batch:
        batch.add_column(sa.Column("components", sa.JSON(), nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("agent_tool_call") as batch:
        batch.drop_column("components")
