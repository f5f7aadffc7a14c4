"""`SqlValidator`: parse one statement with sqlglot and refuse everything that is not a plain read.

Checks, in order: the text parses; exactly one statement; the statement is a SELECT (or a set operation of
SELECTs); no write, DDL, session or utility statement anywhere in the tree (CTE bodies included); no
SELECT INTO, no locking clause, no query parameters, no table functions in FROM, no schema-qualified or
dangerous functions (deny-list below), no identifier the databases could tokenize differently.

What runs is later regenerated from the validated tree, never the caller's text, so comments and
tokenizer tricks cannot smuggle a second meaning past these checks.
"""

from __future__ import annotations

import re

import sqlglot
from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ParseError, TokenError

from agora_agent.tools.sql.errors import SqlValidationError
from agora_agent.tools.sql.names import Dialect as DialectName
from agora_agent.tools.sql.names import sqlglot_dialect

__all__ = ["DENIED_FUNCTIONS", "DENIED_FUNCTION_PREFIXES", "MAX_SQL_LENGTH", "SqlValidator"]

MAX_SQL_LENGTH = 100_000

# Functions that reach outside the query (files, large objects, other servers, sessions, settings,
# sequences, arbitrary SQL given as a string) or exist to stall or exhaust the server.
DENIED_FUNCTIONS = frozenset(
    {
        "set_config", "current_setting", "nextval", "setval", "currval", "lastval",
        "ts_stat", "ts_rewrite", "loread", "lowrite", "txid_current", "xmlparse",
        "load_extension", "readfile", "writefile", "edit", "fts3_tokenizer", "randomblob", "zeroblob",
        "sleep", "benchmark", "copy",
    }
)  # fmt: skip
DENIED_FUNCTION_PREFIXES = (
    "pg_",
    "lo_",
    "dblink",
    "query_to_xml",
    "cursor_to_xml",
    "table_to_xml",
    "schema_to_xml",
    "database_to_xml",
    "binary_upgrade_",
    "brin_",
    "gin_",
)

_DDL = "DDL"
_STATEMENTS: list[tuple[str, str]] = [
    ("Insert", "INSERT"),
    ("Update", "UPDATE"),
    ("Delete", "DELETE"),
    ("Merge", "MERGE"),
    ("Copy", "COPY"),
    ("Create", _DDL),
    ("Drop", _DDL),
    ("Alter", _DDL),
    ("AlterColumn", _DDL),
    ("TruncateTable", _DDL),
    ("RenameTable", _DDL),
    ("Comment", _DDL),
    ("Pragma", "PRAGMA"),
    ("Attach", "ATTACH"),
    ("Detach", "DETACH"),
    ("Set", "SET"),
    ("Transaction", "BEGIN"),
    ("Commit", "COMMIT"),
    ("Rollback", "ROLLBACK"),
    ("Use", "USE"),
    ("Grant", "GRANT"),
    ("Revoke", "REVOKE"),
    ("Describe", "DESCRIBE"),
    ("Analyze", "ANALYZE"),
    ("LoadData", "LOAD DATA"),
    ("Kill", "KILL"),
    ("Cache", "CACHE"),
    ("Uncache", "UNCACHE"),
    ("Refresh", "REFRESH"),
    ("Declare", "DECLARE"),
    ("Execute", "EXECUTE"),
    ("Show", "SHOW"),
]
_STATEMENT_TYPES: tuple[tuple[type[exp.Expr], str], ...] = tuple(
    (cls, label) for name, label in _STATEMENTS if isinstance(cls := getattr(exp, name, None), type)
)
_PARAMETER_TYPES = (exp.Placeholder, exp.Parameter, exp.SessionParameter)
_IDENTIFIER = re.compile(r"[^\W\d]\w*")
_ASCII_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_VAR = re.compile(r"[A-Za-z_][A-Za-z0-9_ ]*")
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def _statement_label(node: exp.Expr) -> str | None:
    if isinstance(node, exp.Command):
        return str(node.this).upper() or "COMMAND"
    for cls, label in _STATEMENT_TYPES:
        if isinstance(node, cls):
            return label
    return None


def _refuse_statement(label: str, hidden: bool) -> SqlValidationError:
    where = " (found inside the query)" if hidden else ""
    if label == _DDL:
        return SqlValidationError(f"DDL is not allowed{where}; only SELECT statements are accepted.")
    return SqlValidationError(f"{label} is not allowed{where}; only SELECT statements are accepted.")


def _function_names(node: exp.Func) -> set[str]:
    if isinstance(node, exp.Anonymous):
        this = node.this
        return {(this.this if isinstance(this, exp.Identifier) else str(this)).lower()}
    return {name.lower() for name in type(node).sql_names()} | {node.key.lower()}


def _is_denied(name: str) -> bool:
    return name in DENIED_FUNCTIONS or name.startswith(DENIED_FUNCTION_PREFIXES)


class SqlValidator:
    """Parses and checks one SELECT statement for a dialect ("sqlite" or "postgresql").

    `validate(sql)` returns the sqlglot tree of the statement or raises `SqlValidationError` whose message
    says what to change. It does not look at table names: `TableAccessPolicy` does that.
    """

    def __init__(self, dialect: DialectName, *, max_length: int = MAX_SQL_LENGTH) -> None:
        self.dialect: DialectName = dialect
        self.max_length = max_length
        self._read = sqlglot_dialect(dialect)

    def parse(self, sql: str) -> exp.Expr:
        """The single statement in `sql`, or `SqlValidationError` (parse error, none, or several)."""
        if len(sql) > self.max_length:
            raise SqlValidationError(f"The query is {len(sql)} characters long; the limit is {self.max_length}.")
        try:
            statements = sqlglot.parse(sql, read=self._read)
        except (ParseError, TokenError) as err:
            raise SqlValidationError(f"Parse error: {_parse_message(err)}. Send one valid SELECT statement.") from None
        except RecursionError:
            raise SqlValidationError("Parse error: the query is nested too deeply; simplify it.") from None
        found = [s for s in statements if s is not None and not isinstance(s, exp.Semicolon)]
        if not found:
            raise SqlValidationError("The query is empty; send one SELECT statement.")
        if len(found) != 1:
            raise SqlValidationError("Only a single statement is allowed; send one SELECT without `;` separators.")
        return found[0]

    def validate(self, sql: str) -> exp.Query:
        """Parse and check `sql`; the returned tree is a `Select` or a set operation of selects."""
        root = self.parse(sql)
        if isinstance(root, exp.Subquery) and root.args.get("alias") is None:
            root = root.unnest()
        label = _statement_label(root)
        if label is not None:
            raise _refuse_statement(label, hidden=False)
        if not isinstance(root, (exp.Select, exp.SetOperation)):
            kind = "VALUES" if isinstance(root, exp.Values) else _first_keyword(sql, self._read)
            raise SqlValidationError(f'Statement type "{kind}" is not allowed; only SELECT statements are accepted.')
        for node in root.walk():
            self._check_node(node)
        return root

    def _check_node(self, node: exp.Expr) -> None:
        label = _statement_label(node)
        if label is not None:
            raise _refuse_statement(label, hidden=True)
        if isinstance(node, exp.Into):
            raise SqlValidationError("SELECT INTO is not allowed: it creates a table. Remove the INTO clause.")
        if isinstance(node, exp.Lock):
            raise SqlValidationError(
                "Locking clauses (FOR UPDATE / FOR SHARE) are not allowed; this tool only reads. Remove the clause."
            )
        if isinstance(node, _PARAMETER_TYPES):
            raise SqlValidationError(
                f"Query parameters such as `{node.sql(self._read)}` are not supported; write the literal value instead."
            )
        if isinstance(node, exp.CTE) and not isinstance(node.this, (exp.Select, exp.SetOperation)):
            hidden = _statement_label(node.this)
            if hidden is not None:
                raise _refuse_statement(hidden, hidden=True)
            raise SqlValidationError("A CTE body must be a SELECT; writes and other statements are not allowed.")
        if isinstance(node, (exp.From, exp.Join)):
            self._check_source(node.this)
        if isinstance(node, exp.Select) and node.args.get("laterals"):
            raise SqlValidationError("LATERAL VIEW is not allowed; use a join or a subquery.")
        if isinstance(node, exp.Func):
            self._check_function(node)
        if isinstance(node, exp.Dot) and isinstance(node.expression, exp.Func):
            raise SqlValidationError(
                f"Schema-qualified function calls such as `{node.sql()}` are not allowed; call built-in functions."
            )
        if isinstance(node, exp.Identifier) and not node.args.get("quoted") and not _IDENTIFIER.fullmatch(node.this):
            raise SqlValidationError(
                f"Identifier `{node.this}` is not a plain name; put it in double quotes if it really is one."
            )
        if isinstance(node, exp.Var) and not _VAR.fullmatch(str(node.this)):
            raise SqlValidationError(f"`{node.this}` is not understood here; rewrite that part of the query.")

    def _check_source(self, source: exp.Expr | None) -> None:
        if isinstance(source, exp.Lateral):
            source = source.this
        if isinstance(source, (exp.Table, exp.Subquery, exp.Values)):
            if not isinstance(source, exp.Table) or isinstance(source.this, exp.Identifier):
                return
            if source.args.get("rows_from"):
                raise SqlValidationError("ROWS FROM (…) table functions are not allowed in FROM; select from tables.")
        shown = source.sql(self._read) if isinstance(source, exp.Expr) else "?"
        raise SqlValidationError(f"Table functions such as `{shown}` are not allowed in FROM; select from tables.")

    def _check_function(self, node: exp.Func) -> None:
        if isinstance(node, exp.Anonymous) and isinstance(node.this, str) and not _ASCII_NAME.fullmatch(node.this):
            raise SqlValidationError(f"Function name `{node.this}` is not a plain name; call built-in functions.")
        for name in sorted(_function_names(node)):
            if _is_denied(name):
                raise SqlValidationError(
                    f"Function `{name}` is not allowed: it can reach outside the query (files, sessions, settings, "
                    "other servers) or stall the database. Use ordinary SQL expressions."
                )


def _first_keyword(sql: str, read: str) -> str:
    try:
        tokens = Dialect.get_or_raise(read).tokenize(sql)
    except (TokenError, ValueError):
        tokens = []
    return tokens[0].text.upper() if tokens else "unknown"


def _parse_message(err: ParseError | TokenError) -> str:
    errors = getattr(err, "errors", None)
    if errors:
        description = str(errors[0].get("description") or "")
        line, col = errors[0].get("line"), errors[0].get("col")
        if description:
            return f"{description} (line {line}, column {col})"
    return _ANSI.sub("", str(err)).splitlines()[0] if str(err) else "the SQL could not be parsed"
