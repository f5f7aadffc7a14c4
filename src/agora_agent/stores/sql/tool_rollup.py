"""The daily per-tool rollup (`agent_tool_daily`): what makes `per_tool_stats` fast on millions of tool calls.

Unlike the usage and run rollups (kept by the store's own write statements), this one is kept by database
triggers on `agent_tool_call`, on both PostgreSQL and SQLite. A tool call's status and `execution_ms` change on
many paths — the step that records it (a data-modifying CTE on PostgreSQL), `update_tool_call` and its
quota-settling variant, approval decisions and expiry sweeps, cancellation, crash recovery, durable replay,
and message edits that delete calls (or a thread's cascade) — and a trigger sees every one of them, in the
same statement and transaction, without adding a statement or a round trip to any of them. Each row
contributes to its (UTC day of `created_at`, tool name, tool type) rollup row: an insert adds it, a delete
removes it, an update moves the difference (old row out, new row in) with one atomic upsert per row touched.

A rollup row whose calls were all deleted keeps zeros; the query skips groups without calls. Rows loaded
behind the triggers' back (bench/governance.py disables them around its COPY) are folded in by
`TOOL_REBUILD_SQL` after deleting the rollup's rows.

Changing these definitions needs a migration that replaces the triggers (0011 created them).
"""

from __future__ import annotations

__all__ = ["TOOL_DAILY_COUNTS", "TOOL_REBUILD_SQL", "tool_daily_ddl", "tool_daily_drop_ddl"]

TOOL_DAILY_COUNTS = ("calls", "failed", "rejected", "ms_sum", "ms_count")
_DAY = 86_400_000_000  # microseconds per UTC day (tables.MICROS_PER_DAY)

TOOL_REBUILD_SQL = f"""
INSERT INTO agent_tool_daily (day, tool_name, tool_type, calls, failed, rejected, ms_sum, ms_count)
SELECT created_at / {_DAY}, tool_name, tool_type, count(*),
       sum(CASE WHEN status = 'failed' THEN 1 ELSE 0 END),
       sum(CASE WHEN status = 'rejected' THEN 1 ELSE 0 END),
       coalesce(sum(execution_ms), 0), count(execution_ms)
FROM agent_tool_call
GROUP BY created_at / {_DAY}, tool_name, tool_type
"""
"""Recompute every per-tool rollup row from the tool calls (after deleting the rollup's rows)."""


def _upsert(row: str, sign: str, *, delta_of: str | None = None) -> str:
    """One upsert adding (`sign` '+') or removing ('-') the contribution of `row` (NEW/OLD); with `delta_of`,
    the difference `row` - `delta_of` of two rows of the same key, calls unchanged."""

    def part(expr: str) -> str:
        value = expr.format(r=row)
        if delta_of is not None:
            return f"({value}) - ({expr.format(r=delta_of)})"
        return value if sign == "+" else f"-({value})"

    calls = "0" if delta_of is not None else ("1" if sign == "+" else "-1")
    values = ", ".join(
        [
            f"{row}.created_at / {_DAY}",
            f"{row}.tool_name",
            f"{row}.tool_type",
            calls,
            part("CASE WHEN {r}.status = 'failed' THEN 1 ELSE 0 END"),
            part("CASE WHEN {r}.status = 'rejected' THEN 1 ELSE 0 END"),
            part("coalesce({r}.execution_ms, 0)"),
            part("CASE WHEN {r}.execution_ms IS NULL THEN 0 ELSE 1 END"),
        ]
    )
    sets = ", ".join(f"{c} = agent_tool_daily.{c} + excluded.{c}" for c in TOOL_DAILY_COUNTS)
    return (
        "INSERT INTO agent_tool_daily (day, tool_name, tool_type, calls, failed, rejected, ms_sum, ms_count) "
        f"VALUES ({values}) ON CONFLICT (day, tool_name, tool_type) DO UPDATE SET {sets}"
    )


_SAME_KEY = (
    f"OLD.created_at / {_DAY} = NEW.created_at / {_DAY}"
    " AND OLD.tool_name = NEW.tool_name AND OLD.tool_type = NEW.tool_type"
)
_CHANGED = (
    "OLD.status IS DISTINCT FROM NEW.status OR OLD.execution_ms IS DISTINCT FROM NEW.execution_ms"
    f" OR OLD.created_at / {_DAY} <> NEW.created_at / {_DAY} OR OLD.tool_name <> NEW.tool_name"
    " OR OLD.tool_type <> NEW.tool_type"
)
_WATCHED = "status, execution_ms, created_at, tool_name, tool_type"

_PG_FUNCTION = f"""
CREATE OR REPLACE FUNCTION agent_tool_daily_apply() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        {_upsert("NEW", "+")};
    ELSIF TG_OP = 'DELETE' THEN
        {_upsert("OLD", "-")};
    ELSIF {_SAME_KEY} THEN
        {_upsert("NEW", "+", delta_of="OLD")};
    ELSE
        {_upsert("OLD", "-")};
        {_upsert("NEW", "+")};
    END IF;
    RETURN NULL;
END
$$
"""

_PG = [
    _PG_FUNCTION,
    "CREATE TRIGGER agent_tool_daily_insert AFTER INSERT ON agent_tool_call"
    " FOR EACH ROW EXECUTE FUNCTION agent_tool_daily_apply()",
    "CREATE TRIGGER agent_tool_daily_delete AFTER DELETE ON agent_tool_call"
    " FOR EACH ROW EXECUTE FUNCTION agent_tool_daily_apply()",
    f"CREATE TRIGGER agent_tool_daily_update AFTER UPDATE OF {_WATCHED} ON agent_tool_call"
    f" FOR EACH ROW WHEN ({_CHANGED}) EXECUTE FUNCTION agent_tool_daily_apply()",
]

_SQLITE_CHANGED = _CHANGED.replace("IS DISTINCT FROM", "IS NOT")

_SQLITE = [
    f"CREATE TRIGGER agent_tool_daily_insert AFTER INSERT ON agent_tool_call BEGIN {_upsert('NEW', '+')}; END",
    f"CREATE TRIGGER agent_tool_daily_delete AFTER DELETE ON agent_tool_call BEGIN {_upsert('OLD', '-')}; END",
    f"CREATE TRIGGER agent_tool_daily_update AFTER UPDATE OF {_WATCHED} ON agent_tool_call"
    f" WHEN ({_SAME_KEY}) AND ({_SQLITE_CHANGED}) BEGIN {_upsert('NEW', '+', delta_of='OLD')}; END",
    f"CREATE TRIGGER agent_tool_daily_move AFTER UPDATE OF {_WATCHED} ON agent_tool_call"
    f" WHEN NOT ({_SAME_KEY}) BEGIN {_upsert('OLD', '-')}; {_upsert('NEW', '+')}; END",
]

_TRIGGERS = ("agent_tool_daily_insert", "agent_tool_daily_delete", "agent_tool_daily_update", "agent_tool_daily_move")


def tool_daily_ddl(dialect_name: str) -> list[str]:
    """The statements (re)creating the triggers (and, on PostgreSQL, their function) that keep the rollup:
    any of them already there is dropped first."""
    postgres = dialect_name == "postgresql"
    return tool_daily_drop_ddl(dialect_name)[: 3 if postgres else 4] + list(_PG if postgres else _SQLITE)


def tool_daily_drop_ddl(dialect_name: str) -> list[str]:
    """The statements dropping them again."""
    if dialect_name == "postgresql":
        return [f"DROP TRIGGER IF EXISTS {t} ON agent_tool_call" for t in _TRIGGERS[:3]] + [
            "DROP FUNCTION IF EXISTS agent_tool_daily_apply()"
        ]
    return [f"DROP TRIGGER IF EXISTS {t}" for t in _TRIGGERS]
