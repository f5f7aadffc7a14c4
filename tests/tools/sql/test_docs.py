"""docs/sql-tool.md's example runs as written and prints what the page says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[3] / "docs" / "sql-tool.md"


@pytest.mark.ref("DATA-01", "DATA-08", "DATA-11")
def test_data_tool_doc_example_runs() -> None:
    text = DOC.read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S)
    printed = re.search(r"Prints:\n\n```\n(.*?)```", text, re.S)
    assert code and printed
    result = subprocess.run([sys.executable, "-c", code.group(1)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == printed.group(1)
