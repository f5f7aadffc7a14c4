"""`agora-agent init`, `serve` (errors) and `demo` (busy port), called as functions."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from agora_agent.cli import main
from agora_agent.cli.init import SCAFFOLD


def test_init_scaffolds_and_refuses_to_overwrite(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", str(tmp_path / "app")]) == 0
    out = capsys.readouterr().out
    for rel in SCAFFOLD:
        assert (tmp_path / "app" / rel).is_file()
    assert "agora-agent serve agent_config:config --reload" in out
    (tmp_path / "app" / "agent_tools" / "tickets.py").write_text("# mine\n")
    assert main(["init", str(tmp_path / "app")]) == 1
    err = capsys.readouterr().err
    assert "refusing to overwrite existing files" in err and "agent_config.py" in err
    assert (tmp_path / "app" / "agent_tools" / "tickets.py").read_text() == "# mine\n"


def test_the_scaffold_builds_an_app_with_both_tools(tmp_path: Path) -> None:
    assert main(["init", str(tmp_path)]) == 0
    code = (
        "from agora_agent.cli.serve import build_app, load_target\n"
        "from fastapi.testclient import TestClient\n"
        "app = build_app(load_target('agent_config:config'))\n"
        "service = app.state.agent_service\n"
        "print(sorted(s.name for s in service.registry.specs()))\n"
        "print([p for r in app.routes if (p := getattr(r, 'path', '')).endswith(('/ui', '/dashboard'))])\n"
    )
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-not-used", "AGORA_MODEL": ""}  # no request is made
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert "['close_ticket', 'list_tickets']" in done.stdout
    assert "['/agent/ui', '/agent/dashboard']" in done.stdout


@pytest.mark.parametrize(
    ("target", "message"),
    [
        ("no_such_module:config", 'cannot import "no_such_module": no module named "no_such_module"'),
        ("json:nope", 'module "json" has no attribute "nope"'),
        ("json", 'expected MODULE:ATTR (e.g. agent_config:config), got "json"'),
        ("json:dumps", '"json:dumps" is a function, expected an AgentConfig, an AgentService or an ASGI app'),
    ],
)
def test_serve_names_what_was_not_found(target: str, message: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["serve", target]) == 2
    err = capsys.readouterr().err
    assert err == f"agora-agent serve: {message}\n"  # one line, no traceback


def test_serve_reports_a_configuration_error_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "broken_config.py").write_text(
        "from agora_agent import AgentConfig\nconfig = AgentConfig(model='nosuchvendor:model')\n"
    )
    monkeypatch.chdir(tmp_path)
    assert main(["serve", "broken_config:config"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("agora-agent serve: ") and "nosuchvendor" in err and err.count("\n") == 1


def test_demo_refuses_a_busy_port(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        assert main(["demo", "--port", str(port), "--db", str(tmp_path / "d.db")]) == 2
    assert f"port {port} on 127.0.0.1 is in use" in capsys.readouterr().err
