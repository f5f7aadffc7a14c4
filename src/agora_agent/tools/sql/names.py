"""Table names as the database resolves them: identifier folding, schemas, system catalogs, CTE scoping.

Every check downstream (table access, tenant scoping) compares names produced here, so they must fold
exactly as the database does: PostgreSQL lower-cases unquoted identifiers (ASCII only) and truncates at
63 bytes; SQLite compares identifiers ASCII-case-insensitively, quoted or not.

`resolve_tables` classifies EVERY `exp.Table` node of a statement: a reference to a CTE in scope, or a real
table. Where PostgreSQL and SQLite could disagree (a CTE naming itself without RECURSIVE, a reference to a
later sibling CTE) the statement is refused rather than guessed.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Literal

from sqlglot import exp

from agora_agent.tools.sql.errors import SqlValidationError

__all__ = [
    "DEFAULT_SCHEMAS",
    "Dialect",
    "TableRef",
    "ascii_lower",
    "is_system_table",
    "normalize_identifier",
    "resolve_tables",
    "sqlglot_dialect",
    "table_name_of",
]

Dialect = Literal["sqlite", "postgresql"]

DEFAULT_SCHEMAS: dict[Dialect, str] = {"sqlite": "main", "postgresql": "public"}
_SQLGLOT_NAMES: dict[Dialect, str] = {"sqlite": "sqlite", "postgresql": "postgres"}
_PG_NAMEDATALEN = 63
_ASCII_LOWER = str.maketrans("ABCDEFGHIJKLMNOPQRSTUVWXYZ", "abcdefghijklmnopqrstuvwxyz")
_SYSTEM_SCHEMAS = frozenset({"pg_catalog", "information_schema", "pg_toast"})
_SYSTEM_PREFIXES = ("pg_", "sqlite_", "pragma_")


def sqlglot_dialect(dialect: Dialect) -> str:
    """The sqlglot dialect name for a SQLAlchemy dialect name."""
    return _SQLGLOT_NAMES[dialect]


def ascii_lower(text: str) -> str:
    """Lower-case ASCII letters only, as both databases fold identifiers (Python's `lower()` folds Unicode too)."""
    return text.translate(_ASCII_LOWER)


def normalize_identifier(text: str, *, quoted: bool, dialect: Dialect) -> str:
    """The name the database will look up for this identifier."""
    if dialect == "sqlite":
        return ascii_lower(text)
    name = text if quoted else ascii_lower(text)
    raw = name.encode("utf-8")
    if len(raw) > _PG_NAMEDATALEN:
        # PostgreSQL silently truncates long identifiers; compare the name it will really use.
        name = raw[:_PG_NAMEDATALEN].decode("utf-8", errors="ignore")
    return name


def _ident(node: exp.Expr | None, dialect: Dialect) -> str | None:
    if node is None:
        return None
    if isinstance(node, exp.Identifier):
        return normalize_identifier(node.this, quoted=bool(node.args.get("quoted")), dialect=dialect)
    raise SqlValidationError(f"Unsupported table reference `{node.sql()}`; use a plain table name.")


def is_system_table(name: str) -> bool:
    """True for catalog tables (pg_catalog.*, information_schema.*, pg_*, sqlite_*, pragma_*), denied unless listed."""
    schema, _, table = name.rpartition(".")
    if schema and (schema in _SYSTEM_SCHEMAS or schema.startswith("pg_")):
        return True
    return table.startswith(_SYSTEM_PREFIXES)


@dataclass(frozen=True, slots=True)
class TableRef:
    """A real table a statement reads. `name` is `table`, or `schema.table` outside the default schema."""

    name: str
    node: exp.Table


def table_name_of(table: exp.Table, dialect: Dialect, default_schema: str | None = None) -> str:
    """The policy name of a table node: folded as the database folds it, default schema dropped.

    Raises `SqlValidationError` for cross-database names and identifiers containing a dot (ambiguous with
    a schema-qualified name).
    """
    if table.args.get("catalog") is not None:
        raise SqlValidationError(
            f"Cross-database reference `{table.sql()}` is not allowed; use `table` or `schema.table`."
        )
    if not isinstance(table.this, exp.Identifier):
        shown = table.this.sql() if isinstance(table.this, exp.Expr) else table.sql()
        raise SqlValidationError(f"Table functions such as `{shown}` are not allowed in FROM; select from tables.")
    name = _ident(table.this, dialect)
    schema = _ident(table.args.get("db"), dialect)
    assert name is not None
    if "." in name or (schema is not None and "." in schema):
        raise SqlValidationError(f"Table name `{table.sql()}` contains a dot inside quotes; rename or unquote it.")
    default = default_schema if default_schema is not None else DEFAULT_SCHEMAS[dialect]
    if schema is None or schema == default:
        return name
    return f"{schema}.{name}"


def _with_of(node: exp.Expr) -> exp.With | None:
    found = node.args.get("with_") or node.args.get("with")
    return found if isinstance(found, exp.With) else None


def _cte_name(cte: exp.CTE, dialect: Dialect) -> str:
    alias = cte.args.get("alias")
    ident = alias.this if isinstance(alias, exp.TableAlias) else None
    if not isinstance(ident, exp.Identifier):
        raise SqlValidationError("Every CTE needs a name: `WITH name AS (SELECT …)`.")
    return normalize_identifier(ident.this, quoted=bool(ident.args.get("quoted")), dialect=dialect)


def _binds_to_cte(table: exp.Table, dialect: Dialect) -> bool:
    """Whether this reference names a CTE in scope (innermost WITH first), refusing ambiguous cases."""
    if table.args.get("db") is not None or not isinstance(table.this, exp.Identifier):
        return False
    name = _ident(table.this, dialect)
    child: exp.Expr = table
    parent = table.parent
    while parent is not None:
        if isinstance(parent, exp.With) and isinstance(child, exp.CTE):
            ctes = [c for c in parent.expressions if isinstance(c, exp.CTE)]
            names = [_cte_name(c, dialect) for c in ctes]
            index = next(i for i, c in enumerate(ctes) if c is child)
            recursive = bool(parent.args.get("recursive"))
            visible = names[: index + 1] if recursive else names[:index]
            if name in visible:
                return True
            if name in names[index:]:
                raise SqlValidationError(
                    f"CTE reference `{name}` is ambiguous: a CTE may only read earlier CTEs, or itself when the "
                    "WITH clause says RECURSIVE. Reorder the CTEs, add RECURSIVE, or rename the CTE."
                )
        else:
            with_ = _with_of(parent)
            if with_ is not None and child is not with_:
                names = [_cte_name(c, dialect) for c in with_.expressions if isinstance(c, exp.CTE)]
                if name in names:
                    return True
        child, parent = parent, parent.parent
    return False


def _tables(tree: exp.Expr) -> Iterator[exp.Table]:
    for node in tree.walk():
        if isinstance(node, exp.Table):
            yield node


def resolve_tables(tree: exp.Expr, dialect: Dialect, default_schema: str | None = None) -> list[TableRef]:
    """Every real table the statement reads, one entry per reference (CTE references excluded).

    Raises `SqlValidationError` for table functions, cross-database names and ambiguous CTE references.
    """
    refs: list[TableRef] = []
    for table in _tables(tree):
        if _binds_to_cte(table, dialect):
            continue
        refs.append(TableRef(table_name_of(table, dialect, default_schema), table))
    return refs
