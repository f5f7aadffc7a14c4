"""Chunking: the prose and separator paths, and stable chunk ids (REFERENCE RAG-02..04)."""

from __future__ import annotations

import pytest

from agora_agent.errors import ConfigurationError
from agora_agent.rag import Document, chunk_documents, chunk_text

pytestmark = pytest.mark.ref("RAG-02", "RAG-03", "RAG-04")


def test_short_and_empty_text() -> None:
    assert chunk_text("   ") == []
    assert chunk_text("  hello world  ") == ["hello world"]


def test_prose_cuts_at_the_last_boundary_past_half_the_window_and_overlaps() -> None:
    text = "Alpha beta gamma. Delta epsilon zeta. Eta theta iota. Kappa lambda mu."
    chunks = chunk_text(text, chunk_size=40, overlap=10)
    # window [0,40) ends "zeta. E": its last boundary (the space after "zeta.", 37 > 20) is the cut; the next
    # window starts `overlap` (10) characters before the cut, mid-word as in the reference.
    assert chunks == [
        "Alpha beta gamma. Delta epsilon zeta.",
        "lon zeta. Eta theta iota. Kappa lambda",
        "pa lambda mu.",
    ]


def test_prose_without_a_usable_boundary_cuts_hard() -> None:
    text = "x" * 25
    assert chunk_text(text, chunk_size=10, overlap=2) == ["x" * 10, "x" * 10, "x" * 9]


def test_separator_packs_whole_records_and_overlaps_whole_records() -> None:
    rows = "\n".join(f"row{i:02d}" for i in range(6))  # 5 chars each
    chunks = chunk_text(rows, chunk_size=17, overlap=6, separator="\n")
    assert chunks == ["row00\nrow01\nrow02", "row02\nrow03\nrow04", "row04\nrow05"]


def test_separator_over_long_record_is_its_own_chunk_and_empty_records_drop() -> None:
    text = "short\n\n" + "L" * 30 + "\n \nend"
    assert chunk_text(text, chunk_size=10, overlap=0, separator="\n") == ["short", "L" * 30, "end"]


def test_empty_separator_means_prose() -> None:
    assert chunk_text("a b c", separator="") == ["a b c"]


def test_invalid_options_raise() -> None:
    with pytest.raises(ConfigurationError):
        chunk_text("x", chunk_size=0)
    with pytest.raises(ConfigurationError):
        chunk_text("x", chunk_size=10, overlap=10)


def test_chunk_documents_ids_are_stable_and_carry_source_and_metadata() -> None:
    doc = Document(id="guide", text="word " * 500, source="guide.md", metadata={"lang": "en"})
    first = chunk_documents([doc], chunk_size=200, overlap=20)
    again = chunk_documents([doc], chunk_size=200, overlap=20)
    assert [c.id for c in first] == [f"guide#{n}" for n in range(len(first))]
    assert first == again
    assert {c.source for c in first} == {"guide.md"}
    assert all(c.metadata == {"lang": "en"} and c.document_id == "guide" for c in first)
