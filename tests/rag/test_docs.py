"""docs/rag.md: its Python example runs as written and prints what the page says."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "rag.md"


def test_the_example_runs_and_prints_what_the_page_says() -> None:
    text = DOC.read_text()
    (block,) = re.findall(r"```python\n(.*?)```", text, re.S)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        exec(compile(block, str(DOC), "exec"), {"__name__": "__docs__"})
    assert out.getvalue() == "alice True\nbob False\n"
    assert "prints `alice True` then `bob False`" in text
