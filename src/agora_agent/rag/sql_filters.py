"""Metadata filters compiled to SQL, so stores apply them INSIDE the query (never fetch-then-drop).

Same semantics as `matches_filter` (tests/rag/test_store_contract.py checks every store against it).
Keys are validated identifiers and still travel as bound parameters, like every value.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from agora_agent.rag.filters import validate_filter

__all__ = ["pg_filter_sql", "sqlite_filter_sql"]


def _json_path(key: str) -> str:
    return f'$."{key}"'  # keys are [A-Za-z_][A-Za-z0-9_-]*: nothing to escape inside the quotes


def _sqlite_typed_eq(type_expr: str, value_expr: str, value: Any, params: list[Any]) -> str:
    if value is None:
        return f"{type_expr} = 'null'"
    if isinstance(value, bool):
        return f"{type_expr} = '{'true' if value else 'false'}'"
    params.append(value)
    if isinstance(value, int | float):
        return f"({type_expr} IN ('integer', 'real') AND {value_expr} = ?)"
    return f"({type_expr} = 'text' AND {value_expr} = ?)"


def sqlite_filter_sql(filter: Mapping[str, Any] | None, column: str = "metadata") -> tuple[str, list[Any]]:
    """`(sql, params)` for SQLite's JSON1 with `?` placeholders; `"1"` for no filter, `"0"` when it denies all."""
    checked = validate_filter(filter)
    if not checked:
        return "1", []
    clauses: list[str] = []
    params: list[Any] = []
    for key, want in checked.items():
        path = _json_path(key)
        if isinstance(want, list):
            if not want:
                return "0", []
            # json_each yields the array's elements, or one row for a scalar; objects never match.
            params.extend([path, path])
            ors = [_sqlite_typed_eq("je.type", "je.value", w, params) for w in want]
            clauses.append(
                f"(json_type({column}, ?) NOT IN ('object') AND EXISTS (SELECT 1 FROM json_each({column}, ?) AS je "
                f"WHERE {' OR '.join(ors)}))"
            )
        elif want is None or isinstance(want, bool):
            params.append(path)
            clauses.append(_sqlite_typed_eq(f"json_type({column}, ?)", "", want, params))
        else:
            params.extend([path, path])
            clauses.append(_sqlite_typed_eq(f"json_type({column}, ?)", f"json_extract({column}, ?)", want, params))
    return " AND ".join(clauses), params


def pg_filter_sql(filter: Mapping[str, Any] | None, column: str = "metadata") -> tuple[str, dict[str, Any]]:
    """`(sql, params)` for PostgreSQL jsonb with SQLAlchemy `:name` placeholders (RAG-09).

    Scalars: `metadata -> key = value::jsonb` (jsonb equality is type-strict: `1` is not `true`, `"1"` is not
    `1`). Lists: the stored scalar, or any element of the stored array, equals one of the values.
    """
    checked = validate_filter(filter)
    if not checked:
        return "TRUE", {}
    clauses: list[str] = []
    params: dict[str, Any] = {}
    for n, (key, want) in enumerate(checked.items()):
        k = f"fk{n}"
        params[k] = key
        if isinstance(want, list):
            if not want:
                return "FALSE", {}
            v = f"fv{n}"
            params[v] = json.dumps(want)
            clauses.append(
                f"({column} ? :{k} AND jsonb_typeof({column} -> :{k}) <> 'object' AND EXISTS ("
                f"SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof({column} -> :{k}) = 'array' "
                f"THEN {column} -> :{k} ELSE jsonb_build_array({column} -> :{k}) END) AS el "
                f"WHERE el IN (SELECT jsonb_array_elements(CAST(:{v} AS jsonb)))))"
            )
        else:
            v = f"fv{n}"
            params[v] = json.dumps(want)
            clauses.append(f"({column} ? :{k} AND {column} -> :{k} = CAST(:{v} AS jsonb))")
    return " AND ".join(clauses), params
