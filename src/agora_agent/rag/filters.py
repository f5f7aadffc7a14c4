"""Metadata filters and corpus-lifecycle helpers.

A filter is a mapping `{key: value}`; every key must match:
- a scalar value matches by *strict* equality (same JSON type and value: `1` is not `True`, `"1"` is not `1`,
  and a scalar never matches inside a stored array);
- a list value matches any: the stored scalar is one of the values, or the stored array shares one;
- an empty list denies everything (so `{"tenant_ref": []}` — an actor with no tenant — sees nothing);
- `{}` matches everything, even chunks without metadata; a non-empty filter never matches missing metadata.

Every store implements these semantics inside its query; `matches_filter` is the reference they are
tested against. Values are JSON scalars (str, int, float, bool, None); keys are identifiers.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any, TypeAlias

from agora_agent.errors import AgoraError

__all__ = [
    "FilterValue",
    "InvalidFilterError",
    "MetadataFilter",
    "Scalar",
    "UnsafeRemovalError",
    "apply_metadata_patch",
    "assert_removal_filter",
    "effective_patch_keys",
    "filter_denies_all",
    "matches_filter",
    "validate_filter",
]

Scalar: TypeAlias = str | int | float | bool | None
FilterValue: TypeAlias = Scalar | Sequence[Scalar]
MetadataFilter: TypeAlias = Mapping[str, FilterValue]

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]{0,127}$")


class InvalidFilterError(AgoraError, ValueError):
    """A filter key is not an identifier or a value is not a JSON scalar (or a list of them)."""


class UnsafeRemovalError(AgoraError):
    """`remove_where({})` would delete the whole corpus; it is refused before any I/O."""

    def __init__(self, reason: str = "empty-filter") -> None:
        super().__init__("refusing to remove with an empty filter: it would delete every chunk")
        self.reason = reason


def _is_scalar(value: Any) -> bool:
    return value is None or isinstance(value, str | int | float | bool)


def validate_filter(filter: Mapping[str, Any] | None) -> dict[str, FilterValue]:
    """Check a filter's shape and return it as a plain dict (lists for sequence values).

    Raises `InvalidFilterError` for a non-identifier key, a nested object, or a list holding a non-scalar.
    """
    if filter is None:
        return {}
    if not isinstance(filter, Mapping):
        raise InvalidFilterError(f"a metadata filter is a mapping, not {type(filter).__name__}")
    out: dict[str, FilterValue] = {}
    for key, value in filter.items():
        if not isinstance(key, str) or not _KEY.match(key):
            raise InvalidFilterError(f"filter key {key!r} is not an identifier ([A-Za-z_][A-Za-z0-9_-]*)")
        if _is_scalar(value):
            out[key] = value
        elif isinstance(value, list | tuple | set | frozenset):
            items = list(value)
            if not all(_is_scalar(v) for v in items):
                raise InvalidFilterError(f"filter {key!r}: a list may hold only JSON scalars")
            out[key] = items
        else:
            raise InvalidFilterError(f"filter {key!r}: expected a JSON scalar or a list of them")
    return out


def _kind(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, int | float):
        return "number"
    if isinstance(value, str):
        return "string"
    return "other"


def strict_equal(a: Any, b: Any) -> bool:
    """JSON equality without Python's coercions (`True == 1`): same kind and same value."""
    kind = _kind(a)
    return kind != "other" and kind == _kind(b) and a == b


def matches_filter(metadata: Mapping[str, Any] | None, filter: Mapping[str, Any] | None) -> bool:
    """Whether a chunk's metadata passes `filter` (the semantics in the module docstring)."""
    if not filter:
        return True
    if metadata is None:
        return False
    for key, want in filter.items():
        if key not in metadata:
            return False
        have = metadata[key]
        if isinstance(want, list | tuple):
            if not want:
                return False
            candidates = have if isinstance(have, list | tuple) else [have]
            if not any(strict_equal(h, w) for h in candidates for w in want):
                return False
        elif not strict_equal(have, want):
            return False
    return True


def filter_denies_all(filter: Mapping[str, Any] | None) -> bool:
    """True when some value is an empty list: nothing can match, so a store answers without I/O."""
    return bool(filter) and any(isinstance(v, list | tuple) and not v for v in (filter or {}).values())


def assert_removal_filter(filter: Mapping[str, Any] | None) -> dict[str, FilterValue]:
    """Validate a `remove_where` filter; `{}` or None raises `UnsafeRemovalError`."""
    checked = validate_filter(filter)
    if not checked:
        raise UnsafeRemovalError()
    return checked


def effective_patch_keys(patch: Mapping[str, Any]) -> list[str]:
    """The keys a merge patch changes (every key: a value replaces, None deletes)."""
    return [k for k in patch if isinstance(k, str)]


def apply_metadata_patch(metadata: Mapping[str, Any] | None, patch: Mapping[str, Any]) -> dict[str, Any]:
    """A shallow JSON merge patch: a non-null value replaces the key wholesale, None deletes it,
    keys not in the patch are untouched. Pure; always returns a new dict."""
    out = dict(metadata or {})
    for key, value in patch.items():
        if value is None:
            out.pop(key, None)
        else:
            out[key] = value
    return out
