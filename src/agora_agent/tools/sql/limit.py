"""`inject_limit`: cap every result at `max_rows`.

A statement without LIMIT gets `LIMIT max_rows`; a LIMIT / FETCH FIRST that is not a plain integer
literal within the cap (larger, negative — unlimited in SQLite —, `ALL`, an expression, a subquery,
PERCENT or WITH TIES) is replaced by `LIMIT max_rows`. OFFSET is kept. The limit is set on the
statement itself (on a set operation it applies to the whole result), so ORDER BY is honoured.
"""

from __future__ import annotations

import sqlglot
from sqlglot import exp

from agora_agent.tools.sql.names import Dialect, sqlglot_dialect

__all__ = ["inject_limit"]


def _literal_count(node: exp.Expr | None) -> int | None:
    if isinstance(node, exp.Limit):
        node = node.expression
    elif isinstance(node, exp.Fetch):
        options = node.args.get("limit_options")
        if isinstance(options, exp.Expr) and (options.args.get("percent") or options.args.get("with_ties")):
            return None
        node = node.args.get("count")
    if isinstance(node, exp.Literal) and not node.is_string and str(node.this).isdigit():
        return int(node.this)
    return None


def inject_limit(statement: exp.Query | str, max_rows: int, *, dialect: Dialect = "sqlite") -> exp.Query:
    """Return the statement (modified in place when given a tree) with its row count capped at `max_rows`."""
    if max_rows < 1:
        raise ValueError("max_rows must be at least 1")
    if isinstance(statement, str):
        parsed = sqlglot.parse_one(statement.strip().rstrip(";"), read=sqlglot_dialect(dialect))
        if not isinstance(parsed, exp.Query):
            raise ValueError("inject_limit needs a SELECT statement")
        statement = parsed
    count = _literal_count(statement.args.get("limit"))
    if count is None or count > max_rows:
        statement.set("limit", exp.Limit(expression=exp.Literal.number(max_rows)))
    return statement
