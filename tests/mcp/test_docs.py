"""Every Python block of docs/mcp.md runs as written (each in a fresh namespace)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "mcp.md"
BLOCKS = re.findall(r"```python\n(.*?)```", DOC.read_text(), flags=re.S)


@pytest.mark.parametrize("source", BLOCKS, ids=[f"block{i}" for i in range(len(BLOCKS))])
def test_docs_block_runs(source: str) -> None:
    exec(compile(source, f"{DOC.name}", "exec"), {"__name__": "docs_mcp"})


def test_the_doc_has_python_blocks() -> None:
    assert len(BLOCKS) >= 4
