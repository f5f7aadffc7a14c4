"""pgvector chunk table: id, document id, text, source, metadata (jsonb), model id, vector(N), tsvector;
HNSW index for the metric, GIN indexes for keyword search and metadata containment.

Revision ID: r0001
Revises:
Create Date: 2026-12-01 08:10:00
"""

from __future__ import annotations

from collections.abc import Sequence

from alembic import context, op

revision: str = "r0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None

OPCLASS = {"cosine": "vector_cosine_ops", "l2": "vector_l2_ops", "inner": "vector_ip_ops"}


def upgrade() -> None:
    attrs = context.config.attributes
    table, dimension, metric = attrs["rag_table"], int(attrs["rag_dimension"]), attrs["rag_metric"]
    op.execute("CREATE EXTENSION IF NOT EXISTS vector")
    op.execute(
        f"""
        CREATE TABLE {table} (
            id TEXT PRIMARY KEY,
            document_id TEXT NOT NULL,
            text TEXT NOT NULL,
            source TEXT,
            metadata JSONB NOT NULL DEFAULT '{{}}'::jsonb,
            model_id TEXT,
            embedding vector({dimension}) NOT NULL,
            tsv tsvector GENERATED ALWAYS AS (to_tsvector('simple', text)) STORED
        )
        """
    )
    op.execute(f"CREATE INDEX ix_{table}_document ON {table} (document_id)")
    op.execute(
        f"CREATE INDEX ix_{table}_hnsw ON {table} USING hnsw (embedding {OPCLASS[metric]}) "
        "WITH (m = 16, ef_construction = 64)"
    )
    op.execute(f"CREATE INDEX ix_{table}_tsv ON {table} USING gin (tsv)")
    op.execute(f"CREATE INDEX ix_{table}_metadata ON {table} USING gin (metadata jsonb_path_ops)")


def downgrade() -> None:
    table = context.config.attributes["rag_table"]
    op.execute(f"DROP TABLE IF EXISTS {table}")
