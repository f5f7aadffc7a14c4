"""schemathesis over the OpenAPI document, against the app: no 5xx on any route, for any generated input.

The app runs on uvicorn (127.0.0.1) over a real SQLite file and a real PostgreSQL database of its own,
with every route mounted (governance gate, pricing, uploads staged on disk with their index in the
database) and a governance admin as the caller, so the generated requests get past identity into the
handlers and the stores. Bounded (few examples per operation): a smoke-fuzz that runs in CI, not an
exhaustive search. An event stream is read up to its first event (`governance/live` never ends).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
from pathlib import Path
from typing import Any

import httpx2
import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode

from agora_agent.governance.quota import Budget
from agora_agent.stores.attachments import FilesystemAttachmentStore
from agora_agent.stores.sql import open_sql_backend
from agora_agent.web import create_app

from .conftest import ADMIN, is_admin, make_config, refund_script, serve_in_thread

# Examples per operation and generation mode: ~20 s per backend on an idle machine (raise it to hunt).
EXAMPLES = int(os.environ.get("AGORA_FUZZ_EXAMPLES", "12"))


def seed(base: str) -> dict[str, str]:
    """A thread with a run parked on an approval, and an upload: real ids for the path parameters (random
    ids only ever reach the "not found" branch)."""
    with httpx2.Client(base_url=base, headers=ADMIN, timeout=10) as client:
        meta: dict[str, str] = {}
        with client.stream("POST", "/agent/chat", json={"message": "refund order 1"}) as chat:
            for line in chat.iter_lines():  # the run parks on its approval: read up to there, then leave
                if line.startswith("data: ") and "runId" in line:
                    meta = json.loads(line[6:])
                if "pending_approval" in line:
                    break
        thread = client.get(f"/agent/threads/{meta['threadId']}").json()
        media = client.post("/agent/attachments", files={"file": ("notes.txt", b"hello", "text/plain")}).json()
    return {
        "run_id": meta["runId"],
        "thread_id": meta["threadId"],
        "chat_id": meta["threadId"],
        "message_id": thread["messages"][0]["id"],
        "media_id": media["mediaId"],
        "scope": "actor",  # a budget rule's address
        "key": "alice",
    }


AIMED: list[str] = []  # operations also fuzzed against the seeded rows


def _strategy(operation: Any, real: dict[str, str]) -> Any:
    """Valid inputs (they reach the handlers and the store), invalid ones (the edge must refuse them), and
    valid inputs aimed at the seeded rows."""
    modes = [operation.as_strategy(GenerationMode.POSITIVE)]
    with contextlib.suppress(Exception):  # an operation without anything to negate
        modes.append(operation.as_strategy(GenerationMode.NEGATIVE))
    names = {p.name for p in operation.path_parameters}
    if names and names <= set(real):
        AIMED.append(operation.path)
        fixed = {name: real[name] for name in names}
        modes.append(operation.as_strategy(GenerationMode.POSITIVE, path_parameters=fixed))
    if operation.path.endswith("/governance/compare"):
        query = {"a": real["run_id"], "b": real["run_id"]}
        modes.append(operation.as_strategy(GenerationMode.POSITIVE, query=query))
    return st.one_of(*modes)


def fuzz(base: str) -> tuple[int, list[str]]:
    """Every operation of the app's schema; (operations fuzzed, one line per operation that failed)."""
    real = seed(base)
    schema = schemathesis.openapi.from_url(f"{base}/openapi.json")
    schema.config.max_stream_events = 1  # the status is what is checked; the console feed never ends
    failures: list[str] = []
    operations = 0
    for result in schema.get_all_operations():
        operation = result.ok()
        operations += 1

        @given(case=_strategy(operation, real))
        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def check(case: Any) -> None:
            response = case.call(headers=ADMIN, timeout=10)
            answer = (case.path_parameters, case.query, repr(case.body)[:300], response.status_code, response.text[:99])
            assert response.status_code < 500, answer
            if response.status_code >= 400 and response.headers.get("content-type", [""])[0].startswith(
                "application/json"
            ):
                body = response.json()
                assert isinstance(body, dict) and isinstance(body.get("error"), str), answer

        try:
            check()
        except AssertionError as exc:
            failures.append(f"{operation.method.upper()} {operation.path}: {exc}")
    return operations, failures


@pytest.mark.slow
@pytest.mark.ref("HTTP-01", "HTTP-16")
@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
def test_no_server_errors(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> None:
    if backend == "postgres":
        url = request.getfixturevalue("postgres_url")
        asyncio.run(_create_tables(url))
    else:
        url = f"sqlite:///{tmp_path / 'agent.db'}"
    config = make_config(
        refund_script(),
        store=url,
        governance_authorize=is_admin,
        attachment_staging=FilesystemAttachmentStore(tmp_path / "uploads"),
        budget=Budget(tokens_per_actor=10**9),  # mounts the budget routes too
    )
    with serve_in_thread(create_app(config)) as base:
        operations, failures = fuzz(base)
    assert not failures, "\n".join(failures)
    assert operations >= 30 and len(set(AIMED)) >= 8  # the whole API, and every id-addressed route on real rows


async def _create_tables(url: str) -> None:
    await (await open_sql_backend(url, auto_create_tables=True)).close()
