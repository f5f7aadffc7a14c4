"""docs/observability.md's example runs as written and prints what the page says."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "observability.md"


def test_observability_doc_example_runs() -> None:
    text = DOC.read_text()
    code = re.search(r"```python\n(.*?)```", text, re.S)
    printed = re.search(r"Prints:\n\n```\n(.*?)```", text, re.S)
    assert code and printed
    result = subprocess.run([sys.executable, "-c", code.group(1)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout == printed.group(1)
