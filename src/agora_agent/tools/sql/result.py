"""Shape query results for the model: JSON-safe rows, unique keys, and the 256 KiB cap."""

from __future__ import annotations

import base64
import datetime as dt
import json
import uuid
from collections.abc import Sequence
from decimal import Decimal
from typing import Any

__all__ = ["MAX_RESULT_BYTES", "json_safe", "rows_as_dicts", "truncate_rows"]

MAX_RESULT_BYTES = 256 * 1024


def json_safe(value: Any) -> Any:
    """A JSON-serialisable form of a database value (dates as ISO 8601, bytes as base64, exact decimals)."""
    if value is None or isinstance(value, (bool, int, str)):
        return value
    if isinstance(value, float):
        return value if value == value and value not in (float("inf"), float("-inf")) else str(value)
    if isinstance(value, Decimal):
        if value == value.to_integral_value() and abs(value) < 2**53:
            return int(value)
        as_float = float(value)
        return as_float if Decimal(repr(as_float)) == value else str(value)
    if isinstance(value, (dt.datetime, dt.date, dt.time)):
        return value.isoformat()
    if isinstance(value, dt.timedelta):
        return value.total_seconds()
    if isinstance(value, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(value)).decode("ascii")
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, dict):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    return str(value)


def _unique(columns: Sequence[str]) -> list[str]:
    seen: dict[str, int] = {}
    keys: list[str] = []
    for name in columns:
        key = name
        while key in seen:
            seen[name] += 1
            key = f"{name}_{seen[name]}"
        seen.setdefault(key, 1)
        keys.append(key)
    return keys


def rows_as_dicts(columns: Sequence[str], rows: Sequence[Sequence[Any]]) -> list[dict[str, Any]]:
    """Rows as objects; a repeated column name gets a numeric suffix (`id`, `id_2`) instead of being lost."""
    keys = _unique(columns)
    return [{k: json_safe(v) for k, v in zip(keys, row, strict=True)} for row in rows]


def truncate_rows(rows: list[dict[str, Any]], limit: int = MAX_RESULT_BYTES) -> tuple[list[dict[str, Any]], bool]:
    """Keep the longest prefix whose JSON array fits `limit` bytes (`2 + Σ(row bytes + 1)`); True if cut."""
    total = 2
    for index, row in enumerate(rows):
        total += len(json.dumps(row, ensure_ascii=False, separators=(",", ":")).encode("utf-8")) + 1
        if total > limit:
            return rows[:index], True
    return rows, False
