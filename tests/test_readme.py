"""The README's quickstart runs as written."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def test_quickstart_block_runs_offline() -> None:
    text = README.read_text()
    section = text.split("## Quickstart", 1)[1]
    match = re.search(r"```python\n(.*?)```", section, re.S)
    assert match, "no python block under ## Quickstart"
    result = subprocess.run([sys.executable, "-c", match.group(1)], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert "approve refund_order" in result.stdout
    assert "Done: order 1001 is refunded." in result.stdout
