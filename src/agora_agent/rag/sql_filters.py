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


def _sqlite_any_scalar(path: str, column: str, want: list[Any], params: list[Any]) -> str:
    """The stored primitive at `path` equals one of `want`, type-strict, without a table-valued function."""
    type_expr, value_expr = f"json_type({column}, ?)", f"json_extract({column}, ?)"
    strings = [w for w in want if isinstance(w, str)]
    numbers = [w for w in want if isinstance(w, int | float) and not isinstance(w, bool)]
    # identity, not `in`: `True in [1]` is true in Python
    kinds = [k for k, v in (("true", True), ("false", False), ("null", None)) if any(w is v for w in want)]
    ors: list[str] = []
    if strings:
        ors.append(f"({type_expr} = 'text' AND {value_expr} IN ({', '.join('?' * len(strings))}))")
        params += [path, path, *strings]
    if numbers:
        ors.append(f"({type_expr} IN ('integer', 'real') AND {value_expr} IN ({', '.join('?' * len(numbers))}))")
        params += [path, path, *numbers]
    if kinds:
        ors.append(f"{type_expr} IN ({', '.join(repr(k) for k in kinds)})")
        params.append(path)
    return " OR ".join(ors) or "0"


def sqlite_filter_sql(
    filter: Mapping[str, Any] | None, column: str = "metadata", *, indexed: Mapping[str, str] | None = None
) -> tuple[str, list[Any]]:
    """`(sql, params)` for SQLite's JSON1 with `?` placeholders; `"1"` for no filter, `"0"` when it denies all.

    `indexed` maps a filter key to a column holding that key's value when it is a string (`''` otherwise):
    a string-valued filter on it adds `col IN (…, '')` in front, which an index can serve, so most rows are
    skipped before their JSON is parsed. It only ever admits a superset; the JSON condition decides every row.
    """
    checked = validate_filter(filter)
    if not checked:
        return "1", []
    clauses: list[str] = []
    params: list[Any] = []
    for key, want in checked.items():
        values = want if isinstance(want, list) else [want]
        if indexed and key in indexed and values and all(isinstance(v, str) for v in values):
            clauses.append(f"{indexed[key]} IN ({', '.join('?' * (len(values) + 1))})")
            params.extend([*values, ""])
    for key, want in checked.items():
        path = _json_path(key)
        if isinstance(want, list):
            if not want:
                return "0", []
            # Arrays: any element matches; objects never; a primitive: one of the values (type-strict).
            element: list[Any] = []
            ors = " OR ".join(_sqlite_typed_eq("je.type", "je.value", w, element) for w in want)
            scalar_params: list[Any] = []
            scalar = _sqlite_any_scalar(path, column, want, scalar_params)
            clauses.append(
                f"(CASE json_type({column}, ?) WHEN 'array' THEN EXISTS (SELECT 1 FROM json_each({column}, ?) AS je "
                f"WHERE {ors}) WHEN 'object' THEN 0 ELSE ({scalar}) END)"
            )
            params.extend([path, path, *element, *scalar_params])
        elif want is None or isinstance(want, bool):
            params.append(path)
            clauses.append(_sqlite_typed_eq(f"json_type({column}, ?)", "", want, params))
        else:
            params.extend([path, path])
            clauses.append(_sqlite_typed_eq(f"json_type({column}, ?)", f"json_extract({column}, ?)", want, params))
    return " AND ".join(clauses), params


def pg_filter_sql(filter: Mapping[str, Any] | None, column: str = "metadata") -> tuple[str, dict[str, Any]]:
    """`(sql, params)` for PostgreSQL jsonb with SQLAlchemy `:name` placeholders.

    Scalars: `metadata -> key = value::jsonb` (jsonb equality is type-strict: `1` is not `true`, `"1"` is not
    `1`). Lists: the stored scalar, or any element of the stored array, equals one of the values.
    Each key is also guarded by `metadata @> …` containment terms (the GIN `jsonb_path_ops` index serves them,
    so a tenant filter reads only that tenant's rows); they admit a superset, the exact clause decides.
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
            guards = []
            for j, w in enumerate(want):
                params[f"fc{n}_{j}"] = json.dumps({key: w})
                params[f"fa{n}_{j}"] = json.dumps({key: [w]})
                guards += [f"{column} @> CAST(:fc{n}_{j} AS jsonb)", f"{column} @> CAST(:fa{n}_{j} AS jsonb)"]
            clauses.append(f"({' OR '.join(guards)})")
            clauses.append(
                f"({column} ? :{k} AND jsonb_typeof({column} -> :{k}) <> 'object' AND EXISTS ("
                f"SELECT 1 FROM jsonb_array_elements(CASE WHEN jsonb_typeof({column} -> :{k}) = 'array' "
                f"THEN {column} -> :{k} ELSE jsonb_build_array({column} -> :{k}) END) AS el "
                f"WHERE el IN (SELECT jsonb_array_elements(CAST(:{v} AS jsonb)))))"
            )
        else:
            v = f"fv{n}"
            params[v] = json.dumps(want)
            params[f"fc{n}"] = json.dumps({key: want})
            clauses.append(f"{column} @> CAST(:fc{n} AS jsonb)")
            clauses.append(f"({column} ? :{k} AND {column} -> :{k} = CAST(:{v} AS jsonb))")
    return " AND ".join(clauses), params
