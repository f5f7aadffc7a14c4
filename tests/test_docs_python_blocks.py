"""Every Python block in docs/ and in the agent skills shipped in the package runs as written: each page's
blocks in order, in one namespace, in a scratch directory (a block with top-level `await` runs in an event
loop). A block that needs an outside server says so in a `<!-- docs-test: not executed, <reason> -->` line
just above it; it is still compiled."""

from __future__ import annotations

import ast
import asyncio
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = ROOT / "docs"
SKILLS = ROOT / "src" / "agora_agent" / "skills"
BLOCK = re.compile(r"(<!-- docs-test: not executed, (?P<reason>[^>]+?) -->\n)?```python\n(?P<code>.*?)```", re.S)
PAGES = sorted(p for p in DOCS.glob("*.md") if "```python" in p.read_text())
SKILL_PAGES = sorted(SKILLS.glob("*/SKILL.md"))


def test_every_page_with_python_is_collected() -> None:
    assert len(PAGES) >= 9 and (DOCS / "actor-resolvers.md") in PAGES
    assert len(SKILL_PAGES) >= 5


def run_python_blocks(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run `page`'s Python blocks in order in one namespace, inside `tmp_path`."""
    monkeypatch.chdir(tmp_path)  # blocks that write files (SQLite) write here
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-docs")  # adapters are built, never called
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    blocks = list(BLOCK.finditer(page.read_text()))
    assert blocks
    for index, match in enumerate(blocks):
        compiled = compile(match["code"], f"{page.name}#{index}", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT)
        if match["reason"]:
            continue
        result = eval(compiled, namespace)
        if asyncio.iscoroutine(result):
            asyncio.run(result)


@pytest.mark.slow
@pytest.mark.parametrize("page", PAGES, ids=lambda p: p.name)
def test_python_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_python_blocks(page, tmp_path, monkeypatch)


@pytest.mark.slow
@pytest.mark.parametrize("page", SKILL_PAGES, ids=lambda p: p.parent.name)
def test_skill_python_blocks_run(page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_python_blocks(page, tmp_path, monkeypatch)
