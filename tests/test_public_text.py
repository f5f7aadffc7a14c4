"""Public text speaks to users: no catalogue id (`HTTP-01`, `GQ-03`, `DESIGN §3`, …) in a docstring of src/ or in
the published OpenAPI document. The ids belong to the tests (`@pytest.mark.ref`), whose coverage report uses them."""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from agora_agent import AgentConfig
from agora_agent.testing import FakeModel, echo_script
from agora_agent.web import create_app

SRC = Path(__file__).resolve().parents[1] / "src" / "agora_agent"
CATALOGUE_ID = re.compile(r"\b[A-Z]{2,6}(?:-[A-Z]{2,6}){0,2}-\d{2}(?!\d)|\b(?:REFERENCE|DESIGN)\b")


DOCUMENTED = ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef


def docstrings(tree: ast.AST) -> Iterator[tuple[int, str]]:
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if not isinstance(body, list):
            continue
        for index, statement in enumerate(body):
            documented = index == 0 and isinstance(
                node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef
            )
            after_assignment = index > 0 and isinstance(body[index - 1], ast.Assign | ast.AnnAssign)
            if (documented or after_assignment) and isinstance(statement, ast.Expr):
                value = statement.value
                if isinstance(value, ast.Constant) and isinstance(value.value, str):
                    yield statement.lineno, value.value


def test_docstrings_cite_no_catalogue_ids() -> None:
    citing: dict[str, list[str]] = {}
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC).as_posix()
        if "migrations" in relative:
            continue
        for line, text in docstrings(ast.parse(path.read_text())):
            for match in CATALOGUE_ID.finditer(text):
                citing.setdefault(relative, []).append(f"{line}: {match.group()}")
    assert not citing, f"write for the reader, not the catalogue: {citing}"


def openapi_texts(node: Any, where: str = "") -> Iterator[tuple[str, str]]:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in {"description", "summary"} and isinstance(value, str):
                yield where, value
            else:
                yield from openapi_texts(value, f"{where}/{key}")
    elif isinstance(node, list):
        for index, value in enumerate(node):
            yield from openapi_texts(value, f"{where}/{index}")


def test_the_openapi_document_cites_no_catalogue_ids() -> None:
    app = create_app(AgentConfig(model=FakeModel(echo_script("hi")), governance_authorize=lambda actor, request: True))
    texts = list(openapi_texts(app.openapi()))
    assert len(texts) > 20  # the routes are described
    citing = [(where, text) for where, text in texts if CATALOGUE_ID.search(text)]
    assert not citing, citing
