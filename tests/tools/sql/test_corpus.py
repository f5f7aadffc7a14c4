"""The adversarial corpus (tests/tools/sql/corpus.py) against real data on SQLite and PostgreSQL.

For every case: no value returned and no error message contains another tenant's or an unlisted table's
marker, no table or row changes, refusals happen before the database and say what to change.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from sqlalchemy.ext.asyncio import AsyncEngine

from agora_agent.actors import Actor
from agora_agent.errors import ToolError
from agora_agent.tools.context import ToolContext
from agora_agent.tools.sql import SqlTimeoutError, SqlValidationError
from tests.tools.sql.conftest import CORPUS_MAX_ROWS, CORPUS_TIMEOUT, corpus_tool, fingerprint
from tests.tools.sql.corpus import CASES, MARKERS, Case, for_dialect

ACTOR = Actor.of("u_analyst", ["analyst"], tenant_ref="A")


def test_corpus_is_large_enough() -> None:
    assert len(CASES) >= 200
    assert len(for_dialect("sqlite")) >= 200 and len(for_dialect("postgresql")) >= 200


def _leaks(value: Any) -> list[str]:
    text = repr(value)
    return [m for m in MARKERS if m in text]


async def _run_case(engine: AsyncEngine, case: Case) -> None:
    tool = corpus_tool(engine)
    before = await fingerprint(engine)
    started = time.monotonic()
    result: dict[str, Any] | None = None
    error: ToolError | None = None
    try:
        result = await tool.invoke({"sql": case.sql}, ToolContext(actor=ACTOR))
    except ToolError as err:
        error = err
    elapsed = time.monotonic() - started
    assert await fingerprint(engine) == before, "the database changed"

    if result is not None:
        assert not _leaks(result["rows"]), f"leaked {result['rows']}"
        assert result["rowCount"] <= CORPUS_MAX_ROWS
    if error is not None:
        message = str(error)
        assert not _leaks(message), message
        assert "Traceback" not in message and len(message) > 15, message
        assert error.tool_name == tool.spec.name

    if case.expect == "ok":
        assert error is None, f"expected success, got {type(error).__name__}: {error}"
        assert result is not None
        if case.rows is not None:
            assert [tuple(r.values()) for r in result["rows"]] == case.rows
    elif case.expect == "refused":
        assert isinstance(error, SqlValidationError), f"expected a refusal, got {result or error!r}"
        if case.msg:
            assert case.msg in str(error), str(error)
    elif case.expect == "timeout":
        assert isinstance(error, SqlTimeoutError), f"expected a timeout, got {result or error!r}"
        assert f"{CORPUS_TIMEOUT}s statement timeout" in str(error)
        assert elapsed < CORPUS_TIMEOUT + 3
    else:
        assert result is not None or error is not None


@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.ref("DATA-04", "DATA-05", "DATA-06", "DATA-07", "DATA-08", "DATA-11", "DATA-12", "DATA-13")
@pytest.mark.parametrize("case", for_dialect("sqlite"), ids=lambda c: c.id)
async def test_corpus_sqlite(sqlite_engine: AsyncEngine, case: Case) -> None:
    await _run_case(sqlite_engine, case)


@pytest.mark.postgres
@pytest.mark.asyncio(loop_scope="module")
@pytest.mark.ref("DATA-04", "DATA-05", "DATA-06", "DATA-07", "DATA-08", "DATA-11", "DATA-12", "DATA-13")
@pytest.mark.parametrize("case", for_dialect("postgresql"), ids=lambda c: c.id)
async def test_corpus_postgres(postgres_engine: AsyncEngine, case: Case) -> None:
    await _run_case(postgres_engine, case)
