"""The governed read-only SQL tool (REFERENCE §10, DATA-01..17) and its building blocks.

from agora_agent.data import data_tool, TenantScope

tool = data_tool(
    engine,
    table_access={"analyst": ["orders", "customers"]},
    tenant=TenantScope("tenant_id", ["orders", "customers"]),
)
"""

from agora_agent.data.access import GroupTableAccessPolicy, TableAccessPolicy, check_table_access, table_access_policy
from agora_agent.data.errors import (
    SqlAccessDeniedError,
    SqlExecutionError,
    SqlTimeoutError,
    SqlValidationError,
    TenantScopeError,
)
from agora_agent.data.execute import run_read_only
from agora_agent.data.limit import inject_limit
from agora_agent.data.names import TableRef, is_system_table, resolve_tables
from agora_agent.data.result import MAX_RESULT_BYTES, truncate_rows
from agora_agent.data.tenant import TenantScope, TenantScopeRewriter
from agora_agent.data.tool import DataTool, PreparedQuery, data_tool
from agora_agent.data.validate import DENIED_FUNCTION_PREFIXES, DENIED_FUNCTIONS, SqlValidator

__all__ = [
    "DENIED_FUNCTIONS",
    "DENIED_FUNCTION_PREFIXES",
    "MAX_RESULT_BYTES",
    "DataTool",
    "GroupTableAccessPolicy",
    "PreparedQuery",
    "SqlAccessDeniedError",
    "SqlExecutionError",
    "SqlTimeoutError",
    "SqlValidationError",
    "SqlValidator",
    "TableAccessPolicy",
    "TableRef",
    "TenantScope",
    "TenantScopeError",
    "TenantScopeRewriter",
    "check_table_access",
    "data_tool",
    "inject_limit",
    "is_system_table",
    "resolve_tables",
    "run_read_only",
    "table_access_policy",
    "truncate_rows",
]
