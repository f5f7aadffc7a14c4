"""The new-user path (issue #17), tried as a new user would: one-line errors, the terminal chat's keys,
`serve` twice on one port, `AGORA_MODEL_BASE_URL`, and the README's "Your own app" commands verbatim."""

from __future__ import annotations

import os
import re
import shlex
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import httpx2
import pytest

from agora_agent.cli import main
from agora_agent.cli.chat import split_url
from tests.web.conftest import ALICE, make_config, refund_script, serve_in_thread

ROOT = Path(__file__).resolve().parents[2]
CLI = [sys.executable, "-c", "from agora_agent.cli import run; run()"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def one_line_error(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip()
    assert "Traceback" not in err and len([line for line in err.splitlines() if line.strip()]) <= 3, err
    return err


@pytest.mark.parametrize(
    ("argv", "code", "fragment"),
    [
        (["serve", "x:config", "--port", "99999"], 2, "65535"),
        (["demo", "--port", "99999"], 2, "65535"),
        (["demo", "--log-level", "loud"], 2, "--log-level 'loud' is not one of"),
        (["serve", "x:config", "--log-level", "loud"], 2, "is not one of"),
        (["init", "/proc/no/such/place"], 1, "agora-agent init: cannot write"),
    ],
)
def test_mistakes_are_one_line(argv: list[str], code: int, fragment: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(argv) == code
    assert fragment in one_line_error(capsys)


def test_a_sqlite_file_in_a_missing_directory_is_created(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = f"sqlite:///{tmp_path}/not/yet/there/agent.db"
    assert main(["prices", "sync", "--url", url]) == 0, capsys.readouterr().err
    assert (tmp_path / "not/yet/there/agent.db").exists()


def test_model_base_url_is_honoured_and_never_ignored(monkeypatch: pytest.MonkeyPatch) -> None:
    from agora_agent import AgentConfig, AgentService
    from agora_agent.errors import ConfigurationError
    from agora_agent.models.infer import model_from_env

    monkeypatch.setenv("AGORA_MODEL_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.delenv("AGORA_MODEL", raising=False)
    with pytest.raises(ConfigurationError) as unset:
        model_from_env()  # the demo no longer falls back to the offline model silently
    assert unset.value.option == "AGORA_MODEL"
    service = AgentService.from_config(AgentConfig(model="openai:local-model"))  # what the scaffold writes
    assert "127.0.0.1:9" in repr(service.model)


def test_chat_url_accepts_the_server_or_the_agent_base() -> None:
    assert split_url("http://127.0.0.1:8000") == ("http://127.0.0.1:8000", "/agent")
    assert split_url("http://127.0.0.1:8000/agent") == ("http://127.0.0.1:8000", "/agent")
    assert split_url("http://h:1/api/bot/") == ("http://h:1", "/api/bot")


@pytest.mark.slow
def test_terminal_chat_keys_and_thread_resume() -> None:
    from typer.testing import CliRunner

    from agora_agent.cli import app as cli_app
    from agora_agent.web import create_app

    the_app = create_app(make_config(refund_script()))
    with serve_in_thread(the_app) as url:
        agent_url = f"{url}/agent"
        # An empty line asks again (it does not quit silently); /help and /quit are shown and work.
        result = CliRunner().invoke(
            cli_app, ["chat", "--url", agent_url, "--actor", "alice", "--roles", "support"], input="\n/help\n/quit\n"
        )
        assert result.exit_code == 0, result.output
        assert result.stdout.count("/quit") >= 2 and "you>" in result.stdout

        # A chat left waiting: --thread shows its pending approval and decides it.
        service = the_app.state.agent_service
        with httpx2.stream(
            "POST", f"{agent_url}/chat", json={"message": "refund order 1"}, headers=ALICE, timeout=10
        ) as started:
            thread_id = started.headers["x-agent-thread-id"]
            for line in started.iter_lines():
                if "pending_approval" in line:
                    break  # parked: the terminal is closed, the approval is left waiting
        result = CliRunner().invoke(
            cli_app,
            ["chat", "--url", url, "--actor", "alice", "--roles", "support", "--thread", thread_id],
            input="y\n/quit\n",
        )
        assert result.exit_code == 0, result.output
        assert "refund_order · pending_approval" in result.stdout
        mine = httpx2.get(f"{agent_url}/approvals/mine", headers=ALICE).json()
        assert mine == [] and service is not None
        assert "refund_order · executed" in result.stdout or "Refund done." in result.stdout


@pytest.mark.slow
def test_ctrl_c_at_the_approve_prompt_rejects_and_leaves_with_one_line() -> None:
    from agora_agent.web import create_app

    the_app = create_app(make_config(refund_script()))
    with serve_in_thread(the_app) as url:
        child = subprocess.Popen(
            [*CLI, "chat", "--url", url, "--actor", "alice", "--roles", "support", "-m", "refund order 1"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        assert child.stdout is not None
        seen = ""
        deadline = time.monotonic() + 30
        while "Approve refund_order" not in seen and time.monotonic() < deadline:
            seen += child.stdout.read(1)
        time.sleep(0.3)
        child.send_signal(signal.SIGINT)
        out, err = child.communicate(timeout=15)
        assert "interrupted: rejected" in seen + out
        assert "Traceback" not in err and len(err.strip().splitlines()) <= 1, err
        mine = httpx2.get(f"{url}/agent/approvals/mine", headers=ALICE).json()
        assert mine == []  # decided, not left pending


@pytest.mark.slow
@pytest.mark.parametrize("extra", [[], ["--reload"]], ids=["plain", "reload"])
def test_serve_twice_on_one_port_fails_before_touching_the_store(tmp_path: Path, extra: list[str]) -> None:
    """With `--reload` too: the reloader serves the socket `serve` bound itself (TCP_NODELAY, see test_net)."""
    (tmp_path / "cfg.py").write_text(
        "from agora_agent import AgentConfig\n"
        "from agora_agent.actors import HeaderActorResolver\n"
        "from tests.web.conftest import RefundOrder, refund_script\n"
        "from agora_agent.testing import FakeModel\n"
        "config = AgentConfig(model=FakeModel(refund_script()), tools=[RefundOrder], store='sqlite:///agent.db',\n"
        "                     actor_resolver=HeaderActorResolver())\n"
    )
    port = free_port()
    env = {**os.environ, "PYTHONPATH": f"{ROOT}{os.pathsep}{os.environ.get('PYTHONPATH', '')}"}
    serve = [*CLI, "serve", "cfg:config", "--port", str(port), "--log-level", "warning", *extra]
    first = subprocess.Popen(serve, cwd=tmp_path, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        base = f"http://127.0.0.1:{port}/agent"
        for _ in range(100):
            try:
                httpx2.get(f"{base}/quota/today", headers=ALICE, timeout=1)
                break
            except httpx2.TransportError:
                time.sleep(0.1)
        with httpx2.stream("POST", f"{base}/chat", json={"message": "refund"}, headers=ALICE, timeout=10) as r:
            for line in r.iter_lines():
                if "pending_approval" in line:
                    break
        second = subprocess.run(serve, cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60)
        assert second.returncode == 2 and "is in use" in second.stderr and "Traceback" not in second.stderr
        mine = httpx2.get(f"{base}/approvals/mine", headers=ALICE, timeout=5).json()
        assert len(mine) == 1  # the live server's approval is still pending
    finally:
        first.send_signal(signal.SIGINT)
        first.wait(15)


def _readme_block(title: str) -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split(f"## {title}", 1)[1]
    block = section.split("```console", 1)[1].split("```", 1)[0]
    return [line[2:].split("  #")[0].strip() for line in block.splitlines() if line.startswith("$ ")]


@pytest.mark.slow
def test_the_readmes_your_own_app_commands_run_verbatim(tmp_path: Path) -> None:
    """Each command of README "Your own app", as written (the model is pointed at nothing: no key needed
    until a chat is sent, and the chat here only checks the server and the identity, then quits)."""
    commands = _readme_block("Your own app")
    assert commands and commands[0].startswith("agora-agent init")
    cwd = tmp_path
    port = free_port()
    env = {**os.environ, "OPENAI_API_KEY": "sk-test-not-used", "AGORA_DATABASE_URL": ""}
    server: subprocess.Popen[str] | None = None
    try:
        for command in commands:
            if command.startswith("cd "):
                cwd = cwd / command[3:].strip()
                continue
            argv = [*CLI, *shlex.split(command)[1:]]
            argv = [a.replace("8000", str(port)) for a in argv]
            if command.startswith("agora-agent serve"):
                server = subprocess.Popen([*argv, "--port", str(port)], cwd=cwd, env=env, text=True)
                for _ in range(150):
                    try:
                        httpx2.get(f"http://127.0.0.1:{port}/agent/quota/today", timeout=1)
                        break
                    except httpx2.TransportError:
                        time.sleep(0.1)
                continue
            done = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True, timeout=120, input="/quit\n")
            assert done.returncode == 0, (command, done.stdout[-500:], done.stderr[-500:])
            if command.startswith("agora-agent init"):
                written = re.findall(r"created (\S+)", done.stdout)
                assert written, done.stdout
    finally:
        if server is not None:
            server.send_signal(signal.SIGINT)
            server.wait(15)
    assert server is not None and server.returncode in (0, 130, -signal.SIGINT)
