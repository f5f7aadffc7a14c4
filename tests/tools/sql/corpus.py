"""The adversarial corpus for the governed SQL tool, run against real SQLite and PostgreSQL data.

Data (see `tests/tools/sql/conftest.py`): the actor is tenant "A" with role "analyst", who may read `orders`,
`customers` (both tenant-scoped), `products` (shared) and `report_*`. Tenant "B"'s rows carry the marker
`TENANT_B`, unlisted tables (`secrets`, `audit_log`, PostgreSQL `private.orders` and `"ORDERS"`) carry
`UNLISTED_SECRET`. Whatever a case expects, no returned value and no error message may contain a marker,
and no table may change.

Expectations:
- ok:      must succeed; `rows` (when given) are the exact values returned, in order.
- refused: must be refused before the database runs anything (`SqlValidationError`); `msg` must appear.
- safe:    may succeed or fail (dialects differ), but leaks nothing and writes nothing.
- timeout: must be stopped by the statement timeout with the timeout message.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

Expect = Literal["ok", "refused", "safe", "timeout"]
Only = Literal["sqlite", "postgresql"] | None

MARKERS = ("TENANT_B", "UNLISTED_SECRET")


@dataclass(frozen=True)
class Case:
    id: str
    sql: str
    expect: Expect
    only: Only = None
    rows: list[tuple[Any, ...]] | None = None
    msg: str | None = None


CASES: list[Case] = []


def _add(expect: Expect, id: str, sql: str, *, only: Only = None, rows: Any = None, msg: str | None = None) -> None:
    assert all(c.id != id for c in CASES), id
    CASES.append(Case(id, sql, expect, only, rows, msg))


def ok(id: str, sql: str, rows: list[tuple[Any, ...]] | None = None, only: Only = None) -> None:
    _add("ok", id, sql, rows=rows, only=only)


def refused(id: str, sql: str, msg: str | None = None, only: Only = None) -> None:
    _add("refused", id, sql, msg=msg, only=only)


def safe(id: str, sql: str, only: Only = None) -> None:
    _add("safe", id, sql, only=only)


def timeout(id: str, sql: str, only: Only = None) -> None:
    _add("timeout", id, sql, only=only)


SINGLE = "Only a single statement"
DENIED = "are not allowed to query"
MISMATCH = "tenant mismatch"
FUNC = "is not allowed: it can reach outside"
TABLE_FN = "Table functions"
PARAMS = "Query parameters"

# --- stacked statements -------------------------------------------------------------------------------
refused("stack-delete", "SELECT * FROM orders; DELETE FROM orders", SINGLE)
refused("stack-two-selects", "SELECT 1; SELECT 2", SINGLE)
refused("stack-nospace-drop", "SELECT * FROM orders;DROP TABLE orders", SINGLE)
refused("stack-newline-insert", "SELECT 1;\nINSERT INTO orders VALUES (99, 'B', 3, 'x', 1)", SINGLE)
refused("stack-comment-semicolon", "SELECT 1 /* ; */; UPDATE orders SET amount = 0", SINGLE)
refused("stack-string-semicolon", "SELECT ';' ; DELETE FROM orders", SINGLE)
refused("stack-after-line-comment", "SELECT 1; -- harmless\nDELETE FROM orders", SINGLE)
refused("stack-double-semicolon", "SELECT 1;;DELETE FROM orders", SINGLE)
refused("stack-transaction", "SELECT 1; BEGIN; DELETE FROM orders; COMMIT", SINGLE)
refused("stack-pragma", "SELECT 1; PRAGMA query_only = OFF; DELETE FROM orders", SINGLE)
refused("stack-read-write", "SELECT 1; SET TRANSACTION READ WRITE; DELETE FROM orders")
refused("stack-commit", "SELECT 1\n;\nCOMMIT", SINGLE)
refused("stack-copy", "SELECT 1; COPY orders TO '/tmp/agora_x'")
refused("stack-select-secrets", "SELECT id FROM orders; SELECT value FROM secrets", SINGLE)
refused("stack-crlf", "SELECT 1;\r\nDROP TABLE secrets", SINGLE)
refused("stack-tab", "SELECT 1;\tUPDATE customers SET name = 'x'", SINGLE)
refused("empty-only-semicolon", ";")
refused("empty-only-comment", "-- nothing here")
ok("trailing-semicolon", "SELECT id FROM orders ORDER BY id;", [(1,), (2,)])
ok("trailing-semicolon-comment", "SELECT id FROM orders ORDER BY id; -- done", [(1,), (2,)])

# --- writes, DDL and utility statements ---------------------------------------------------------------
refused("insert", "INSERT INTO orders VALUES (99, 'B', 3, 'x', 1)", "INSERT is not allowed")
refused("insert-select", "INSERT INTO orders SELECT * FROM orders", "INSERT is not allowed")
refused("update", "UPDATE orders SET amount = 0", "UPDATE is not allowed")
refused("update-from", "UPDATE orders SET note = s.value FROM secrets s WHERE s.id = orders.id", "UPDATE")
refused("delete", "DELETE FROM orders", "DELETE is not allowed")
refused("delete-where", "DELETE FROM orders WHERE tenant_id = 'B'", "DELETE is not allowed")
refused("drop-table", "DROP TABLE secrets", "DDL is not allowed")
refused("drop-if-exists", "DROP TABLE IF EXISTS orders", "DDL is not allowed")
refused("create-table", "CREATE TABLE stolen (a INT)", "DDL is not allowed")
refused("create-table-as", "CREATE TABLE stolen AS SELECT * FROM secrets", "DDL is not allowed")
refused("create-view", "CREATE VIEW v AS SELECT * FROM secrets", "DDL is not allowed")
refused("create-index", "CREATE INDEX ix ON orders (note)", "DDL is not allowed")
refused("create-temp", "CREATE TEMP TABLE t AS SELECT * FROM orders", "DDL is not allowed")
refused("alter-table", "ALTER TABLE orders ADD COLUMN z INT", "is not allowed")
refused("alter-rename", "ALTER TABLE secrets RENAME TO orders2", "is not allowed")
refused("truncate", "TRUNCATE orders", "is not allowed")
refused("truncate-table", "TRUNCATE TABLE orders", "is not allowed")
refused("replace-into", "REPLACE INTO orders VALUES (1, 'B', 3, 'x', 1)", "is not allowed", only="sqlite")
refused("insert-or-replace", "INSERT OR REPLACE INTO orders VALUES (1, 'B', 3, 'x', 1)", "INSERT", only="sqlite")
refused("upsert", "INSERT INTO orders VALUES (1, 'A', 1, 'x', 1) ON CONFLICT DO NOTHING", "INSERT")
refused(
    "merge",
    "MERGE INTO orders o USING secrets s ON o.id = s.id WHEN MATCHED THEN UPDATE SET note = s.value",
    only="postgresql",
)
refused("grant", "GRANT SELECT ON secrets TO PUBLIC")
refused("revoke", "REVOKE SELECT ON orders FROM PUBLIC")
refused("vacuum", "VACUUM", "VACUUM is not allowed")
refused("vacuum-into", "VACUUM INTO '/tmp/agora_copy.db'", only="sqlite")
refused("analyze", "ANALYZE")
refused("reindex", "REINDEX orders")
refused("explain", "EXPLAIN SELECT * FROM secrets", "EXPLAIN is not allowed")
refused("explain-analyze-delete", "EXPLAIN ANALYZE DELETE FROM orders")
refused("pragma-table-info", "PRAGMA table_info(secrets)", "PRAGMA is not allowed")
refused("pragma-writable-schema", "PRAGMA writable_schema = ON")
refused("pragma-query-only-off", "PRAGMA query_only = OFF", "PRAGMA is not allowed")
refused("attach", "ATTACH DATABASE '/tmp/agora_evil.db' AS evil")
refused("detach", "DETACH DATABASE main")
refused("begin", "BEGIN")
refused("commit", "COMMIT")
refused("rollback", "ROLLBACK")
refused("set-role", "SET ROLE postgres")
refused("set-search-path", "SET search_path TO private")
refused("reset-all", "RESET ALL")
refused("show-all", "SHOW ALL")
refused("call", "CALL do_something()")
refused("do-block", "DO $$ BEGIN DELETE FROM orders; END $$")
refused("lock-table", "LOCK TABLE orders")
refused("notify", "NOTIFY evil")
refused("listen", "LISTEN evil")
refused("declare-cursor", "DECLARE c CURSOR FOR SELECT * FROM secrets")
refused("prepare", "PREPARE p AS SELECT * FROM secrets")
refused("execute", "EXECUTE p")
refused("deallocate", "DEALLOCATE ALL")
refused("copy-to-stdout", "COPY orders TO STDOUT")
refused("copy-query-to-file", "COPY (SELECT * FROM secrets) TO '/tmp/agora_x'")
refused("copy-from-file", "COPY orders FROM '/etc/passwd'")
refused("copy-program", "COPY orders TO PROGRAM 'id'")
refused("create-extension", "CREATE EXTENSION dblink")
refused("comment-on", "COMMENT ON TABLE orders IS 'pwned'")
refused("refresh-matview", "REFRESH MATERIALIZED VIEW v")
refused("cluster", "CLUSTER orders")
refused("checkpoint", "CHECKPOINT")
refused("discard", "DISCARD ALL")
refused("load", "LOAD 'plpgsql'")
refused("values-statement", "VALUES (1)", "not allowed")
refused("table-statement-secrets", "TABLE secrets")
refused("create-function", "CREATE FUNCTION f() RETURNS int AS 'select 1' LANGUAGE sql")
refused("security-definer", "ALTER FUNCTION f() SECURITY DEFINER")

# --- writes hidden in CTEs, SELECT INTO, locking clauses -------------------------------------------------
refused("cte-delete", "WITH x AS (DELETE FROM orders RETURNING *) SELECT * FROM x", "DELETE is not allowed")
refused("cte-update", "WITH x AS (UPDATE orders SET amount = 0 RETURNING *) SELECT count(*) FROM x", "UPDATE")
refused(
    "cte-insert",
    "WITH x AS (INSERT INTO orders VALUES (99, 'A', 1, 'x', 1) RETURNING *) SELECT * FROM x",
    "INSERT is not allowed",
)
refused("cte-second-delete", "WITH a AS (SELECT 1), b AS (DELETE FROM orders RETURNING id) SELECT * FROM a", "DELETE")
refused("cte-then-delete", "WITH x AS (SELECT 1) DELETE FROM orders", "DELETE")
refused("cte-then-update", "WITH x AS (SELECT * FROM orders) UPDATE orders SET amount = 1", "UPDATE")
refused("cte-recursive-insert", "WITH RECURSIVE r AS (SELECT 1) INSERT INTO secrets SELECT * FROM r")
refused("subquery-delete", "SELECT * FROM (WITH x AS (DELETE FROM orders RETURNING *) SELECT * FROM x) s")
refused("nested-cte-delete", "WITH a AS (WITH b AS (DELETE FROM orders RETURNING *) SELECT * FROM b) SELECT * FROM a")
refused("select-into", "SELECT * INTO stolen FROM orders", "SELECT INTO is not allowed")
refused("select-into-temp", "SELECT id INTO TEMP t FROM orders", "SELECT INTO")
refused("select-into-unlogged", "SELECT * INTO UNLOGGED stolen FROM orders", only="postgresql")
refused("for-update", "SELECT * FROM orders FOR UPDATE", "Locking clauses")
refused("for-share", "SELECT * FROM orders FOR SHARE", "Locking clauses", only="postgresql")
refused("for-no-key-update", "SELECT * FROM orders FOR NO KEY UPDATE", only="postgresql")
refused("for-key-share", "SELECT * FROM orders FOR KEY SHARE", only="postgresql")
refused("for-update-nowait", "SELECT * FROM orders FOR UPDATE NOWAIT", only="postgresql")
refused("for-update-skip-locked", "SELECT * FROM orders FOR UPDATE SKIP LOCKED", only="postgresql")
refused("for-update-of", "SELECT * FROM orders o FOR UPDATE OF o", only="postgresql")
refused("subquery-for-update", "SELECT * FROM (SELECT * FROM orders FOR UPDATE) s", only="postgresql")

# --- unlisted tables: direct, disguised, and reached through every clause ---------------------------------
refused("secrets", "SELECT * FROM secrets", DENIED)
refused("secrets-upper", "SELECT * FROM SECRETS", DENIED)
refused("secrets-quoted", 'SELECT * FROM "secrets"', DENIED)
refused("secrets-mixed-case", "SeLeCt * FrOm SeCrEtS", DENIED)
refused("secrets-main", "SELECT * FROM main.secrets", DENIED)
refused("secrets-public", "SELECT * FROM public.secrets", DENIED)
refused("secrets-public-quoted", 'SELECT * FROM "public"."secrets"', DENIED)
refused("secrets-comment-glue", "SELECT * FROM/**/secrets", DENIED)
refused("secrets-tab", "SELECT *\tFROM\tsecrets", DENIED)
refused("secrets-newlines", "SELECT\n*\nFROM\nsecrets", DENIED)
refused("secrets-aliased-as-allowed", "SELECT * FROM secrets AS orders", DENIED)
refused("secrets-comma-join", "SELECT * FROM orders, secrets", DENIED)
refused("secrets-inner-join", "SELECT * FROM orders JOIN secrets ON 1 = 1", DENIED)
refused("secrets-left-join", "SELECT * FROM orders LEFT JOIN secrets s ON s.id = orders.id", DENIED)
refused("secrets-cross-join", "SELECT * FROM orders CROSS JOIN secrets", DENIED)
refused("secrets-natural-join", "SELECT * FROM orders NATURAL JOIN secrets", DENIED)
refused("secrets-in-subquery", "SELECT * FROM orders WHERE id IN (SELECT id FROM secrets)", DENIED)
refused("secrets-exists", "SELECT * FROM orders WHERE EXISTS (SELECT 1 FROM secrets)", DENIED)
refused("secrets-scalar-select", "SELECT (SELECT value FROM secrets LIMIT 1) AS v", DENIED)
refused(
    "secrets-having", "SELECT customer_id FROM orders GROUP BY customer_id HAVING count(*) < (SELECT 9 FROM secrets)"
)
refused("secrets-derived", "SELECT * FROM (SELECT * FROM secrets) AS orders", DENIED)
refused("secrets-derived-deep", "SELECT * FROM (SELECT * FROM (SELECT * FROM (SELECT * FROM secrets) a) b) c", DENIED)
refused("secrets-cte-shadow", "WITH orders AS (SELECT * FROM secrets) SELECT * FROM orders", DENIED)
refused("secrets-cte-unused", "WITH x AS (SELECT * FROM secrets) SELECT 1", DENIED)
refused("secrets-second-cte", "WITH a AS (SELECT 1 AS n), b AS (SELECT * FROM secrets) SELECT * FROM a", DENIED)
refused(
    "secrets-recursive-cte",
    "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM r JOIN secrets ON 1 = 1 WHERE n < 3) SELECT * FROM r",
    DENIED,
)
refused("secrets-nested-with", "SELECT * FROM (WITH s AS (SELECT * FROM secrets) SELECT * FROM s) x", DENIED)
refused("secrets-union", "SELECT id, note FROM orders UNION SELECT id, value FROM secrets", DENIED)
refused("secrets-union-all", "SELECT id FROM orders UNION ALL SELECT id FROM secrets", DENIED)
refused("secrets-intersect", "SELECT id FROM orders INTERSECT SELECT id FROM secrets", DENIED)
refused("secrets-except", "SELECT id FROM orders EXCEPT SELECT id FROM secrets", DENIED)
refused("secrets-union-paren", "SELECT 1 UNION (SELECT 1 FROM secrets)", DENIED)
refused("secrets-union-first", "(SELECT value FROM secrets) UNION SELECT note FROM orders", DENIED)
refused("secrets-where-eq", "SELECT * FROM orders WHERE note = (SELECT value FROM secrets WHERE id = 1)", DENIED)
refused("secrets-case-exists", "SELECT CASE WHEN EXISTS (SELECT 1 FROM secrets) THEN 1 ELSE 0 END AS x", DENIED)
refused("secrets-order-by", "SELECT id FROM orders ORDER BY (SELECT count(*) FROM secrets)", DENIED)
refused("secrets-group-by", "SELECT count(*) FROM orders GROUP BY (SELECT min(id) FROM secrets)", DENIED)
refused("secrets-join-on-subquery", "SELECT * FROM orders o JOIN products p ON p.id IN (SELECT id FROM secrets)")
refused("secrets-lateral", "SELECT * FROM orders o, LATERAL (SELECT * FROM secrets) s", DENIED, only="postgresql")
refused("secrets-in-limit", "SELECT id FROM orders LIMIT (SELECT count(*) FROM secrets)", DENIED)
refused("secrets-in-function-arg", "SELECT coalesce((SELECT value FROM secrets), 'x') AS v", DENIED)
refused("secrets-window", "SELECT id, (SELECT max(id) FROM secrets) OVER () FROM orders")
refused("audit-log", "SELECT * FROM audit_log", DENIED)
refused("both-unlisted", "SELECT * FROM secrets, audit_log", "`secrets`, `audit_log`")
refused("unknown-table", "SELECT * FROM does_not_exist", DENIED)
refused("secrets-line-comment-disguise", "SELECT * FROM secrets -- orders", DENIED)
refused("secrets-block-comment-disguise", "SELECT * FROM /* orders */ secrets", DENIED)
ok("comment-hides-secrets", "SELECT id FROM orders /*, secrets */ ORDER BY id", [(1,), (2,)])
ok("line-comment-hides-union", "SELECT id FROM orders ORDER BY id -- UNION SELECT id FROM secrets", [(1,), (2,)])
refused("private-schema", "SELECT * FROM private.orders", DENIED)
refused("private-schema-quoted", 'SELECT * FROM "private"."orders"', DENIED)
refused("upper-quoted-table", 'SELECT * FROM "ORDERS"', DENIED, only="postgresql")
ok("upper-quoted-table-sqlite", 'SELECT id FROM "ORDERS" ORDER BY id', [(1,), (2,)], only="sqlite")
refused("cross-database", "SELECT * FROM otherdb.public.secrets", "Cross-database")
refused("quoted-dotted-name", 'SELECT * FROM "public.secrets"')
refused("temp-schema", "SELECT * FROM temp.orders", DENIED)
refused("cte-self-ref-not-recursive", "WITH orders AS (SELECT * FROM orders) SELECT * FROM orders", "ambiguous")
refused("cte-forward-ref", "WITH a AS (SELECT * FROM b), b AS (SELECT 1 AS n) SELECT * FROM a", "ambiguous")
refused("cte-secrets-forward", "WITH a AS (SELECT * FROM secrets), secrets AS (SELECT 1) SELECT * FROM a")
refused("long-identifier", "SELECT * FROM secrets" + "x" * 70, DENIED)

# --- system catalogs --------------------------------------------------------------------------------------
refused("sqlite-master", "SELECT * FROM sqlite_master", DENIED)
refused("sqlite-schema", "SELECT name, sql FROM sqlite_schema", DENIED)
refused("sqlite-temp-master", "SELECT * FROM sqlite_temp_master", DENIED)
refused("main-sqlite-master", "SELECT * FROM main.sqlite_master", DENIED)
refused("sqlite-master-in-subquery", "SELECT id FROM orders WHERE note IN (SELECT sql FROM sqlite_master)", DENIED)
refused("sqlite-sequence", "SELECT * FROM sqlite_sequence", DENIED)
refused("sqlite-dbpage", "SELECT * FROM sqlite_dbpage", DENIED)
refused("dbstat", "SELECT * FROM dbstat", DENIED)
refused("pragma-function-table", "SELECT * FROM pragma_table_info('secrets')", TABLE_FN)
refused("pragma-eponymous", "SELECT * FROM pragma_database_list", DENIED)
refused("pg-tables", "SELECT * FROM pg_tables", DENIED)
refused("pg-catalog-tables", "SELECT * FROM pg_catalog.pg_tables", DENIED)
refused("pg-catalog-upper", "SELECT * FROM PG_CATALOG.PG_TABLES", DENIED)
refused("pg-user", "SELECT usename, passwd FROM pg_user", DENIED)
refused("pg-shadow", "SELECT * FROM pg_shadow", DENIED)
refused("pg-authid", "SELECT * FROM pg_authid", DENIED)
refused("pg-settings", "SELECT name, setting FROM pg_settings", DENIED)
refused("pg-stat-activity", "SELECT query FROM pg_stat_activity", DENIED)
refused("pg-class", "SELECT relname FROM pg_class", DENIED)
refused("pg-roles-quoted", 'SELECT * FROM "pg_catalog"."pg_roles"', DENIED)
refused("pg-proc-subquery", "SELECT * FROM orders WHERE id IN (SELECT oid FROM pg_proc)", DENIED)
refused("information-schema-tables", "SELECT table_name FROM information_schema.tables", DENIED)
refused("information-schema-columns", "SELECT * FROM information_schema.columns", DENIED)
refused("information-schema-union", "SELECT note FROM orders UNION SELECT table_name FROM information_schema.tables")
refused("pg-toast", "SELECT * FROM pg_toast.pg_toast_2619", DENIED)

# --- dangerous functions and table functions -----------------------------------------------------------------
refused("pg-sleep", "SELECT pg_sleep(5)", FUNC)
refused("pg-sleep-upper", "SELECT PG_SLEEP(5)", FUNC)
refused("pg-sleep-quoted", 'SELECT "pg_sleep"(5)', FUNC)
refused("pg-sleep-qualified", "SELECT pg_catalog.pg_sleep(5)")
refused("pg-sleep-comment", "SELECT pg_sleep /* x */ (5)", FUNC)
refused("pg-sleep-in-where", "SELECT * FROM orders WHERE pg_sleep(1) IS NULL", FUNC)
refused("pg-sleep-in-subquery", "SELECT (SELECT pg_sleep(1)) AS x", FUNC)
refused("pg-sleep-in-cte", "WITH s AS (SELECT pg_sleep(1) AS z) SELECT * FROM s", FUNC)
refused("pg-sleep-order-by", "SELECT id FROM orders ORDER BY pg_sleep(1)", FUNC)
refused("pg-sleep-for", "SELECT pg_sleep_for('5 seconds')", FUNC)
refused("pg-read-file", "SELECT pg_read_file('/etc/passwd')", FUNC)
refused("pg-read-binary-file", "SELECT pg_read_binary_file('/etc/passwd')", FUNC)
refused("pg-ls-dir", "SELECT pg_ls_dir('.')", FUNC)
refused("pg-stat-file", "SELECT pg_stat_file('postgresql.conf')", FUNC)
refused("lo-import", "SELECT lo_import('/etc/passwd')", FUNC)
refused("lo-export", "SELECT lo_export(1, '/tmp/agora_x')", FUNC)
refused("lo-get", "SELECT lo_get(1)", FUNC)
refused("lo-from-bytea", "SELECT lo_from_bytea(0, 'x')", FUNC)
refused("loread", "SELECT loread(0, 10)", FUNC)
refused("dblink", "SELECT dblink('dbname=test', 'select 1')", FUNC)
refused("dblink-exec", "SELECT dblink_exec('dbname=test', 'delete from orders')", FUNC)
refused("dblink-table", "SELECT * FROM dblink('dbname=test', 'select value from secrets') AS t(v text)")
refused("set-config", "SELECT set_config('search_path', 'private', false)", FUNC)
refused("current-setting", "SELECT current_setting('data_directory')", FUNC)
refused("pg-terminate-backend", "SELECT pg_terminate_backend(1)", FUNC)
refused("pg-cancel-backend", "SELECT pg_cancel_backend(1)", FUNC)
refused("pg-advisory-lock", "SELECT pg_advisory_lock(1)", FUNC)
refused("pg-notify", "SELECT pg_notify('x', 'y')", FUNC)
refused("pg-reload-conf", "SELECT pg_reload_conf()", FUNC)
refused("nextval", "SELECT nextval('orders_id_seq')", FUNC)
refused("setval", "SELECT setval('orders_id_seq', 1)", FUNC)
refused("txid-current", "SELECT txid_current()", FUNC)
refused("query-to-xml", "SELECT query_to_xml('select * from secrets', true, false, '')", FUNC)
refused("table-to-xml", "SELECT table_to_xml('secrets', true, false, '')", FUNC)
refused("database-to-xml", "SELECT database_to_xml(true, false, '')", FUNC)
refused("ts-stat", "SELECT ts_stat('select to_tsvector(value) from secrets')", FUNC)
refused("xmlparse", "SELECT xmlparse(document '<!DOCTYPE x SYSTEM \"file:///etc/passwd\"><x/>')")
refused("load-extension", "SELECT load_extension('/tmp/evil')", FUNC)
refused("readfile", "SELECT readfile('/etc/passwd')", FUNC)
refused("writefile", "SELECT writefile('/tmp/agora_x', 'pwned')", FUNC)
refused("randomblob", "SELECT randomblob(1000000000)", FUNC)
refused("zeroblob", "SELECT zeroblob(1000000000)", FUNC)
refused("fts3-tokenizer", "SELECT fts3_tokenizer('simple')", FUNC)
refused("sleep", "SELECT sleep(5)", FUNC)
refused("user-function-qualified", "SELECT public.my_func()")
refused("generate-series-from", "SELECT * FROM generate_series(1, 10)", TABLE_FN)
refused("json-each-from", "SELECT * FROM json_each('[1, 2]')", TABLE_FN)
refused("unnest-from", "SELECT * FROM unnest(ARRAY[1, 2]) AS u(x)", TABLE_FN, only="postgresql")
refused("rows-from", "SELECT * FROM ROWS FROM (generate_series(1, 3))", only="postgresql")
refused("lateral-function", "SELECT * FROM orders o, LATERAL generate_series(1, o.id) g", only="postgresql")
refused("xmltable-from", "SELECT * FROM XMLTABLE('/a' PASSING '<a/>' COLUMNS x INT)", only="postgresql")

# --- query parameters -----------------------------------------------------------------------------------------
refused("param-qmark", "SELECT * FROM orders WHERE id = ?", PARAMS)
refused("param-dollar", "SELECT * FROM orders WHERE id = $1", PARAMS, only="postgresql")
refused("param-named", "SELECT * FROM orders WHERE id = :id", PARAMS)
refused("param-dollar-name", "SELECT * FROM orders WHERE note = $$x$$", only="sqlite")

# --- tenant bypass attempts ---------------------------------------------------------------------------------------
ok("tenant-plain", "SELECT id, tenant_id FROM orders ORDER BY id", [(1, "A"), (2, "A")])
ok("tenant-or-true", "SELECT id FROM orders WHERE 1 = 1 OR 1 = 1 ORDER BY id", [(1,), (2,)])
ok("tenant-own-or-true", "SELECT id FROM orders WHERE tenant_id = 'A' OR 1 = 1 ORDER BY id", [(1,), (2,)])
ok("tenant-own-literal", "SELECT id FROM orders WHERE tenant_id = 'A' ORDER BY id", [(1,), (2,)])
refused("tenant-other-literal", "SELECT * FROM orders WHERE tenant_id = 'B'", MISMATCH)
refused("tenant-or-other", "SELECT * FROM orders WHERE tenant_id = 'A' OR tenant_id = 'B'", MISMATCH)
refused("tenant-in-list", "SELECT * FROM orders WHERE tenant_id IN ('A', 'B')", MISMATCH)
refused("tenant-reversed", "SELECT * FROM orders WHERE 'B' = tenant_id", MISMATCH)
refused("tenant-qualified", "SELECT * FROM orders o WHERE o.tenant_id = 'B'", MISMATCH)
refused("tenant-quoted-column", 'SELECT * FROM "orders" WHERE "tenant_id" = \'B\'', MISMATCH)
refused("tenant-case-expr", "SELECT CASE WHEN tenant_id = 'B' THEN 1 END AS x FROM orders", MISMATCH)
refused(
    "tenant-in-subquery", "SELECT * FROM customers WHERE id IN (SELECT customer_id FROM orders WHERE tenant_id = 'B')"
)
refused("tenant-in-cte", "WITH b AS (SELECT * FROM orders WHERE tenant_id = 'B') SELECT * FROM b", MISMATCH)
refused("tenant-in-union", "SELECT id FROM orders UNION SELECT id FROM customers WHERE tenant_id = 'B'", MISMATCH)
refused("tenant-derived-outer", "SELECT * FROM (SELECT * FROM orders) AS o WHERE tenant_id = 'B'", MISMATCH)
refused("tenant-cast-literal", "SELECT * FROM orders WHERE tenant_id = CAST('B' AS TEXT)", MISMATCH)
refused("tenant-is-not-distinct", "SELECT * FROM orders WHERE tenant_id IS NOT DISTINCT FROM 'B'", only="postgresql")
refused("tenant-is", "SELECT * FROM orders WHERE tenant_id IS 'B'", MISMATCH, only="sqlite")
refused("tenant-join-on-literal", "SELECT * FROM customers c JOIN orders o ON o.tenant_id = 'B'", MISMATCH)
ok("tenant-not-own", "SELECT id FROM orders WHERE NOT (tenant_id = 'A')", [])
ok("tenant-not-equal", "SELECT id FROM orders WHERE tenant_id <> 'A'", [])
ok("tenant-bang-equal", "SELECT id FROM orders WHERE tenant_id != 'A'", [])
ok("tenant-like-other", "SELECT id FROM orders WHERE tenant_id LIKE 'B%'", [])
ok("tenant-greater", "SELECT id FROM orders WHERE tenant_id > 'A'", [])
ok("tenant-upper-fn", "SELECT id FROM orders WHERE upper(tenant_id) = 'B'", [])
ok("tenant-concat", "SELECT id FROM orders WHERE tenant_id = 'B' || ''", [])
ok("tenant-lower-fn", "SELECT id FROM orders WHERE tenant_id = lower('B')", [])
ok("tenant-is-null", "SELECT id FROM orders WHERE tenant_id IS NULL", [])
ok("tenant-eq-null-or", "SELECT id FROM orders WHERE tenant_id = NULL OR 1 = 1 ORDER BY id", [(1,), (2,)])
ok("tenant-other-ids", "SELECT id FROM orders WHERE id IN (3, 4)", [])
ok("tenant-scalar-other-row", "SELECT (SELECT note FROM orders WHERE id = 3) AS n", [(None,)])
ok(
    "tenant-union-complement",
    "SELECT id FROM orders WHERE tenant_id = 'A' UNION SELECT id FROM orders WHERE tenant_id <> 'A' ORDER BY 1",
    [(1,), (2,)],
)
ok("tenant-self-join-mismatch", "SELECT o1.id FROM orders o1 JOIN orders o2 ON o1.tenant_id <> o2.tenant_id", [])
ok("tenant-self-join-cross", "SELECT count(*) AS n FROM orders o1, orders o2", [(4,)])
ok("tenant-self-join-ids", "SELECT o1.id AS a, o2.id AS b FROM orders o1 JOIN orders o2 ON o2.id = o1.id + 2", [])
ok("tenant-in-complement", "SELECT id FROM orders o WHERE o.id IN (SELECT id FROM orders WHERE tenant_id <> 'A')", [])
ok(
    "tenant-correlated-exists",
    "SELECT c.id FROM customers c WHERE EXISTS (SELECT 1 FROM orders o WHERE o.customer_id = c.id) ORDER BY c.id",
    [(1,), (2,)],
)
ok(
    "tenant-correlated-scalar",
    "SELECT c.name, (SELECT sum(amount) FROM orders o WHERE o.customer_id = c.id) AS total "
    "FROM customers c ORDER BY c.id",
    [("Alice", 5), ("Anna", 15)],
)
ok("tenant-cte", "WITH all_orders AS (SELECT * FROM orders) SELECT count(*) AS n FROM all_orders", [(2,)])
ok(
    "tenant-recursive-cte",
    "WITH RECURSIVE r(id) AS (SELECT id FROM orders UNION SELECT o.id FROM orders o JOIN r ON o.id = r.id + 1) "
    "SELECT id FROM r ORDER BY id",
    [(1,), (2,)],
)
ok("tenant-alias-products-as-orders", "SELECT count(*) AS n FROM products AS orders", [(3,)])
ok("tenant-alias-orders-as-products", "SELECT count(*) AS n FROM orders AS products", [(2,)])
ok(
    "tenant-alias-swap",
    "SELECT count(*) AS n FROM customers AS orders JOIN orders AS customers ON customers.customer_id = orders.id",
    [(2,)],
)
ok("tenant-derived-where", "SELECT count(*) AS n FROM (SELECT * FROM orders WHERE 1 = 1) t", [(2,)])
ok("tenant-join-mismatch", "SELECT o.id FROM orders o JOIN customers c ON c.tenant_id <> o.tenant_id", [])
ok(
    "tenant-join-reintroduce",
    "SELECT DISTINCT o2.id FROM orders o JOIN orders o2 ON o2.customer_id <> o.customer_id ORDER BY 1",
    [(1,), (2,)],
)
ok("tenant-group-by", "SELECT tenant_id, count(*) AS n FROM orders GROUP BY tenant_id", [("A", 2)])
ok("tenant-order-desc", "SELECT tenant_id FROM orders ORDER BY tenant_id DESC LIMIT 1", [("A",)])
ok("tenant-max-note", "SELECT max(note) AS m FROM orders", [("200",)])
ok("tenant-sum-all", "SELECT sum(amount) AS total FROM orders", [(20,)])
ok("tenant-upper-table", "SELECT count(*) AS n FROM ORDERS", [(2,)])
ok("tenant-public-schema", "SELECT count(*) AS n FROM public.orders", [(2,)], only="postgresql")
ok("tenant-main-schema", "SELECT count(*) AS n FROM main.orders", [(2,)], only="sqlite")
ok("tenant-quoted-table", 'SELECT count(*) AS n FROM "orders"', [(2,)])
ok(
    "tenant-customers-orders",
    "SELECT c.name, o.id FROM customers c JOIN orders o ON o.customer_id = c.id ORDER BY o.id",
    [("Alice", 1), ("Anna", 2)],
)
ok("tenant-customer-bob", "SELECT id FROM customers WHERE name LIKE '%Bob%'", [])
ok("tenant-tuple-in-values", "SELECT id FROM orders WHERE (id, customer_id) IN (VALUES (3, 3), (4, 3))", [])
ok("tenant-exists-other", "SELECT 1 AS x WHERE EXISTS (SELECT 1 FROM orders WHERE amount > 500)", [])
ok("tenant-count-distinct", "SELECT count(DISTINCT tenant_id) AS n FROM orders", [(1,)])
ok("tenant-window", "SELECT id, count(*) OVER () AS n FROM orders ORDER BY id", [(1, 2), (2, 2)])
ok("tenant-not-exists", "SELECT count(*) AS n FROM customers c WHERE NOT EXISTS (SELECT 1 FROM orders)", [(0,)])
ok(
    "tenant-nested-cte",
    "WITH a AS (WITH b AS (SELECT * FROM orders) SELECT * FROM b) SELECT count(*) AS n FROM a",
    [(2,)],
)
ok(
    "tenant-intersect-self",
    "SELECT id FROM orders INTERSECT SELECT id FROM orders WHERE amount > 100",
    [],
)
ok("tenant-except-self", "SELECT id FROM orders EXCEPT SELECT id FROM orders", [])
# Error oracles: the caller's predicate would fail on another tenant's row if it were evaluated there.
ok(
    "oracle-cast",
    "SELECT id FROM orders WHERE CAST(note AS INTEGER) > 0 ORDER BY id",
    [(1,), (2,)],
)
ok(
    "oracle-division",
    "SELECT id FROM orders WHERE 1 / (CASE WHEN note LIKE 'TENANT%' THEN 0 ELSE 1 END) = 1 ORDER BY id",
    [(1,), (2,)],
)
ok(
    "oracle-join-cast",
    "SELECT c.id FROM customers c JOIN orders o ON o.customer_id = c.id AND CAST(o.note AS INTEGER) > 0 ORDER BY c.id",
    [(1,), (2,)],
)
ok(
    "oracle-json",
    "SELECT id FROM orders WHERE json(CASE WHEN note LIKE 'TENANT%' THEN 'x' ELSE '1' END) IS NOT NULL ORDER BY id",
    [(1,), (2,)],
    only="sqlite",
)
ok(
    "oracle-json-cast",
    "SELECT id FROM orders WHERE CAST(CASE WHEN note LIKE 'TENANT%' THEN 'x' ELSE '1' END AS JSON) IS NOT NULL "
    "ORDER BY id",
    [(1,), (2,)],
    only="postgresql",
)
ok(
    "oracle-cast-customers",
    "SELECT count(*) AS n FROM customers "
    "WHERE CAST(CASE WHEN name LIKE 'TENANT%' THEN 'x' ELSE '1' END AS INTEGER) = 1",
    [(2,)],
    only="postgresql",
)

# --- comments, case, whitespace, unicode and quoting tricks ----------------------------------------------------
ok("comment-then-drop", "SELECT id FROM orders WHERE note = '100' -- ; DROP TABLE orders", [(1,)])
ok("block-comment-delete", "SELECT id FROM orders /* ; DELETE FROM orders */ ORDER BY id", [(1,), (2,)])
ok("mysql-comment", "SELECT id FROM orders WHERE id = 1 /*! UNION SELECT id FROM secrets */", [(1,)])
safe("nested-comment", "/* /* */ SELECT * FROM secrets */ SELECT 1 AS x")
safe("escape-string-union", "SELECT note FROM orders WHERE note = E'\\\\' UNION SELECT value FROM secrets --'")
safe("backslash-quote-union", "SELECT note FROM orders WHERE note = '\\' UNION SELECT value FROM secrets -- '")
ok("string-with-semicolon", "SELECT 'a;DELETE FROM orders' AS s", [("a;DELETE FROM orders",)])
ok("chr-59", "SELECT 'a' || 'DELETE FROM orders' AS s", [("aDELETE FROM orders",)])
safe("dollar-quoted", "SELECT $$ ; DELETE FROM orders $$ AS s")
safe("nbsp", "SELECT\u00a0*\u00a0FROM\u00a0secrets")
safe("zero-width-table", 'SELECT * FROM "secrets\u200b"')
refused("fullwidth-table", "SELECT * FROM ｓｅｃｒｅｔｓ", DENIED)
refused("cyrillic-s", "SELECT * FROM ѕecrets", DENIED)
refused("kelvin-sign", 'SELECT * FROM "\u212aey"', DENIED)
refused("homoglyph-orders", "SELECT * FROM оrders", DENIED)
safe("unicode-escape-ident", 'SELECT * FROM U&"\\0073ecrets"')
safe("nul-byte", "SELECT 1 AS x\x00; DELETE FROM orders")
safe("weird-quoted", 'SELECT * FROM "orders"""')
ok("crlf-whitespace", "SELECT\r\nid\r\nFROM\r\norders\r\nORDER BY id", [(1,), (2,)])
ok("tabs-whitespace", "SELECT\tid\tFROM\torders\tORDER\tBY\tid", [(1,), (2,)])
ok("mixed-case-keywords", "sElEcT iD fRoM oRdErS oRdEr By Id", [(1,), (2,)])
ok("escaped-quote", "SELECT 'it''s' AS s", [("it's",)])
ok("leading-comment", "/* lead */ SELECT id FROM orders ORDER BY id", [(1,), (2,)])
ok("paren-statement", "(SELECT id FROM orders ORDER BY id)", [(1,), (2,)])
refused("identifier-with-dollar", "SELECT * FROM orders WHERE note = $$x$$ OR $a$ = 1", only="sqlite")
safe("huge-nesting", "SELECT " + "(" * 300 + "1" + ")" * 300 + " AS x")
refused("too-long", "SELECT 1 AS x" + " " * 100_001)

# --- VALUES tricks ---------------------------------------------------------------------------------------------------
safe("values-fake-tenant", "SELECT * FROM (VALUES ('B', 'x')) AS v(tenant_id, note)")
ok("values-named-like-table", "SELECT count(*) AS n FROM (VALUES (1), (2)) AS orders", [(2,)])
refused("values-union-secrets", "SELECT * FROM (VALUES (1)) v UNION SELECT id FROM secrets", DENIED)
ok("values-join-orders", "SELECT o.id FROM orders o JOIN (VALUES (1), (3)) AS v(x) ON v.x = o.id", [(1,)], "postgresql")

# --- timeouts (the database stops the query) --------------------------------------------------------------------
timeout(
    "timeout-recursive-count",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 1000000000) SELECT count(*) FROM c",
)
timeout(
    "timeout-cross-join",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 3000) SELECT count(*) FROM c a, c b, c d",
)
timeout(
    "timeout-unbounded-recursion",
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c) SELECT max(x) FROM c",
)
timeout(
    "timeout-generate-series-select-list",
    "SELECT sum(x) AS s FROM (SELECT generate_series(1, 1000000000) AS x) g",
    only="postgresql",
)

# --- positive cases: the tool must be useful -------------------------------------------------------------------------
ok("pos-select-one", "SELECT 1 AS one", [(1,)])
ok("pos-upper", "SELECT upper('abc') AS u", [("ABC",)])
ok("pos-coalesce", "SELECT coalesce(NULL, 1) AS x", [(1,)])
ok("pos-orders", "SELECT id, amount FROM orders ORDER BY id", [(1, 5), (2, 15)])
ok("pos-count", "SELECT count(*) AS n FROM orders", [(2,)])
ok("pos-products", "SELECT id, name FROM products ORDER BY id", [(1, "Widget"), (2, "Gadget"), (3, "Gizmo")])
ok("pos-prefix-pattern", "SELECT day, total FROM report_daily", [("2024-01-01", 20)])
ok(
    "pos-left-join-group",
    "SELECT c.name, count(o.id) AS n FROM customers c LEFT JOIN orders o ON o.customer_id = c.id "
    "GROUP BY c.name ORDER BY c.name",
    [("Alice", 1), ("Anna", 1)],
)
ok(
    "pos-join-products",
    "SELECT p.name FROM products p JOIN orders o ON o.id = p.id ORDER BY p.id",
    [("Widget",), ("Gadget",)],
)
ok("pos-cte-filter", "WITH big AS (SELECT * FROM orders WHERE amount > 5) SELECT count(*) AS n FROM big", [(1,)])
ok(
    "pos-recursive-numbers",
    "WITH RECURSIVE n(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM n WHERE x < 5) SELECT x FROM n",
    [(1,), (2,), (3,), (4,), (5,)],
)
ok("pos-order-limit", "SELECT id FROM orders ORDER BY id DESC LIMIT 1", [(2,)])
ok("pos-limit-offset", "SELECT id FROM orders ORDER BY id LIMIT 1 OFFSET 1", [(2,)])
ok("pos-union-products", "SELECT id FROM orders UNION SELECT id FROM products ORDER BY 1", [(1,), (2,), (3,)])
ok("pos-intersect", "SELECT id FROM orders INTERSECT SELECT id FROM products ORDER BY 1", [(1,), (2,)])
ok("pos-except", "SELECT id FROM products EXCEPT SELECT id FROM orders", [(3,)])
ok("pos-distinct", "SELECT DISTINCT customer_id FROM orders ORDER BY 1", [(1,), (2,)])
ok(
    "pos-having",
    "SELECT customer_id, sum(amount) AS s FROM orders GROUP BY customer_id HAVING sum(amount) > 10",
    [(2, 15)],
)
ok("pos-between", "SELECT id FROM orders WHERE id BETWEEN 1 AND 10 ORDER BY id", [(1,), (2,)])
ok("pos-like", "SELECT id FROM orders WHERE note LIKE '1%'", [(1,)])
ok(
    "pos-case",
    "SELECT CASE WHEN amount > 10 THEN 'big' ELSE 'small' END AS size FROM orders ORDER BY id",
    [("small",), ("big",)],
)
ok("pos-window-running", "SELECT id, sum(amount) OVER (ORDER BY id) AS running FROM orders", [(1, 5), (2, 20)])
ok(
    "pos-in-subquery",
    "SELECT id FROM orders WHERE customer_id IN (SELECT id FROM customers WHERE name LIKE 'A%') ORDER BY id",
    [(1,), (2,)],
)
ok("pos-avg", "SELECT avg(price) AS a FROM products", [(20,)])
ok("pos-min-max", "SELECT min(amount) AS lo, max(amount) AS hi FROM orders", [(5, 15)])
ok("pos-arith", "SELECT 2 * 21 AS answer", [(42,)])
ok("pos-limit-capped", "SELECT id FROM products LIMIT 1000", [(1,), (2,), (3,)])
ok(
    "pos-cte-join",
    "WITH c AS (SELECT id, name FROM customers) SELECT c.name FROM c ORDER BY c.name",
    [("Alice",), ("Anna",)],
)
ok("pos-subquery-alias", "SELECT t.n FROM (SELECT count(*) AS n FROM customers) AS t", [(2,)])
ok("pos-fetch-first", "SELECT id FROM orders ORDER BY id FETCH FIRST 1 ROWS ONLY", [(1,)], only="postgresql")
ok("pos-string-concat", "SELECT name || '!' AS s FROM customers ORDER BY id", [("Alice!",), ("Anna!",)])
ok("pos-is-not-null", "SELECT count(*) AS n FROM orders WHERE note IS NOT NULL", [(2,)])
ok("pos-cast", "SELECT CAST(amount AS TEXT) AS t FROM orders ORDER BY id", [("5",), ("15",)])
ok(
    "pos-lateral-subquery",
    "SELECT o.id, x.n FROM orders o, LATERAL (SELECT o.amount * 2 AS n) x ORDER BY o.id",
    [(1, 10), (2, 30)],
    only="postgresql",
)


# --- more quoting and scoping edge cases ------------------------------------------------------------------------------
refused("backtick-secrets", "SELECT * FROM `secrets`", DENIED, only="sqlite")
refused("bracket-secrets", "SELECT * FROM [secrets]", DENIED, only="sqlite")
ok("bracket-column", "SELECT [note] FROM orders ORDER BY id", [("100",), ("200",)], only="sqlite")
refused("values-scalar-subquery-secrets", "SELECT * FROM (VALUES ((SELECT value FROM secrets))) v", DENIED)
ok("user-alias-scoped-name", "SELECT _scoped.id FROM orders AS _scoped ORDER BY 1", [(1,), (2,)])
ok("user-alias-scoped-other", "SELECT count(*) AS n FROM orders, products _scoped", [(6,)])
ok(
    "recursive-cte-named-like-table",
    "WITH RECURSIVE orders(id) AS (SELECT 1 UNION ALL SELECT id + 1 FROM orders WHERE id < 3) SELECT id FROM orders",
    [(1,), (2,), (3,)],
)
ok("cte-alias-as-table-name", "WITH x AS (SELECT * FROM orders) SELECT id FROM x AS orders WHERE tenant_id <> 'A'", [])
ok(
    "scoped-in-values-subquery",
    "SELECT * FROM (VALUES ((SELECT max(note) FROM orders))) AS v",
    [("200",)],
    only="sqlite",
)
ok("scoped-in-order-by", "SELECT name FROM products ORDER BY (SELECT count(*) FROM orders), id LIMIT 1", [("Widget",)])
ok("scoped-in-having", "SELECT 1 AS x HAVING (SELECT count(*) FROM orders) = 2", [(1,)], only="postgresql")
ok(
    "scoped-in-case",
    "SELECT CASE WHEN (SELECT max(amount) FROM orders) > 500 THEN 'leak' ELSE 'ok' END AS v",
    [("ok",)],
)
# A LIMIT that is not a plain literal is replaced by max_rows (documented), taking its subquery with it.
ok("scoped-in-limit", "SELECT id FROM products ORDER BY id LIMIT (SELECT count(*) FROM orders)", [(1,), (2,), (3,)])
ok(
    "scoped-union-all-three",
    "SELECT note FROM orders UNION ALL SELECT name FROM customers UNION ALL SELECT name FROM products ORDER BY 1",
    [("100",), ("200",), ("Alice",), ("Anna",), ("Gadget",), ("Gizmo",), ("Widget",)],
)


def for_dialect(dialect: str) -> list[Case]:
    """The cases that run on `dialect`."""
    return [c for c in CASES if c.only in (None, dialect)]
