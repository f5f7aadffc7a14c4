"""The agent skills shipped in the package: one `<name>/SKILL.md` per skill, in the structured form coding
assistants load (front matter, Setup, Core patterns, Common mistakes), citing only files of this repository.
Their Python blocks run in tests/test_docs_python_blocks.py."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
SKILLS = ROOT / "src" / "agora_agent" / "skills"
EXPECTED = {"agent-governance", "agent-personas-agents", "agent-setup", "agent-testing", "agent-tools"}
FRONT = re.compile(r"\A---\n(?P<head>.*?)\n---\n(?P<body>.*)\Z", re.S)


def test_the_five_skills_are_shipped() -> None:
    assert {p.parent.name for p in SKILLS.glob("*/SKILL.md")} == EXPECTED


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_skill_is_structured_and_cites_files_that_exist(name: str) -> None:
    text = (SKILLS / name / "SKILL.md").read_text()
    match = FRONT.match(text)
    assert match, "front matter between --- lines"
    head, body = match["head"], match["body"]
    assert re.search(rf"^name: {re.escape(name)}$", head, re.M)
    assert re.search(r"^description: >-\n(  .+\n)+", head + "\n", re.M)
    assert "library: agora-agent" in head
    sources = re.findall(r'^  - "(.+)"$', head.split("sources:", 1)[1], re.M)
    assert sources and all((ROOT / s).is_file() for s in sources), sources
    for section in ("## Setup", "## Core patterns", "## Common mistakes"):
        assert f"\n{section}\n" in body, section
    assert "```python" in body


def test_the_readme_points_to_the_skills() -> None:
    assert "src/agora_agent/skills" in (ROOT / "README.md").read_text()
