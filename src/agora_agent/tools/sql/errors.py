"""Errors the governed SQL tool raises. Every message is written for the model: it says what to change.

    ToolError
    ├── SqlValidationError          the SQL was refused before it reached the database
    │   ├── SqlAccessDeniedError    a referenced table is not readable with the actor's roles
    │   └── TenantScopeError        the query names another tenant
    └── ToolExecutionError
        └── SqlExecutionError       the database rejected or aborted the query
            └── SqlTimeoutError     the statement timeout stopped the query

No message carries a stack trace, the final SQL's bound tenant value, or data the query could not see.
"""

from __future__ import annotations

from collections.abc import Sequence

from agora_agent.errors import ToolError, ToolExecutionError

__all__ = [
    "SqlAccessDeniedError",
    "SqlExecutionError",
    "SqlTimeoutError",
    "SqlValidationError",
    "TenantScopeError",
]

DEFAULT_TOOL_NAME = "query_database"


class SqlValidationError(ToolError):
    """The SQL was refused before execution; the message names the problem and the fix.

    The building blocks raise it with `tool_name="query_database"`; the tool rewrites `tool_name` to its own name.
    """

    def __init__(self, message: str, *, tool_name: str = DEFAULT_TOOL_NAME) -> None:
        super().__init__(tool_name, message)


class SqlAccessDeniedError(SqlValidationError):
    """One or more referenced tables are not readable with the actor's roles. `tables` lists them."""

    code = "table_denied"

    def __init__(self, roles: Sequence[str], tables: Sequence[str], *, tool_name: str = DEFAULT_TOOL_NAME) -> None:
        self.roles = tuple(roles)
        self.tables = tuple(tables)
        who = ", ".join(self.roles) if self.roles else "none"
        names = ", ".join(f"`{t}`" for t in self.tables)
        super().__init__(
            f"Your roles ({who}) are not allowed to query {names}. Rewrite the query using only tables you may read.",
            tool_name=tool_name,
        )


class TenantScopeError(SqlValidationError):
    """The query compares the tenant column with a value other than the actor's tenant."""

    code = "tenant_mismatch"

    def __init__(self, *, tool_name: str = DEFAULT_TOOL_NAME) -> None:
        super().__init__(
            "tenant scope: tenant mismatch — query targets a tenant other than the current session. "
            "Remove the tenant condition; results are limited to your tenant automatically.",
            tool_name=tool_name,
        )


class SqlExecutionError(ToolExecutionError):
    """The database rejected or aborted the (validated) query; the message carries the database's one-line reason."""


class SqlTimeoutError(SqlExecutionError):
    """The statement timeout stopped the query; the database did the cancelling, nothing keeps running."""

    code = "statement_timeout"

    def __init__(self, tool_name: str, timeout: float) -> None:
        self.timeout = timeout
        shown = f"{timeout:.1f}" if round(timeout, 1) == timeout else f"{timeout:g}"
        super().__init__(
            tool_name,
            f"Query exceeded the {shown}s statement timeout; add a WHERE clause or a LIMIT "
            "(the database stopped the query).",
        )
