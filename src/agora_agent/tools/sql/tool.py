"""`sql_tool(...)`: the governed, read-only SQL tool.

Pipeline per call: validate (one SELECT, no dangerous construct) -> table access for every referenced
table -> foreign-tenant literals -> LIMIT -> tenant rewrite -> regenerate the SQL from the checked tree
-> run read-only under a statement timeout -> JSON-safe rows, truncated at 256 KiB.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

import sqlglot
from pydantic import BaseModel, Field, create_model
from sqlalchemy.ext.asyncio import AsyncEngine
from sqlglot import exp
from sqlglot.errors import ErrorLevel, ParseError, SqlglotError, UnsupportedError

from agora_agent.actors import Actor
from agora_agent.errors import ConfigurationError, ToolError
from agora_agent.tools.context import ToolContext
from agora_agent.tools.spec import ToolSpec
from agora_agent.tools.sql.access import TableAccessPolicy, check_table_access, table_access_policy
from agora_agent.tools.sql.errors import SqlValidationError
from agora_agent.tools.sql.execute import run_read_only
from agora_agent.tools.sql.limit import inject_limit
from agora_agent.tools.sql.names import Dialect, normalize_identifier, resolve_tables, sqlglot_dialect
from agora_agent.tools.sql.result import rows_as_dicts, truncate_rows
from agora_agent.tools.sql.tenant import TenantScope, TenantScopeRewriter
from agora_agent.tools.sql.validate import SqlValidator

__all__ = ["PreparedQuery", "SqlTool", "sql_tool"]

_DIALECT_LABELS: dict[str, str] = {"sqlite": "SQLite", "postgresql": "PostgreSQL"}


@dataclass(frozen=True, slots=True)
class PreparedQuery:
    """What will run: `sql` in the driver's paramstyle and `params` (the tenant value, bound, never inlined)."""

    sql: str
    params: tuple[Any, ...] | dict[str, Any]
    tables: tuple[str, ...]


def _marker(paramstyle: str) -> tuple[str, bool]:
    """The placeholder text for one tenant parameter, and whether each occurrence is a separate positional value."""
    markers = {
        "qmark": ("?", True),
        "format": ("%s", True),
        "numeric_dollar": ("$1", False),
        "numeric": (":1", False),
        "named": (":agora_tenant", False),
        "pyformat": ("%(agora_tenant)s", False),
    }
    if paramstyle not in markers:
        raise ConfigurationError(f"sql_tool: unsupported driver paramstyle {paramstyle!r}")
    return markers[paramstyle]


class SqlTool:
    """A read-kind tool running one governed SELECT per call. Build it with `sql_tool(...)`.

    `invoke` returns `{"rows", "rowCount", "sql"}` plus `"truncated": True` when rows were dropped to stay
    under 256 KiB. It raises `SqlValidationError` (and subclasses) for refused SQL and `SqlExecutionError` /
    `SqlTimeoutError` when the database rejects or stops the query; messages tell the model what to change.
    """

    def __init__(
        self,
        engine: AsyncEngine,
        *,
        table_access: TableAccessPolicy | Mapping[str, Any],
        tenant: TenantScope | None = None,
        max_rows: int = 100,
        statement_timeout: float = 5.0,
        name: str = "query_database",
        description: str | None = None,
        roles: Iterable[str] | None = None,
        ability: str | None = None,
        default_schema: str | None = None,
    ) -> None:
        dialect_name = engine.dialect.name
        if dialect_name not in _DIALECT_LABELS:
            raise ConfigurationError(f"sql_tool supports SQLite and PostgreSQL engines, not {dialect_name!r}")
        if max_rows < 1:
            raise ConfigurationError(f"sql_tool: max_rows must be at least 1 (got {max_rows})", option="max_rows")
        if statement_timeout <= 0:
            raise ConfigurationError(
                f"sql_tool: statement_timeout must be positive (got {statement_timeout})", option="statement_timeout"
            )
        self.engine = engine
        self.dialect: Dialect = "sqlite" if dialect_name == "sqlite" else "postgresql"
        self.policy = table_access_policy(table_access)
        self.tenant = tenant
        self.max_rows = max_rows
        self.statement_timeout = statement_timeout
        self.default_schema = default_schema
        self._read = sqlglot_dialect(self.dialect)
        self._validator = SqlValidator(self.dialect)
        self._rewriter = (
            TenantScopeRewriter(tenant, self.dialect, default_schema=default_schema) if tenant is not None else None
        )
        self._marker, self._positional = _marker(str(engine.dialect.paramstyle))
        label = _DIALECT_LABELS[dialect_name]
        input_model: type[BaseModel] = create_model(
            "QueryDatabaseInput",
            sql=(
                str,
                Field(
                    min_length=1,
                    description=f"A single read-only {label} SELECT statement (no writes, no `;`-separated batches).",
                ),
            ),
        )
        self._spec = ToolSpec(
            name=name,
            kind="read",
            description=description
            or (
                f"Run one read-only SELECT against the application's {label} database. At most {max_rows} rows "
                "come back; only tables your roles may read are accessible, and rows are limited to your tenant."
            ),
            input_model=input_model,
            roles=tuple(roles) if roles is not None else None,
            ability=ability,
        )

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def prepare(self, sql: str, actor: Actor) -> PreparedQuery:
        """Validate and rewrite `sql` for `actor` without running it (every check up to the LIMIT injection)."""
        try:
            return self._prepare(sql, actor)
        except ToolError as err:
            err.tool_name = self._spec.name
            raise
        except RecursionError:
            raise SqlValidationError(
                "The query is nested too deeply; simplify it.", tool_name=self._spec.name
            ) from None

    def _prepare(self, sql: str, actor: Actor) -> PreparedQuery:
        tree = self._validator.validate(sql)
        refs = resolve_tables(tree, self.dialect, self.default_schema)
        check_table_access(self.policy, actor.roles, refs)
        token = f"agora_tenant_{secrets.token_hex(8)}"
        used = 0
        if self._rewriter is not None:
            self._rewriter.check_literals(tree, actor.tenant_ref)
        # LIMIT before the rewrite: a LIMIT expression it replaces must not take scoped references with it.
        tree = inject_limit(tree, self.max_rows)
        if self._rewriter is not None:
            used = self._rewriter.rewrite(tree, actor.tenant_ref, exp.Var(this=token))
        self._quote_tables(tree)
        final = self._render(tree)
        if final.count(token) != used:
            raise SqlValidationError("The query could not be scoped safely; simplify it.")
        if self._marker.startswith("%"):
            final = final.replace("%", "%%")
        final = final.replace(token, self._marker)
        tenant = actor.tenant_ref
        params: tuple[Any, ...] | dict[str, Any]
        if used == 0:
            params = ()
        elif self._positional:
            params = (tenant,) * used
        elif self._marker.startswith(("%(", ":agora")):
            params = {"agora_tenant": tenant}
        else:
            params = (tenant,)
        return PreparedQuery(final, params, tuple(dict.fromkeys(r.name for r in refs)))

    def _quote_tables(self, tree: exp.Expr) -> None:
        # The database must resolve exactly the names the policy judged: quote them in their folded form.
        for table in tree.find_all(exp.Table):
            for part in ("this", "db"):
                ident = table.args.get(part)
                if isinstance(ident, exp.Identifier) and not ident.args.get("quoted"):
                    folded = normalize_identifier(ident.this, quoted=False, dialect=self.dialect)
                    table.set(part, exp.Identifier(this=folded, quoted=True))

    def _render(self, tree: exp.Expr) -> str:
        try:
            final: str = tree.sql(
                dialect=self._read, comments=False, unsupported_level=ErrorLevel.RAISE, normalize_functions=False
            )
            # Fixed point: what runs must parse back to itself, or the checks above judged something else.
            again: str = sqlglot.parse_one(final, read=self._read).sql(
                dialect=self._read, comments=False, unsupported_level=ErrorLevel.RAISE, normalize_functions=False
            )
        except UnsupportedError as err:
            raise SqlValidationError(
                f"Not supported by {_DIALECT_LABELS[self.dialect]}: {str(err).rstrip('.')}; rewrite that part."
            ) from None
        except (ParseError, SqlglotError):
            raise SqlValidationError("The query could not be rendered safely; simplify it.") from None
        if again != final:
            raise SqlValidationError("The query could not be rendered safely; simplify it.")
        return final

    async def invoke(self, input: BaseModel | Mapping[str, Any], ctx: ToolContext) -> dict[str, Any]:
        """Run the governed query for `ctx.actor`; see the class docstring for the result and errors."""
        sql = input.get("sql") if isinstance(input, Mapping) else getattr(input, "sql", None)
        if not isinstance(sql, str) or not sql.strip():
            raise SqlValidationError("Send one SELECT statement in `sql`.", tool_name=self._spec.name)
        prepared = self.prepare(sql, ctx.actor)
        columns, raw_rows = await run_read_only(
            self.engine,
            prepared.sql,
            prepared.params,
            timeout=self.statement_timeout,
            max_rows=self.max_rows,
            tool_name=self._spec.name,
        )
        rows, truncated = truncate_rows(rows_as_dicts(columns, raw_rows))
        result: dict[str, Any] = {"rows": rows, "rowCount": len(raw_rows), "sql": prepared.sql}
        if truncated:
            result["truncated"] = True
        return result


def sql_tool(
    engine: AsyncEngine,
    *,
    table_access: TableAccessPolicy | Mapping[str, Any],
    tenant: TenantScope | None = None,
    max_rows: int = 100,
    statement_timeout: float = 5.0,
    name: str = "query_database",
    description: str | None = None,
    roles: Iterable[str] | None = None,
    ability: str | None = None,
    default_schema: str | None = None,
) -> SqlTool:
    """Build the governed read-only SQL tool for a SQLite or PostgreSQL `AsyncEngine`.

    `table_access` is required (there is no allow-all). `tenant` scopes the listed tables to
    `ctx.actor.tenant_ref`; an actor without a tenant sees no rows of them. Raises `ConfigurationError` for
    an unsupported engine or invalid options.
    """
    return SqlTool(
        engine,
        table_access=table_access,
        tenant=tenant,
        max_rows=max_rows,
        statement_timeout=statement_timeout,
        name=name,
        description=description,
        roles=roles,
        ability=ability,
        default_schema=default_schema,
    )
