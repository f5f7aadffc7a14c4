"""The governed read-only SQL tool and its building blocks.

from agora_agent.tools.sql import sql_tool, TenantScope

tool = sql_tool(
    engine,
    table_access={"analyst": ["orders", "customers"]},
    tenant=TenantScope("tenant_id", ["orders", "customers"]),
)
"""

from agora_agent.tools.sql.access import (
    GroupTableAccessPolicy,
    TableAccessPolicy,
    check_table_access,
    table_access_policy,
)
from agora_agent.tools.sql.errors import (
    SqlAccessDeniedError,
    SqlExecutionError,
    SqlTimeoutError,
    SqlValidationError,
    TenantScopeError,
)
from agora_agent.tools.sql.execute import run_read_only
from agora_agent.tools.sql.limit import inject_limit
from agora_agent.tools.sql.names import TableRef, is_system_table, resolve_tables
from agora_agent.tools.sql.result import MAX_RESULT_BYTES, truncate_rows
from agora_agent.tools.sql.tenant import TenantScope, TenantScopeRewriter
from agora_agent.tools.sql.tool import PreparedQuery, SqlTool, sql_tool
from agora_agent.tools.sql.validate import DENIED_FUNCTION_PREFIXES, DENIED_FUNCTIONS, SqlValidator

__all__ = [
    "DENIED_FUNCTIONS",
    "DENIED_FUNCTION_PREFIXES",
    "MAX_RESULT_BYTES",
    "GroupTableAccessPolicy",
    "PreparedQuery",
    "SqlAccessDeniedError",
    "SqlExecutionError",
    "SqlTimeoutError",
    "SqlTool",
    "SqlValidationError",
    "SqlValidator",
    "TableAccessPolicy",
    "TableRef",
    "TenantScope",
    "TenantScopeError",
    "TenantScopeRewriter",
    "check_table_access",
    "inject_limit",
    "is_system_table",
    "resolve_tables",
    "run_read_only",
    "sql_tool",
    "table_access_policy",
    "truncate_rows",
]
