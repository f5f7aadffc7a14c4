"""`agora-agent` starts light: help imports no database, migration or web stack, and shows what it always did.

Every CLI invocation (and every test that spawns the CLI) pays the imports of `agora_agent.cli`; the commands
import SQLAlchemy, Alembic, the service or the web app when they run, not to register themselves.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import subprocess
import sys
from typing import Any

import pytest

from agora_agent.cli import app, main

# What a help screen must not import (each is a command's own business when it runs).
HEAVY = ("sqlalchemy", "alembic", "starlette", "fastapi", "agora_agent.web", "agora_agent.stores.sql.backend")

HELP_ARGS = [
    [],
    ["--help"],
    ["db", "--help"],
    ["db", "upgrade", "--help"],
    ["demo", "--help"],
    ["serve", "--help"],
    ["worker", "--help"],
    ["chat", "--help"],
    ["prices", "--help"],
    ["prices", "sync", "--help"],
    ["rag", "--help"],
    ["rag", "db", "upgrade", "--help"],
    ["runs", "--help"],
    ["approvals", "--help"],
    ["init", "--help"],
]

# The command tree users see today: a lazy import must never drop, rename or reorder a command.
COMMANDS = {
    "": ["demo", "serve", "worker", "init", "chat", "db", "prices", "approvals", "runs", "rag"],
    "db": ["upgrade", "downgrade", "current"],
    "prices": ["sync", "set", "list", "reprice"],
    "approvals": ["list", "approve", "reject"],
    "runs": ["list", "show"],
    "rag": ["ingest", "search", "remove", "db"],
    "rag db": ["upgrade"],
}

_ENV = {**os.environ, "COLUMNS": "100", "TERM": "dumb", "NO_COLOR": "1"}
_ENV.pop("FORCE_COLOR", None)

# Run in a fresh interpreter: each help screen as `agora-agent ARGS` prints it, and what was imported by then.
_PROBE = """
import contextlib, io, json, sys
sys.argv[0] = "agora-agent"
from agora_agent.cli import main
heavy, report = json.loads(sys.argv[1]), []
for args in json.loads(sys.argv[2]):
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(args)
    report.append({"args": args, "code": code, "out": out.getvalue(), "err": err.getvalue(),
                   "imported": [m for m in heavy if m in sys.modules]})
report.append({"service": "agora_agent.service" in sys.modules})
print(json.dumps(report))
"""


@pytest.fixture(scope="module")
def probe() -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, json.dumps(HEAVY), json.dumps(HELP_ARGS)],
        capture_output=True,
        text=True,
        env=_ENV,
        timeout=60,
        check=True,
    )
    report: list[dict[str, Any]] = json.loads(done.stdout)
    return report


def test_help_imports_no_database_migration_or_web_stack(probe: list[dict[str, Any]]) -> None:
    imported = {" ".join(row["args"]) or "(no args)": row["imported"] for row in probe[:-1]}
    assert imported == {name: [] for name in imported}


def test_help_does_not_import_the_service(probe: list[dict[str, Any]]) -> None:
    assert probe[-1] == {"service": False}


def test_help_screens_are_those_of_the_fully_loaded_cli(
    probe: list[dict[str, Any]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The light start-up's help is, byte for byte, what the CLI prints once every command's imports are loaded."""

    for name in ("COLUMNS", "TERM", "NO_COLOR"):
        monkeypatch.setenv(name, _ENV[name])
    monkeypatch.delenv("FORCE_COLOR", raising=False)
    monkeypatch.setattr(sys, "argv", ["agora-agent"])
    for row in probe[:-1]:
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(row["args"])
        assert (row["code"], row["out"], row["err"]) == (code, out.getvalue(), err.getvalue()), row["args"]


def test_the_command_tree_is_unchanged() -> None:
    import typer

    def names(path: str) -> list[str]:
        command: Any = typer.main.get_command(app)
        for part in path.split():
            command = command.commands[part]
        return list(command.commands)

    assert {path: names(path) for path in COMMANDS} == COMMANDS
