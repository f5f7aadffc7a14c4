"""initial schema: threads, messages, tool calls, approvals, usage, pricing, runs, budgets

Revision ID: 0001
Revises:
Create Date: 2026-11-30 10:29:47.065099
"""

from __future__ import annotations

from collections.abc import Sequence

import sqlalchemy as sa
from alembic import op

revision: str = "0001"
down_revision: str | None = None
branch_labels: str | Sequence[str] | None = None
depends_on: str | Sequence[str] | None = None


def upgrade() -> None:
    op.create_table(
        "agent_budget_counter",
        sa.Column("scope", sa.String(length=16), nullable=False),
        sa.Column("key", sa.String(length=255), nullable=False),
        sa.Column("period", sa.String(length=16), nullable=False),
        sa.Column("used_tokens", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("used_usd", sa.Float(), server_default="0", nullable=False),
        sa.Column("reserved_tokens", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("reserved_usd", sa.Float(), server_default="0", nullable=False),
        sa.PrimaryKeyConstraint("scope", "key", "period"),
    )
    op.create_table(
        "agent_budget_reservation",
        sa.Column("id", sa.String(length=255), nullable=False),
        sa.Column("scopes", sa.JSON(), nullable=False),
        sa.Column("period", sa.String(length=16), nullable=False),
        sa.Column("tokens", sa.BigInteger(), nullable=False),
        sa.Column("usd", sa.Float(), nullable=False),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_table(
        "agent_model_pricing",
        sa.Column("id", sa.String(length=255), nullable=False),
        sa.Column("model_id", sa.String(length=255), nullable=False),
        sa.Column("input_price_per_1m", sa.Float(), nullable=False),
        sa.Column("output_price_per_1m", sa.Float(), nullable=False),
        sa.Column("cache_write_price_per_1m", sa.Float(), nullable=True),
        sa.Column("cache_read_price_per_1m", sa.Float(), nullable=True),
        sa.Column("effective_from", sa.BigInteger(), nullable=False),
        sa.Column("is_current", sa.Boolean(), nullable=False),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_agent_model_pricing_model", "agent_model_pricing", ["model_id", "effective_from"], unique=False)
    op.create_index(
        "uq_agent_model_pricing_current",
        "agent_model_pricing",
        ["model_id"],
        unique=True,
        sqlite_where=sa.text("is_current"),
        postgresql_where=sa.text("is_current"),
    )

    op.create_table(
        "agent_thread",
        sa.Column("id", sa.String(length=255), nullable=False),
        sa.Column("actor_ref", sa.String(length=255), nullable=False),
        sa.Column("tenant_ref", sa.String(length=255), nullable=True),
        sa.Column("title", sa.Text(), server_default="New chat", nullable=False),
        sa.Column("persona", sa.String(length=128), server_default="default", nullable=False),
        sa.Column("transient", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.Column("pinned_at", sa.BigInteger(), nullable=True),
        sa.Column("summary", sa.Text(), nullable=True),
        sa.Column("summary_message_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("active_stream_id", sa.String(length=255), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("updated_at", sa.BigInteger(), nullable=False),
        sa.Column("deleted_at", sa.BigInteger(), nullable=True),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_agent_thread_actor_updated", "agent_thread", ["actor_ref", "updated_at"], unique=False)
    op.create_index("ix_agent_thread_updated", "agent_thread", ["updated_at"], unique=False)

    op.create_table(
        "agent_approval",
        sa.Column("run_id", sa.String(length=255), nullable=False),
        sa.Column("tool_call_id", sa.String(length=255), nullable=False),
        sa.Column("thread_id", sa.String(length=255), nullable=False),
        sa.Column("tool_name", sa.String(length=255), nullable=False),
        sa.Column("args_hash", sa.String(length=128), nullable=False),
        sa.Column("requested_by", sa.String(length=255), nullable=False),
        sa.Column("approver_roles", sa.JSON(), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("reason", sa.Text(), nullable=True),
        sa.Column("decided_by", sa.String(length=255), nullable=True),
        sa.Column("decided_at", sa.BigInteger(), nullable=True),
        sa.Column("deadline", sa.BigInteger(), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["thread_id"], ["agent_thread.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("run_id", "tool_call_id"),
    )
    op.create_index("ix_agent_approval_requester_status", "agent_approval", ["requested_by", "status"], unique=False)
    op.create_index("ix_agent_approval_status_created", "agent_approval", ["status", "created_at"], unique=False)

    op.create_table(
        "agent_message",
        sa.Column("seq", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("id", sa.String(length=255), nullable=False),
        sa.Column("thread_id", sa.String(length=255), nullable=False),
        sa.Column("role", sa.String(length=16), nullable=False),
        sa.Column("content", sa.Text(), nullable=False),
        sa.Column("tool_calls", sa.JSON(), nullable=True),
        sa.Column("tool_results", sa.JSON(), nullable=True),
        sa.Column("attachments", sa.JSON(), nullable=True),
        sa.Column("follow_ups", sa.JSON(), nullable=True),
        sa.Column("usage", sa.JSON(), nullable=True),
        sa.Column("persona", sa.String(length=128), nullable=True),
        sa.Column("run_id", sa.String(length=255), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["thread_id"], ["agent_thread.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("id"),
    )
    op.create_index("ix_agent_message_run", "agent_message", ["run_id"], unique=False)
    op.create_index("ix_agent_message_thread_seq", "agent_message", ["thread_id", "seq"], unique=False)

    op.create_table(
        "agent_run",
        sa.Column("id", sa.String(length=255), nullable=False),
        sa.Column("thread_id", sa.String(length=255), nullable=False),
        sa.Column("parent_run_id", sa.String(length=255), nullable=True),
        sa.Column("agent_name", sa.String(length=255), nullable=True),
        sa.Column("actor_ref", sa.String(length=255), nullable=False),
        sa.Column("tenant_ref", sa.String(length=255), nullable=True),
        sa.Column("status", sa.String(length=16), nullable=False),
        sa.Column("started_at", sa.BigInteger(), nullable=False),
        sa.Column("finished_at", sa.BigInteger(), nullable=True),
        sa.Column("step_count", sa.Integer(), server_default="0", nullable=False),
        sa.Column("input_tokens", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("output_tokens", sa.BigInteger(), server_default="0", nullable=False),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("durable", sa.Boolean(), server_default=sa.false(), nullable=False),
        sa.ForeignKeyConstraint(["thread_id"], ["agent_thread.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index("ix_agent_run_actor_started", "agent_run", ["actor_ref", "started_at"], unique=False)
    op.create_index("ix_agent_run_agent_started", "agent_run", ["agent_name", "started_at"], unique=False)
    op.create_index("ix_agent_run_started", "agent_run", ["started_at", "id"], unique=False)
    op.create_index("ix_agent_run_status_started", "agent_run", ["status", "started_at"], unique=False)
    op.create_index("ix_agent_run_thread", "agent_run", ["thread_id", "started_at"], unique=False)

    op.create_table(
        "agent_token_usage",
        sa.Column("id", sa.String(length=255), nullable=False),
        sa.Column("thread_id", sa.String(length=255), nullable=False),
        sa.Column("run_id", sa.String(length=255), nullable=True),
        sa.Column("message_id", sa.String(length=255), nullable=True),
        sa.Column("actor_ref", sa.String(length=255), nullable=False),
        sa.Column("tenant_ref", sa.String(length=255), nullable=True),
        sa.Column("model_id", sa.String(length=255), nullable=False),
        sa.Column("purpose", sa.String(length=64), nullable=False),
        sa.Column("input_tokens", sa.BigInteger(), nullable=False),
        sa.Column("output_tokens", sa.BigInteger(), nullable=False),
        sa.Column("cache_write_tokens", sa.BigInteger(), nullable=True),
        sa.Column("cache_read_tokens", sa.BigInteger(), nullable=True),
        sa.Column("cost_usd", sa.Float(), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(["thread_id"], ["agent_thread.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("id"),
    )
    op.create_index(
        "ix_agent_token_usage_actor_created", "agent_token_usage", ["actor_ref", "created_at"], unique=False
    )
    op.create_index("ix_agent_token_usage_created", "agent_token_usage", ["created_at"], unique=False)
    op.create_index("ix_agent_token_usage_run", "agent_token_usage", ["run_id"], unique=False)
    op.create_index("ix_agent_token_usage_thread", "agent_token_usage", ["thread_id"], unique=False)

    op.create_table(
        "agent_tool_call",
        sa.Column("seq", sa.BigInteger().with_variant(sa.Integer(), "sqlite"), autoincrement=True, nullable=False),
        sa.Column("run_id", sa.String(length=255), nullable=False),
        sa.Column("id", sa.String(length=255), nullable=False),
        sa.Column("thread_id", sa.String(length=255), nullable=False),
        sa.Column("message_id", sa.String(length=255), nullable=True),
        sa.Column("tool_name", sa.String(length=255), nullable=False),
        sa.Column("tool_type", sa.String(length=32), nullable=False),
        sa.Column("input", sa.JSON(), nullable=True),
        sa.Column("output", sa.JSON(), nullable=True),
        sa.Column("error", sa.Text(), nullable=True),
        sa.Column("status", sa.String(length=32), nullable=False),
        sa.Column("actor_ref", sa.String(length=255), nullable=False),
        sa.Column("tenant_ref", sa.String(length=255), nullable=True),
        sa.Column("policy_decision", sa.Text(), nullable=True),
        sa.Column("idempotency_key", sa.String(length=512), nullable=True),
        sa.Column("executed_by_ref", sa.String(length=255), nullable=True),
        sa.Column("decided_by", sa.String(length=255), nullable=True),
        sa.Column("execution_ms", sa.Integer(), nullable=True),
        sa.Column("created_at", sa.BigInteger(), nullable=False),
        sa.Column("executed_at", sa.BigInteger(), nullable=True),
        sa.ForeignKeyConstraint(["thread_id"], ["agent_thread.id"], ondelete="CASCADE"),
        sa.PrimaryKeyConstraint("seq"),
        sa.UniqueConstraint("run_id", "id", name="uq_agent_tool_call_run_id"),
    )
    op.create_index("ix_agent_tool_call_created", "agent_tool_call", ["created_at"], unique=False)
    op.create_index("ix_agent_tool_call_message", "agent_tool_call", ["message_id"], unique=False)
    op.create_index(
        "ix_agent_tool_call_name_created", "agent_tool_call", ["tool_name", "tool_type", "created_at"], unique=False
    )
    op.create_index("ix_agent_tool_call_status_created", "agent_tool_call", ["status", "created_at"], unique=False)
    op.create_index("ix_agent_tool_call_thread", "agent_tool_call", ["thread_id", "seq"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_agent_tool_call_thread", table_name="agent_tool_call")
    op.drop_index("ix_agent_tool_call_status_created", table_name="agent_tool_call")
    op.drop_index("ix_agent_tool_call_name_created", table_name="agent_tool_call")
    op.drop_index("ix_agent_tool_call_message", table_name="agent_tool_call")
    op.drop_index("ix_agent_tool_call_created", table_name="agent_tool_call")

    op.drop_table("agent_tool_call")
    op.drop_index("ix_agent_token_usage_thread", table_name="agent_token_usage")
    op.drop_index("ix_agent_token_usage_run", table_name="agent_token_usage")
    op.drop_index("ix_agent_token_usage_created", table_name="agent_token_usage")
    op.drop_index("ix_agent_token_usage_actor_created", table_name="agent_token_usage")

    op.drop_table("agent_token_usage")
    op.drop_index("ix_agent_run_thread", table_name="agent_run")
    op.drop_index("ix_agent_run_status_started", table_name="agent_run")
    op.drop_index("ix_agent_run_started", table_name="agent_run")
    op.drop_index("ix_agent_run_agent_started", table_name="agent_run")
    op.drop_index("ix_agent_run_actor_started", table_name="agent_run")

    op.drop_table("agent_run")
    op.drop_index("ix_agent_message_thread_seq", table_name="agent_message")
    op.drop_index("ix_agent_message_run", table_name="agent_message")

    op.drop_table("agent_message")
    op.drop_index("ix_agent_approval_status_created", table_name="agent_approval")
    op.drop_index("ix_agent_approval_requester_status", table_name="agent_approval")

    op.drop_table("agent_approval")
    op.drop_index("ix_agent_thread_updated", table_name="agent_thread")
    op.drop_index("ix_agent_thread_actor_updated", table_name="agent_thread")

    op.drop_table("agent_thread")
    op.drop_index(
        "uq_agent_model_pricing_current",
        table_name="agent_model_pricing",
        sqlite_where=sa.text("is_current"),
        postgresql_where=sa.text("is_current"),
    )
    op.drop_index("ix_agent_model_pricing_model", table_name="agent_model_pricing")

    op.drop_table("agent_model_pricing")
    op.drop_table("agent_budget_reservation")
    op.drop_table("agent_budget_counter")
