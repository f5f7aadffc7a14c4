"""Tenant scoping: every read of a scoped table sees only the actor's tenant.

Rather than adding a predicate to the top-level WHERE (which an OR, a subquery, a CTE or a set operation
can route around), `TenantScopeRewriter` replaces EACH reference to a scoped table, at any depth, with a
filtered derived table that keeps the reference's alias:

    orders AS o   ->   (SELECT * FROM orders AS _scoped WHERE _scoped.tenant_id = <param> OFFSET 0) AS o

The only way SQL reads a table's rows is through such a reference, so no path reaches another tenant's
rows. `OFFSET 0` is an optimisation fence in both PostgreSQL and SQLite: the planner neither flattens
the derived table nor pushes the caller's predicates into it, so an expression that raises (a failing
cast, a division by zero) is never evaluated on another tenant's row and cannot leak it in an error.

The tenant value is bound as a parameter; `None` or `""` match nothing (`1 = 0`), never everything.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlglot import exp

from agora_agent.tools.sql.errors import SqlValidationError, TenantScopeError
from agora_agent.tools.sql.names import Dialect, normalize_identifier, resolve_tables

__all__ = ["SCOPED_ALIAS", "TenantScope", "TenantScopeRewriter"]

SCOPED_ALIAS = "_scoped"


@dataclass(frozen=True)
class TenantScope:
    """Which tables are per tenant and which column holds the tenant.

    Names are the database's own (lower case for unquoted identifiers); `tables` may include `schema.table`
    for tables outside the default schema.
    """

    column: str
    tables: frozenset[str] = field(default_factory=frozenset)

    def __init__(self, column: str, tables: Iterable[str]) -> None:
        if not column:
            raise ValueError("TenantScope.column must name the tenant column")
        object.__setattr__(self, "column", column)
        object.__setattr__(self, "tables", frozenset(tables))


def _is_tenant_column(node: exp.Expr, column: str, dialect: Dialect) -> bool:
    if not isinstance(node, exp.Column) or not isinstance(node.this, exp.Identifier):
        return False
    ident = node.this
    return normalize_identifier(ident.this, quoted=bool(ident.args.get("quoted")), dialect=dialect) == column


def _literal_value(node: exp.Expr) -> str | None:
    while isinstance(node, (exp.Cast, exp.Paren)):
        node = node.this
    if isinstance(node, exp.Literal):
        return str(node.this)
    return None


class TenantScopeRewriter:
    """Rewrites a validated tree so every scoped-table reference is filtered to one tenant."""

    def __init__(self, scope: TenantScope, dialect: Dialect, *, default_schema: str | None = None) -> None:
        self.scope = scope
        self.dialect: Dialect = dialect
        self.default_schema = default_schema

    def check_literals(self, tree: exp.Expr, tenant_ref: str | None) -> None:
        """Refuse `tenant_col = '<other>'` (or IN / IS NOT DISTINCT FROM) anywhere in the tree."""
        column = self.scope.column
        for node in tree.walk():
            literals: list[str | None] = []
            if isinstance(node, (exp.EQ, exp.NullSafeEQ, exp.Is)):
                left, right = node.this, node.expression
                if _is_tenant_column(left, column, self.dialect):
                    literals.append(_literal_value(right))
                if _is_tenant_column(right, column, self.dialect):
                    literals.append(_literal_value(left))
            elif isinstance(node, exp.In) and _is_tenant_column(node.this, column, self.dialect):
                literals.extend(_literal_value(e) for e in node.expressions)
            for value in literals:
                if value is not None and (not tenant_ref or value != tenant_ref):
                    raise TenantScopeError()

    def rewrite(self, tree: exp.Expr, tenant_ref: str | None, placeholder: exp.Expr) -> int:
        """Wrap every scoped reference of `tree` in place; returns how many copies of `placeholder` were inserted.

        Checks its own work before returning: a scoped reference left unwrapped raises `SqlValidationError`.
        """
        used = 0
        wrappers: set[int] = set()
        for ref in resolve_tables(tree, self.dialect, self.default_schema):
            if ref.name not in self.scope.tables:
                continue
            matches_nothing = not tenant_ref
            predicate: exp.Expr = (
                exp.EQ(this=exp.Literal.number(1), expression=exp.Literal.number(0))
                if matches_nothing
                else exp.EQ(
                    this=exp.Column(
                        this=exp.Identifier(this=self.scope.column, quoted=True),
                        table=exp.Identifier(this=SCOPED_ALIAS, quoted=True),
                    ),
                    expression=placeholder.copy(),
                )
            )
            used += 0 if matches_nothing else 1
            wrappers.add(id(self._wrap(ref.node, predicate)))
        self._assert_scoped(tree, wrappers)
        return used

    def _wrap(self, table: exp.Table, predicate: exp.Expr) -> exp.Select:
        alias = table.args.get("alias")
        outer_alias = alias.copy() if isinstance(alias, exp.TableAlias) else exp.TableAlias(this=table.this.copy())
        inner = table.copy()
        inner.set("alias", exp.TableAlias(this=exp.Identifier(this=SCOPED_ALIAS, quoted=True)))
        select = exp.Select(expressions=[exp.Star()])
        select.set("from_", exp.From(this=inner))
        select.set("where", exp.Where(this=predicate))
        select.set("offset", exp.Offset(expression=exp.Literal.number(0)))
        table.replace(exp.Subquery(this=select, alias=outer_alias))
        return select

    def _assert_scoped(self, tree: exp.Expr, wrappers: set[int]) -> None:
        # Post-condition: every reference to a scoped table sits directly in a wrapper made by this call.
        for ref in resolve_tables(tree, self.dialect, self.default_schema):
            if ref.name not in self.scope.tables:
                continue
            source = ref.node.parent
            select = source.parent if isinstance(source, exp.From) else None
            if select is None or id(select) not in wrappers:
                raise SqlValidationError(f"tenant scope: could not scope the reference to `{ref.name}`; simplify it.")
