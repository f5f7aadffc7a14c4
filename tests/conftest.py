"""Shared fixtures: real PostgreSQL and Redis when reachable, a clear skip otherwise (a failure under CI)."""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import AsyncIterator, Iterator

import pytest

PG_HOST, PG_PORT = "127.0.0.1", 5432
REDIS_HOST, REDIS_PORT = "127.0.0.1", 6379
IN_CI = os.environ.get("CI", "").lower() in {"1", "true", "yes"}


def _reachable(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.5):
            return True
    except OSError:
        return False


def require_server(name: str, host: str, port: int) -> None:
    """Skip with a reason on a developer machine without the server; fail loudly under CI=true."""
    if _reachable(host, port):
        return
    message = f"{name} is not reachable on {host}:{port}"
    if IN_CI:
        pytest.fail(f"{message} — CI must run these tests (see .ci/run)")
    pytest.skip(f"{message}; start it to run this test")


@pytest.fixture
def postgres_url() -> Iterator[str]:
    """A fresh, empty PostgreSQL database for this test (dropped afterwards). asyncpg driver URL."""
    require_server("PostgreSQL", PG_HOST, PG_PORT)
    import asyncio

    import asyncpg

    name = f"agora_t_{uuid.uuid4().hex[:12]}"

    async def admin(sql: str) -> None:
        conn = await asyncpg.connect(host=PG_HOST, port=PG_PORT, user="postgres", database="test")
        try:
            await conn.execute(sql)
        finally:
            await conn.close()

    asyncio.run(admin(f'CREATE DATABASE "{name}"'))
    try:
        yield f"postgresql+asyncpg://postgres@{PG_HOST}:{PG_PORT}/{name}"
    finally:
        asyncio.run(admin(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))


@pytest.fixture
async def redis_prefix() -> AsyncIterator[str]:
    """A unique Redis key prefix for this test; its keys are deleted afterwards."""
    require_server("Redis", REDIS_HOST, REDIS_PORT)
    import redis.asyncio as aioredis

    prefix = f"agora-test:{uuid.uuid4().hex[:12]}"
    yield prefix
    client = aioredis.Redis(host=REDIS_HOST, port=REDIS_PORT)
    try:
        keys = [k async for k in client.scan_iter(match=f"{prefix}*")]
        if keys:
            await client.delete(*keys)
    finally:
        await client.aclose()


# --- REFERENCE catalogue coverage ------------------------------------------------------------------
# Tests tag the catalogue ids they cover with @pytest.mark.ref("HTTP-05", …). At the end of a run we
# print how many ids are covered and write the uncovered ones to test-artifacts/reference-coverage.txt.

import re  # noqa: E402
from collections import Counter  # noqa: E402
from pathlib import Path  # noqa: E402

_REFERENCE = Path(__file__).resolve().parents[2] / "shared" / "spec" / "REFERENCE.md"
_ID_LINE = re.compile(r"^- ([A-Z][A-Z0-9]*(?:-[A-Z0-9]+)*-[A-Z]?\d+)\b")
_covered_ids: set[str] = set()


def reference_ids(path: Path = _REFERENCE) -> list[str]:
    """Every catalogue id defined in REFERENCE.md (lines that start with `- ID`)."""
    if not path.exists():
        return []
    return [m.group(1) for line in path.read_text().splitlines() if (m := _ID_LINE.match(line))]


def _set_nodeid(item: pytest.Item, nodeid: str) -> None:
    if hasattr(item, "_id"):  # pytest >= 9.2 keeps a structured id
        from _pytest.nodeid import coerce_node_id

        item._id = coerce_node_id(nodeid)
    else:
        item._nodeid = nodeid


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        for mark in item.iter_markers("ref"):
            _covered_ids.update(str(a) for a in mark.args)
    # Under pytest 9.2, schemathesis' `schema.parametrize()` gives every API operation the same node id (only
    # the item's name says `[GET /path]`): a failure would not say which operation failed, and pytest-xdist's
    # per-file scheduling (keyed by node id) would run only one of them. Such items get their name as id.
    seen = Counter(item.nodeid for item in items)
    for item in items:
        if seen[item.nodeid] > 1 and item.parent is not None:
            _set_nodeid(item, f"{item.parent.nodeid}::{item.name}")
    if hasattr(config, "workerinput") and len({item.nodeid for item in items}) != len(items):
        raise pytest.UsageError("two collected tests share a node id: pytest-xdist would run only one of them")


def pytest_sessionfinish(session: pytest.Session) -> None:
    """Under pytest-xdist, a worker hands the ids it collected to the controller, which writes the summary."""
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:
        workeroutput["reference_ids"] = sorted(_covered_ids)


@pytest.hookimpl(optionalhook=True)  # an xdist hook: there only when pytest-xdist is installed
def pytest_testnodedown(node: object, error: object) -> None:
    _covered_ids.update(getattr(node, "workeroutput", {}).get("reference_ids", ()))


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if hasattr(terminalreporter.config, "workerinput"):  # an xdist worker: the controller reports
        return
    ids = reference_ids()
    if not ids:
        return
    uncovered = [i for i in ids if i not in _covered_ids]
    out = Path("test-artifacts")
    out.mkdir(exist_ok=True)
    (out / "reference-coverage.txt").write_text("\n".join(uncovered) + "\n")
    terminalreporter.write_line(
        f"REFERENCE catalogue: {len(ids) - len(uncovered)} of {len(ids)} ids tagged by the tests collected; "
        f"uncovered ids in test-artifacts/reference-coverage.txt"
    )
