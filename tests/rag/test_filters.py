"""Metadata filter semantics and the merge-patch helpers (REFERENCE RAG-06, RAG-21..24)."""

from __future__ import annotations

import pytest

from agora_agent.rag import (
    InvalidFilterError,
    UnsafeRemovalError,
    apply_metadata_patch,
    assert_removal_filter,
    document_id_of,
    filter_denies_all,
    matches_filter,
)

pytestmark = pytest.mark.ref("RAG-06", "RAG-24")

META = {"tenant_ref": "acme", "tags": ["billing", "faq"], "rank": 1, "public": True, "note": None}


@pytest.mark.parametrize(
    ("filter", "expected"),
    [
        ({}, True),
        ({"tenant_ref": "acme"}, True),
        ({"tenant_ref": "globex"}, False),
        ({"tenant_ref": ["globex", "acme"]}, True),  # match-any against a scalar
        ({"tags": ["faq"]}, True),  # array intersects array
        ({"tags": ["shipping", "returns"]}, False),
        ({"tags": "faq"}, False),  # a scalar never matches inside a stored array (strict equality)
        ({"tenant_ref": []}, False),  # empty array denies
        ({"rank": 1}, True),
        ({"rank": True}, False),  # strict: True is not 1
        ({"public": 1}, False),
        ({"rank": "1"}, False),
        ({"note": None}, True),
        ({"missing": None}, False),  # an absent key is not null
        ({"tenant_ref": "acme", "tags": ["nope"]}, False),  # every key must match
    ],
)
def test_matches_filter(filter: dict[str, object], expected: bool) -> None:
    assert matches_filter(META, filter) is expected


def test_missing_metadata() -> None:
    assert matches_filter(None, {}) is True
    assert matches_filter(None, {"tenant_ref": "acme"}) is False


def test_denies_all_and_removal_guard() -> None:
    assert filter_denies_all({"a": "x", "b": []})
    assert not filter_denies_all({})
    with pytest.raises(UnsafeRemovalError) as info:
        assert_removal_filter({})
    assert info.value.reason == "empty-filter"
    with pytest.raises(UnsafeRemovalError):
        assert_removal_filter(None)


@pytest.mark.parametrize("bad", [{"a": {"nested": 1}}, {"a": [["x"]]}, {"bad key": 1}, {"a'; drop": 1}])
def test_invalid_filters_raise(bad: dict[str, object]) -> None:
    with pytest.raises(InvalidFilterError):
        assert_removal_filter(bad)


@pytest.mark.ref("RAG-21")
def test_apply_metadata_patch_is_a_shallow_merge() -> None:
    before = {"a": 1, "b": {"x": 1}, "c": "keep"}
    after = apply_metadata_patch(before, {"a": 2, "b": {"y": 2}, "d": None, "c": None})
    assert after == {"a": 2, "b": {"y": 2}}
    assert before == {"a": 1, "b": {"x": 1}, "c": "keep"}  # pure
    assert apply_metadata_patch(None, {}) == {}


def test_document_id_of() -> None:
    assert document_id_of("guide#12") == "guide"
    assert document_id_of("a#b#3") == "a#b"
    assert document_id_of("plain") == "plain"
