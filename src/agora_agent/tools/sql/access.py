"""Who may read which table: the `TableAccessPolicy` protocol and `GroupTableAccessPolicy`.

A policy answers one question per table: may an actor holding these roles read it? There is no
allow-all: a table no rule classifies is denied, an actor without roles is denied, and system catalogs
(`pg_catalog.*`, `information_schema.*`, `pg_*`, `sqlite_*`) are only readable when listed by exact name —
a `prefix*` pattern never matches them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol, runtime_checkable

from agora_agent.errors import ConfigurationError
from agora_agent.tools.sql.errors import SqlAccessDeniedError
from agora_agent.tools.sql.names import TableRef, is_system_table

__all__ = ["GroupTableAccessPolicy", "TableAccessPolicy", "check_table_access", "table_access_policy"]


@runtime_checkable
class TableAccessPolicy(Protocol):
    """Decides whether an actor with `roles` may read `table` (`table` or `schema.table`, as the database folds it)."""

    def can_access(self, roles: Sequence[str], table: str) -> bool: ...


def _pattern(pattern: str, group: str) -> str:
    if not isinstance(pattern, str) or not pattern.strip("*"):
        raise ConfigurationError(
            f"table pattern {pattern!r} in group {group!r} would allow every table; list tables or `prefix*` patterns",
            code="allow_all_pattern",
            option="tables_by_group",
        )
    if "*" in pattern[:-1]:
        raise ConfigurationError(
            f"table pattern {pattern!r} in group {group!r}: `*` is only allowed at the end",
            code="bad_pattern",
            option="tables_by_group",
        )
    return pattern


class GroupTableAccessPolicy:
    """Roles map to groups, groups to table patterns (exact names or `prefix*`).

    A table belongs to the FIRST group (in mapping order) with a matching pattern; it is readable iff one of
    the actor's roles lists that group (a role listing the group `"*"` reads every CLASSIFIED table).
    Unclassified tables, empty or unknown roles: denied. Names are
    compared exactly with the database's folded name (lower case for unquoted identifiers).
    """

    def __init__(self, role_groups: Mapping[str, Iterable[str]], tables_by_group: Mapping[str, Iterable[str]]) -> None:
        self.role_groups: dict[str, frozenset[str]] = {role: frozenset(groups) for role, groups in role_groups.items()}
        self.tables_by_group: dict[str, tuple[str, ...]] = {
            group: tuple(_pattern(p, group) for p in patterns) for group, patterns in tables_by_group.items()
        }

    def group_of(self, table: str) -> str | None:
        """The group that classifies `table`, or None when no pattern matches."""
        system = is_system_table(table)
        for group, patterns in self.tables_by_group.items():
            for pattern in patterns:
                if pattern == table:
                    return group
                if pattern.endswith("*") and not system and table.startswith(pattern[:-1]):
                    return group
        return None

    def can_access(self, roles: Sequence[str], table: str) -> bool:
        group = self.group_of(table)
        if group is None:
            return False
        return any(group in (groups := self.role_groups.get(role, ())) or "*" in groups for role in roles)


def table_access_policy(table_access: TableAccessPolicy | Mapping[str, Any]) -> TableAccessPolicy:
    """Build the policy from what `sql_tool(table_access=...)` accepts.

    - a `TableAccessPolicy` (anything with `can_access(roles, table)`), used as is;
    - `{"role_groups": {...}, "tables_by_group": {...}}`, a `GroupTableAccessPolicy`;
    - `{role: [table patterns]}`, each role its own group.
    """
    if isinstance(table_access, TableAccessPolicy):
        return table_access
    if isinstance(table_access, Mapping) and table_access:
        if set(table_access) == {"role_groups", "tables_by_group"}:
            return GroupTableAccessPolicy(table_access["role_groups"], table_access["tables_by_group"])
        if all(isinstance(v, Iterable) and not isinstance(v, (str, bytes)) for v in table_access.values()):
            return GroupTableAccessPolicy(
                {role: (role,) for role in table_access}, {role: tuple(v) for role, v in table_access.items()}
            )
    raise ConfigurationError(
        "sql_tool: table_access is required and must be a TableAccessPolicy, "
        '{"role_groups": ..., "tables_by_group": ...} or {role: [tables]}; there is no allow-all',
        option="table_access",
    )


def check_table_access(policy: TableAccessPolicy, roles: Sequence[str], tables: Iterable[TableRef]) -> None:
    """Raise `SqlAccessDeniedError` naming every referenced table the roles may not read."""
    denied: list[str] = []
    for ref in tables:
        if ref.name not in denied and not (roles and policy.can_access(tuple(roles), ref.name)):
            denied.append(ref.name)
    if denied:
        raise SqlAccessDeniedError(roles, denied)
