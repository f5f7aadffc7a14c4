"""The house rules a reader relies on: no function in src/ over 80 lines (outside the migrations and the demo).
The import contracts (layers, no cycles) run as `lint-imports` in `make lint`."""

from __future__ import annotations

import ast
from pathlib import Path

SRC = Path(__file__).resolve().parents[1] / "src" / "agora_agent"
MAX_LINES = 80
EXEMPT_DIRS = {"migrations", "demo"}


def long_functions() -> dict[tuple[str, str], int]:
    found = {}
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC)
        if EXEMPT_DIRS & set(relative.parts):
            continue
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > MAX_LINES:
                    found[(relative.as_posix(), node.name)] = length
    return found


def test_no_function_is_over_80_lines() -> None:
    found = long_functions()
    too_long = sorted(f"{path}:{name} ({lines} lines)" for (path, name), lines in found.items())
    assert not too_long, f"split these into well-named helpers: {too_long}"
