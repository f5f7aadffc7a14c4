"""The building blocks on their own: validator, access policy, tenant rewriter, LIMIT injection, truncation."""

from __future__ import annotations

import json
from collections.abc import Sequence

import pytest
from sqlglot import exp

import agora_agent.tools.sql as data
from agora_agent.errors import ConfigurationError
from agora_agent.tools.sql import (
    GroupTableAccessPolicy,
    SqlAccessDeniedError,
    SqlValidationError,
    SqlValidator,
    TenantScope,
    TenantScopeError,
    TenantScopeRewriter,
    check_table_access,
    inject_limit,
    resolve_tables,
    table_access_policy,
    truncate_rows,
)


@pytest.mark.ref("DATA-17")
def test_exports_the_building_blocks() -> None:
    for name in ("SqlValidator", "SqlValidationError", "GroupTableAccessPolicy", "TenantScopeRewriter", "inject_limit"):
        assert name in data.__all__
    assert data.__all__ == sorted(data.__all__, key=lambda n: (not n.isupper(), n))
    assert all(hasattr(data, name) for name in data.__all__)


@pytest.mark.ref("DATA-05")
@pytest.mark.parametrize(
    ("sql", "message"),
    [
        ("SELEC 1", "Parse error: "),
        ("SELECT 1; SELECT 2", "Only a single statement is allowed"),
        ("DROP TABLE t", "DDL is not allowed; only SELECT statements are accepted"),
        ("INSERT INTO t VALUES (1)", "INSERT is not allowed; only SELECT statements are accepted"),
        ("UPDATE t SET a = 1", "UPDATE is not allowed; only SELECT statements are accepted"),
        ("WITH x AS (DELETE FROM t RETURNING *) SELECT * FROM x", "DELETE is not allowed"),
        ("VALUES (1)", 'Statement type "VALUES" is not allowed'),
    ],
)
def test_validator_messages_name_the_statement(sql: str, message: str) -> None:
    with pytest.raises(SqlValidationError) as caught:
        SqlValidator("postgresql").validate(sql)
    assert message in str(caught.value)


@pytest.mark.ref("DATA-05")
def test_validator_accepts_selects_and_set_operations() -> None:
    validator = SqlValidator("sqlite")
    assert isinstance(validator.validate("SELECT 1;"), exp.Select)
    assert isinstance(validator.validate("SELECT 1 UNION SELECT 2"), exp.Union)


@pytest.mark.ref("DATA-06")
def test_resolve_tables_covers_joins_subqueries_ctes_and_set_operations() -> None:
    tree = SqlValidator("postgresql").validate(
        "WITH c AS (SELECT * FROM a JOIN public.b ON 1 = 1) "
        "SELECT * FROM c, (SELECT * FROM d) x WHERE EXISTS (SELECT 1 FROM e) "
        "UNION SELECT * FROM sales.f"
    )
    assert sorted(ref.name for ref in resolve_tables(tree, "postgresql")) == ["a", "b", "d", "e", "sales.f"]


@pytest.mark.ref("DATA-06")
def test_recursive_cte_self_reference_is_not_a_table() -> None:
    tree = SqlValidator("sqlite").validate(
        "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r WHERE n < 3) SELECT * FROM r"
    )
    assert resolve_tables(tree, "sqlite") == []


def test_identifier_folding_matches_each_database() -> None:
    pg = resolve_tables(SqlValidator("postgresql").validate('SELECT * FROM Orders, "Orders"'), "postgresql")
    lite = resolve_tables(SqlValidator("sqlite").validate('SELECT * FROM Orders, "Orders"'), "sqlite")
    assert [r.name for r in pg] == ["orders", "Orders"]
    assert [r.name for r in lite] == ["orders", "orders"]
    long_name = "a" * 70
    (ref,) = resolve_tables(SqlValidator("postgresql").validate(f"SELECT * FROM {long_name}"), "postgresql")
    assert ref.name == "a" * 63


@pytest.mark.ref("DATA-07")
def test_group_policy_first_matching_group_wins_and_fails_closed() -> None:
    policy = GroupTableAccessPolicy(
        role_groups={"analyst": ["sales"], "admin": ["sales", "ops"]},
        tables_by_group={"ops": ["orders_archive"], "sales": ["orders*", "customers"]},
    )
    assert policy.can_access(["analyst"], "orders")
    assert policy.can_access(["analyst"], "customers")
    assert not policy.can_access(["analyst"], "orders_archive")  # classified by "ops" first
    assert policy.can_access(["admin"], "orders_archive")
    assert not policy.can_access(["analyst"], "secrets")  # unclassified
    assert not policy.can_access([], "orders")  # no roles
    assert not policy.can_access(["stranger"], "orders")  # unknown role
    every_group = GroupTableAccessPolicy({"admin": ["*"]}, {"sales": ["orders"], "ops": ["jobs"]})
    assert every_group.can_access(["admin"], "orders") and every_group.can_access(["admin"], "jobs")
    assert not every_group.can_access(["admin"], "secrets")  # "*" means every group, never every table


@pytest.mark.ref("DATA-07")
def test_prefix_patterns_never_match_system_catalogs() -> None:
    policy = GroupTableAccessPolicy(
        {"r": ["g"]}, {"g": ["pg*", "sqlite*", "information_schema*", "pg_stat_statements"]}
    )
    assert not policy.can_access(["r"], "pg_shadow")
    assert not policy.can_access(["r"], "sqlite_master")
    assert not policy.can_access(["r"], "information_schema.tables")
    assert policy.can_access(["r"], "pg_stat_statements")  # listed by exact name


def test_policy_configuration_has_no_allow_all() -> None:
    with pytest.raises(ConfigurationError) as allow_all:
        GroupTableAccessPolicy({"r": ["g"]}, {"g": ["*"]})
    assert allow_all.value.code == "allow_all_pattern"
    with pytest.raises(ConfigurationError) as inner_star:
        GroupTableAccessPolicy({"r": ["g"]}, {"g": ["a*b"]})
    assert inner_star.value.code == "bad_pattern"
    with pytest.raises(ConfigurationError) as not_a_list:
        table_access_policy({"analyst": "orders"})
    assert not_a_list.value.option == "table_access" and "no allow-all" in str(not_a_list.value)
    simple = table_access_policy({"analyst": ["orders"]})
    assert simple.can_access(["analyst"], "orders") and not simple.can_access(["other"], "orders")


@pytest.mark.ref("DATA-07")
def test_custom_policy_object_is_used_as_is() -> None:
    class OnlyReports:
        def can_access(self, roles: Sequence[str], table: str) -> bool:
            return table.startswith("report_")

    policy = table_access_policy(OnlyReports())
    tree = SqlValidator("sqlite").validate("SELECT * FROM report_daily, orders")
    with pytest.raises(SqlAccessDeniedError) as caught:
        check_table_access(policy, ["anyone"], resolve_tables(tree, "sqlite"))
    assert caught.value.tables == ("orders",)


@pytest.mark.ref("DATA-08")
def test_denial_message_lists_roles_and_every_table() -> None:
    policy = GroupTableAccessPolicy({"analyst": ["g"], "viewer": ["g"]}, {"g": ["orders"]})
    tree = SqlValidator("sqlite").validate("SELECT * FROM secrets JOIN payroll ON 1 = 1 JOIN secrets s2 ON 1 = 1")
    refs = resolve_tables(tree, "sqlite")
    with pytest.raises(SqlAccessDeniedError) as caught:
        check_table_access(policy, ["analyst", "viewer"], refs)
    assert str(caught.value).startswith("Your roles (analyst, viewer) are not allowed to query `secrets`, `payroll`.")
    with pytest.raises(SqlAccessDeniedError) as no_roles:
        check_table_access(policy, [], refs)
    assert (no_roles.value.roles, no_roles.value.tables[0]) == ((), "secrets")
    assert str(no_roles.value).startswith("Your roles (none) are not allowed to query `secrets`")  # the model reads it


def _rewrite(sql: str, tenant_ref: str | None) -> str:
    tree = SqlValidator("postgresql").validate(sql)
    rewriter = TenantScopeRewriter(TenantScope("tenant_id", ["orders"]), "postgresql")
    rewriter.check_literals(tree, tenant_ref)
    rewriter.rewrite(tree, tenant_ref, exp.Placeholder(this="tenant"))
    return tree.sql("postgres")


@pytest.mark.ref("DATA-09", "DATA-12")
def test_rewriter_wraps_every_scoped_reference_keeping_aliases() -> None:
    sql = _rewrite("SELECT o.id FROM orders o WHERE o.id IN (SELECT id FROM orders) OR 1 = 1", "A")
    assert sql == (
        'SELECT o.id FROM (SELECT * FROM orders AS "_scoped" WHERE "_scoped"."tenant_id" = %(tenant)s OFFSET 0) AS o '
        'WHERE o.id IN (SELECT id FROM (SELECT * FROM orders AS "_scoped" WHERE "_scoped"."tenant_id" = %(tenant)s '
        "OFFSET 0) AS orders) OR 1 = 1"
    )


@pytest.mark.ref("DATA-09")
@pytest.mark.parametrize("tenant_ref", [None, ""])
def test_missing_or_empty_tenant_matches_nothing(tenant_ref: str | None) -> None:
    sql = _rewrite("SELECT * FROM orders", tenant_ref)
    assert "WHERE 1 = 0" in sql and "%(tenant)s" not in sql


@pytest.mark.ref("DATA-11")
def test_unscoped_query_is_unchanged_and_foreign_literals_are_refused() -> None:
    assert _rewrite("SELECT * FROM products", "A") == "SELECT * FROM products"
    with pytest.raises(TenantScopeError):
        _rewrite("SELECT * FROM orders WHERE tenant_id = 'B' OR 1 = 1", "A")
    with pytest.raises(TenantScopeError):
        _rewrite("SELECT * FROM orders WHERE tenant_id = 'A'", None)


@pytest.mark.ref("DATA-13")
@pytest.mark.parametrize(
    ("sql", "expected"),
    [
        ("SELECT * FROM t", "SELECT * FROM t LIMIT 100"),
        ("SELECT * FROM t;", "SELECT * FROM t LIMIT 100"),
        ("SELECT * FROM t LIMIT 5", "SELECT * FROM t LIMIT 5"),
        ("SELECT * FROM t LIMIT 5000", "SELECT * FROM t LIMIT 100"),
        ("SELECT * FROM t LIMIT -1", "SELECT * FROM t LIMIT 100"),
        ("SELECT * FROM t LIMIT 10 OFFSET 20", "SELECT * FROM t LIMIT 10 OFFSET 20"),
        ("SELECT * FROM t ORDER BY a LIMIT (SELECT 1000)", "SELECT * FROM t ORDER BY a LIMIT 100"),
        ("SELECT a FROM t UNION SELECT a FROM u", "SELECT a FROM t UNION SELECT a FROM u LIMIT 100"),
    ],
)
def test_inject_limit(sql: str, expected: str) -> None:
    assert inject_limit(sql, 100, dialect="sqlite").sql("sqlite") == expected


@pytest.mark.ref("DATA-16")
def test_truncate_rows_keeps_the_longest_prefix_within_the_budget() -> None:
    rows = [{"i": i, "text": "x" * 100} for i in range(10)]
    row_bytes = len(json.dumps(rows[0], separators=(",", ":"))) + 1
    kept, truncated = truncate_rows(rows, limit=2 + 3 * row_bytes)
    assert (len(kept), truncated) == (3, True)
    assert truncate_rows(rows, limit=2 + 10 * row_bytes) == (rows, False)
    assert truncate_rows([], limit=2) == ([], False)
