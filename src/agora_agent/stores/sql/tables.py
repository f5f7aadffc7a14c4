"""The SQL schema (SQLAlchemy Core): the reference's six tables plus approvals and budget counters.

Portable across SQLite and PostgreSQL with no dialect forks:
- timestamps are BIGINT microseconds since the Unix epoch, UTC (`UtcMicros`): lossless for Python
  `datetime`, and a UTC day is plain integer division (`created_at // MICROS_PER_DAY`) on both engines;
- JSON columns are `sa.JSON`; booleans are `sa.Boolean`;
- messages and tool calls carry an autoincrement `seq`, so "oldest first" is insertion order even when two
  rows share a microsecond.

The Alembic migrations in `migrations/versions/` create exactly this schema (a test compares them).
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Dialect

from agora_agent.stores.sql.tool_rollup import tool_daily_ddl, tool_daily_drop_ddl

__all__ = [
    "AGENT_TABLES",
    "MICROS_PER_DAY",
    "approval",
    "audit_log",
    "budget_alert",
    "budget_counter",
    "budget_reservation",
    "budget_rule",
    "confirm_token",
    "from_micros",
    "message",
    "metadata",
    "model_pricing",
    "process",
    "run",
    "run_daily",
    "run_owner",
    "thread",
    "to_micros",
    "token_usage",
    "tool_call",
    "tool_daily",
    "usage_daily",
]

MICROS_PER_DAY = 86_400_000_000
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def to_micros(value: datetime) -> int:
    """A datetime as integer microseconds since the epoch; naive datetimes are taken as UTC."""
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)
    delta = value - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 1_000_000 + delta.microseconds


def from_micros(value: int) -> datetime:
    """The inverse of `to_micros`: a timezone-aware UTC datetime."""
    return _EPOCH + timedelta(microseconds=int(value))


class UtcMicros(sa.types.TypeDecorator[datetime]):
    """A tz-aware UTC `datetime` stored as BIGINT microseconds since the epoch."""

    impl = sa.BigInteger
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> int | None:
        return None if value is None else to_micros(value)

    def process_result_value(self, value: Any, dialect: Dialect) -> datetime | None:
        return None if value is None else from_micros(value)


# SQLite only autoincrements an INTEGER PRIMARY KEY (the rowid alias); PostgreSQL gets a BIGINT identity.
_Seq = sa.BigInteger().with_variant(sa.Integer(), "sqlite")
_Id = sa.String(255)  # ids are ours (uuid) or composed ("<run>:<message>"), or a caller's
_Ref = sa.String(255)

metadata = sa.MetaData()

thread = sa.Table(
    "agent_thread",
    metadata,
    sa.Column("id", _Id, primary_key=True),
    sa.Column("actor_ref", _Ref, nullable=False),
    sa.Column("tenant_ref", _Ref),
    sa.Column("title", sa.Text, nullable=False, server_default="New chat"),
    sa.Column("persona", sa.String(128), nullable=False, server_default="default"),
    sa.Column("transient", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Column("pinned_at", UtcMicros),
    sa.Column("summary", sa.Text),
    sa.Column("summary_message_count", sa.Integer, nullable=False, server_default="0"),
    sa.Column("active_stream_id", _Id),
    sa.Column("created_at", UtcMicros, nullable=False),
    sa.Column("updated_at", UtcMicros, nullable=False),
    sa.Column("deleted_at", UtcMicros),
    sa.Index("ix_agent_thread_actor_updated", "actor_ref", "updated_at"),
    sa.Index("ix_agent_thread_updated", "updated_at"),
    sa.Index("ix_agent_thread_tenant_updated", "tenant_ref", "updated_at"),  # tenant-scoped governance (0009)
)

message = sa.Table(
    "agent_message",
    metadata,
    sa.Column("seq", _Seq, primary_key=True, autoincrement=True),
    sa.Column("id", _Id, nullable=False, unique=True),
    sa.Column("thread_id", _Id, sa.ForeignKey("agent_thread.id", ondelete="CASCADE"), nullable=False),
    sa.Column("role", sa.String(16), nullable=False),
    sa.Column("content", sa.Text, nullable=False),
    sa.Column("tool_calls", sa.JSON),
    sa.Column("tool_results", sa.JSON),
    sa.Column("attachments", sa.JSON),
    sa.Column("follow_ups", sa.JSON),
    sa.Column("usage", sa.JSON),
    sa.Column("persona", sa.String(128)),
    sa.Column("run_id", _Id),  # no FK (STORE-08)
    sa.Column("created_at", UtcMicros, nullable=False),
    sa.Index("ix_agent_message_thread_seq", "thread_id", "seq"),
    sa.Index("ix_agent_message_run", "run_id"),
)

tool_call = sa.Table(
    "agent_tool_call",
    metadata,
    sa.Column("seq", _Seq, primary_key=True, autoincrement=True),
    sa.Column("run_id", _Id, nullable=False),
    sa.Column("id", sa.String(255), nullable=False),  # model-supplied, unique within its run
    sa.Column("thread_id", _Id, sa.ForeignKey("agent_thread.id", ondelete="CASCADE"), nullable=False),
    sa.Column("message_id", _Id),
    sa.Column("tool_name", sa.String(255), nullable=False),
    sa.Column("tool_type", sa.String(32), nullable=False),
    sa.Column("input", sa.JSON),
    sa.Column("output", sa.JSON),
    sa.Column("error", sa.Text),
    sa.Column("status", sa.String(32), nullable=False),
    sa.Column("actor_ref", _Ref, nullable=False),
    sa.Column("tenant_ref", _Ref),
    sa.Column("policy_decision", sa.Text),
    sa.Column("idempotency_key", sa.String(512)),
    sa.Column("executed_by_ref", _Ref),
    sa.Column("decided_by", _Ref),
    sa.Column("execution_ms", sa.Integer),
    sa.Column("created_at", UtcMicros, nullable=False),
    sa.Column("executed_at", UtcMicros),
    sa.Column("components", sa.JSON),
    sa.UniqueConstraint("run_id", "id", name="uq_agent_tool_call_run_id"),
    sa.Index("ix_agent_tool_call_thread", "thread_id", "seq"),
    sa.Index("ix_agent_tool_call_message", "message_id"),
    sa.Index("ix_agent_tool_call_status_created", "status", "created_at"),
    sa.Index("ix_agent_tool_call_created", "created_at"),
    sa.Index("ix_agent_tool_call_tenant_created", "tenant_ref", "created_at"),  # tenant-scoped governance (0009)
    sa.Index("ix_agent_tool_call_name_created", "tool_name", "tool_type", "created_at"),
)

attachment = sa.Table(
    "agent_attachment",
    metadata,
    sa.Column("media_id", _Id, primary_key=True),
    sa.Column("filename", sa.String(255), nullable=False),
    sa.Column("content_type", sa.String(255), nullable=False),
    sa.Column("size_bytes", sa.BigInteger, nullable=False),
    sa.Column("actor_ref", _Ref, nullable=False),
    sa.Column("tenant_ref", _Ref),
    sa.Column("sha256", sa.String(64)),
    sa.Column("created_at", UtcMicros, nullable=False),
    sa.Index("ix_agent_attachment_actor", "actor_ref", "created_at"),
)

approval = sa.Table(
    "agent_approval",
    metadata,
    sa.Column("run_id", _Id, primary_key=True),
    sa.Column("tool_call_id", sa.String(255), primary_key=True),
    sa.Column("thread_id", _Id, sa.ForeignKey("agent_thread.id", ondelete="CASCADE"), nullable=False),
    sa.Column("tool_name", sa.String(255), nullable=False),
    sa.Column("args_hash", sa.String(128), nullable=False),
    sa.Column("requested_by", _Ref, nullable=False),
    sa.Column("approver_roles", sa.JSON),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("reason", sa.Text),
    sa.Column("decided_by", _Ref),
    sa.Column("decided_at", UtcMicros),
    sa.Column("deadline", UtcMicros),
    sa.Column("created_at", UtcMicros, nullable=False),
    sa.Index("ix_agent_approval_status_created", "status", "created_at"),
    sa.Index("ix_agent_approval_requester_status", "requested_by", "status"),
)

token_usage = sa.Table(
    "agent_token_usage",
    metadata,
    sa.Column("id", _Id, primary_key=True),
    sa.Column("thread_id", _Id, sa.ForeignKey("agent_thread.id", ondelete="CASCADE"), nullable=False),
    sa.Column("run_id", _Id),
    sa.Column("message_id", _Id),
    sa.Column("actor_ref", _Ref, nullable=False),
    sa.Column("tenant_ref", _Ref),
    sa.Column("model_id", sa.String(255), nullable=False),
    sa.Column("purpose", sa.String(64), nullable=False),
    sa.Column("input_tokens", sa.BigInteger, nullable=False),
    sa.Column("output_tokens", sa.BigInteger, nullable=False),
    sa.Column("cache_write_tokens", sa.BigInteger),
    sa.Column("cache_read_tokens", sa.BigInteger),
    sa.Column("cost_usd", sa.Float),
    sa.Column("created_at", UtcMicros, nullable=False),
    sa.Column("price_id", _Id),  # the agent_model_pricing row the cost was computed with (None: reported/unpriced)
    sa.Column("cost_source", sa.String(16)),  # reported | priced | None (unpriced)
    sa.Index("ix_agent_token_usage_actor_created", "actor_ref", "created_at"),
    sa.Index("ix_agent_token_usage_created", "created_at"),
    sa.Index("ix_agent_token_usage_tenant_created", "tenant_ref", "created_at"),  # tenant-scoped governance (0009)
    sa.Index("ix_agent_token_usage_run", "run_id"),
    sa.Index("ix_agent_token_usage_thread", "thread_id"),
)

usage_daily = sa.Table(
    "agent_usage_daily",
    metadata,
    # The usage ledger summed per UTC day, actor and model, kept in step with `agent_token_usage` by the store
    # (same transaction). Governance-query ranges are whole UTC days, so the rollups read this table, not the ledger.
    sa.Column("day", sa.Integer, primary_key=True, autoincrement=False),  # days since 1970-01-01
    sa.Column("actor_ref", _Ref, primary_key=True),
    sa.Column("model_id", sa.String(255), primary_key=True),
    sa.Column("requests", sa.BigInteger, nullable=False),
    sa.Column("input_tokens", sa.BigInteger, nullable=False),
    sa.Column("output_tokens", sa.BigInteger, nullable=False),
    sa.Column("reported_usd", sa.Float, nullable=False),  # sum of provider-reported costs
    # tokens of the rows WITHOUT a reported cost: the governance queries price these at the current price
    sa.Column("unreported_input_tokens", sa.BigInteger, nullable=False),
    sa.Column("unreported_output_tokens", sa.BigInteger, nullable=False),
    sa.Column("unreported_cache_read_tokens", sa.BigInteger, nullable=False),
    sa.Column("unreported_cache_write_tokens", sa.BigInteger, nullable=False),
)

model_pricing = sa.Table(
    "agent_model_pricing",
    metadata,
    sa.Column("id", _Id, primary_key=True),
    sa.Column("model_id", sa.String(255), nullable=False),
    sa.Column("input_price_per_1m", sa.Float, nullable=False),
    sa.Column("output_price_per_1m", sa.Float, nullable=False),
    sa.Column("cache_write_price_per_1m", sa.Float),
    sa.Column("cache_read_price_per_1m", sa.Float),
    sa.Column("effective_from", UtcMicros, nullable=False),
    sa.Column("is_current", sa.Boolean, nullable=False),
    # Exactly one current row per model (PRICE-01), enforced by the database, not only by the code.
    sa.Index(
        "uq_agent_model_pricing_current",
        "model_id",
        unique=True,
        sqlite_where=sa.text("is_current"),
        postgresql_where=sa.text("is_current"),
    ),
    sa.Index("ix_agent_model_pricing_model", "model_id", "effective_from"),
)

audit_log = sa.Table(
    "agent_audit_log",
    metadata,
    # Governance changes made by people (price changes, re-pricing, budget edits): who, what, when.
    sa.Column("id", _Id, primary_key=True),
    sa.Column("at", UtcMicros, nullable=False),
    sa.Column("actor_ref", _Ref, nullable=False),
    sa.Column("action", sa.String(64), nullable=False),
    sa.Column("target", sa.String(255)),
    sa.Column("detail", sa.JSON),
    sa.Index("ix_agent_audit_log_at", "at"),
)

run = sa.Table(
    "agent_run",
    metadata,
    sa.Column("id", _Id, primary_key=True),
    sa.Column("thread_id", _Id, sa.ForeignKey("agent_thread.id", ondelete="CASCADE"), nullable=False),
    sa.Column("parent_run_id", _Id),
    sa.Column("agent_name", sa.String(255)),
    sa.Column("actor_ref", _Ref, nullable=False),
    sa.Column("tenant_ref", _Ref),
    sa.Column("status", sa.String(16), nullable=False),
    sa.Column("started_at", UtcMicros, nullable=False),
    sa.Column("finished_at", UtcMicros),
    sa.Column("step_count", sa.Integer, nullable=False, server_default="0"),
    sa.Column("input_tokens", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("output_tokens", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("cost_usd", sa.Float),
    sa.Column("error", sa.Text),
    sa.Column("durable", sa.Boolean, nullable=False, server_default=sa.false()),
    sa.Index("ix_agent_run_started", "started_at", "id"),
    sa.Index("ix_agent_run_tenant_started", "tenant_ref", "started_at"),  # tenant-scoped governance (0009)
    # with `id`: pending approvals of one actor join this actor's runs index-only (0011)
    sa.Index("ix_agent_run_actor_started", "actor_ref", "started_at", "id"),
    sa.Index("ix_agent_run_status_started", "status", "started_at"),
    sa.Index("ix_agent_run_agent_started", "agent_name", "started_at"),
    sa.Index("ix_agent_run_thread", "thread_id", "started_at"),
    sa.Index(  # the run inspector's delegated runs (0010); partial: a top-level run adds no entry
        "ix_agent_run_parent",
        "parent_run_id",
        "started_at",
        sqlite_where=sa.text("parent_run_id IS NOT NULL"),
        postgresql_where=sa.text("parent_run_id IS NOT NULL"),
    ),
)

run_daily = sa.Table(
    "agent_run_daily",
    metadata,
    # `agent_run` counted per UTC day of `started_at` and agent ('' for runs without one), by status, kept in step
    # by the store (same transaction as the run start and its first terminal state): run reliability reads this.
    sa.Column("day", sa.Integer, primary_key=True, autoincrement=False),  # days since 1970-01-01
    sa.Column("agent_name", sa.String(255), primary_key=True),
    sa.Column("runs", sa.BigInteger, nullable=False),
    sa.Column("completed", sa.BigInteger, nullable=False),
    sa.Column("failed", sa.BigInteger, nullable=False),
    sa.Column("cancelled", sa.BigInteger, nullable=False),
    sa.Column("running", sa.BigInteger, nullable=False),
    sa.Column("settled", sa.BigInteger, nullable=False),  # finished and not running: the runs with a duration
    sa.Column("duration_ms", sa.BigInteger, nullable=False),  # sum of floor-ms(finished) - floor-ms(started)
)

tool_daily = sa.Table(
    "agent_tool_daily",
    metadata,
    # `agent_tool_call` counted per UTC day of `created_at`, tool name and type, kept in step by triggers on
    # `agent_tool_call` (tool_rollup.py): per-tool stats read this.
    sa.Column("day", sa.Integer, primary_key=True, autoincrement=False),  # days since 1970-01-01
    sa.Column("tool_name", sa.String(255), primary_key=True),
    sa.Column("tool_type", sa.String(32), primary_key=True),
    sa.Column("calls", sa.BigInteger, nullable=False),
    sa.Column("failed", sa.BigInteger, nullable=False),
    sa.Column("rejected", sa.BigInteger, nullable=False),
    sa.Column("ms_sum", sa.BigInteger, nullable=False),  # sum of the recorded execution_ms
    sa.Column("ms_count", sa.BigInteger, nullable=False),  # calls with an execution_ms
)

budget_counter = sa.Table(
    "agent_budget_counter",
    metadata,
    sa.Column("scope", sa.String(16), primary_key=True),
    sa.Column("key", _Ref, primary_key=True),
    sa.Column("period", sa.String(16), primary_key=True),
    sa.Column("used_tokens", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("used_usd", sa.Float, nullable=False, server_default="0"),
    sa.Column("reserved_tokens", sa.BigInteger, nullable=False, server_default="0"),
    sa.Column("reserved_usd", sa.Float, nullable=False, server_default="0"),
)

budget_rule = sa.Table(
    "agent_budget_rule",
    metadata,
    # Budgets as data (governance/budgets.py): one rule per (scope, key); key "*" = every actor/tenant.
    sa.Column("scope", sa.String(16), primary_key=True),
    sa.Column("key", _Ref, primary_key=True),
    sa.Column("period", sa.String(8), nullable=False),
    sa.Column("tokens", sa.BigInteger),
    sa.Column("usd", sa.Float),
    sa.Column("thresholds", sa.JSON, nullable=False),
    sa.Column("tenant_ref", _Ref),  # the tenant an actor rule belongs to (who may edit it)
    sa.Column("updated_by", _Ref),
    sa.Column("updated_at", UtcMicros),
)

budget_alert = sa.Table(
    "agent_budget_alert",
    metadata,
    # A raised BudgetThresholdReached: its row makes the event fire once per period, across processes.
    sa.Column("scope", sa.String(16), primary_key=True),
    sa.Column("key", _Ref, primary_key=True),
    sa.Column("period", sa.String(16), primary_key=True),
    sa.Column("unit", sa.String(8), primary_key=True),
    sa.Column("threshold_bp", sa.Integer, primary_key=True, autoincrement=False),  # basis points: 8000 = 80 %
    sa.Column("raised_at", UtcMicros, nullable=False),
)

budget_reservation = sa.Table(
    "agent_budget_reservation",
    metadata,
    sa.Column("id", sa.String(255), primary_key=True),
    sa.Column("scopes", sa.JSON, nullable=False),
    sa.Column("period", sa.String(16), nullable=False),
    sa.Column("tokens", sa.BigInteger, nullable=False),
    sa.Column("usd", sa.Float, nullable=False),
    sa.Column("created_at", UtcMicros, nullable=False),
    sa.Column("run_id", _Id),  # the run that holds it: recovery releases a crashed run's reservations
    sa.Column("expires_at", UtcMicros),  # the periodic sweep releases what outlived its TTL
    sa.Index("ix_agent_budget_reservation_run", "run_id"),
    sa.Index("ix_agent_budget_reservation_expires", "expires_at"),
)

process = sa.Table(
    "agent_process",
    metadata,
    # One row per live runtime process; its heartbeat keeps `expires_at` in the future (run owner leases).
    sa.Column("id", _Id, primary_key=True),
    sa.Column("host", sa.String(255), nullable=False),
    sa.Column("pid", sa.Integer, nullable=False),
    sa.Column("started_at", UtcMicros, nullable=False),
    sa.Column("heartbeat_at", UtcMicros, nullable=False),
    sa.Column("expires_at", UtcMicros, nullable=False),
    sa.Index("ix_agent_process_expires", "expires_at"),
)

run_owner = sa.Table(
    "agent_run_owner",
    metadata,
    # Which process runs a run; a run whose owner's lease lapsed is recovered by any live process.
    sa.Column("run_id", _Id, primary_key=True),
    sa.Column("owner_id", _Id, nullable=False),
    sa.Column("claimed_at", UtcMicros, nullable=False),
    sa.Index("ix_agent_run_owner_owner", "owner_id"),
)

confirm_token = sa.Table(
    "agent_confirm_token",
    metadata,
    # sha256 of a used confirmed-tool token: its presence IS the "already used" mark (LATER-CONF-03).
    sa.Column("token_id", sa.String(64), primary_key=True),
    sa.Column("tool_name", sa.String(255), nullable=False),
    sa.Column("actor_ref", _Ref, nullable=False),
    sa.Column("expires_at", UtcMicros, nullable=False),
    sa.Column("used_at", UtcMicros, nullable=False),
    sa.Index("ix_agent_confirm_token_expires", "expires_at"),
)


def _create_tool_daily_triggers(target: sa.MetaData, connection: sa.Connection, **kw: Any) -> None:
    created = {t.name for t in kw.get("tables") or ()}
    if created and not created & {"agent_tool_call", "agent_tool_daily"}:
        return  # neither table was created here: their triggers are not this call's business
    for statement in tool_daily_ddl(connection.dialect.name):
        connection.exec_driver_sql(statement)


def _drop_tool_daily_function(target: sa.MetaData, connection: sa.Connection, **_: Any) -> None:
    if connection.dialect.name == "postgresql":  # the triggers went with their table; the function stays
        connection.exec_driver_sql(tool_daily_drop_ddl("postgresql")[-1])


# `metadata.create_all` (auto_create_tables) makes the same triggers migration 0011 makes.
sa.event.listen(metadata, "after_create", _create_tool_daily_triggers)
sa.event.listen(metadata, "after_drop", _drop_tool_daily_function)

AGENT_TABLES: tuple[sa.Table, ...] = tuple(metadata.sorted_tables)
"""Every table of the schema, parents first."""
