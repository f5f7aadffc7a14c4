"""`agora-agent chat`: streams text, shows tool calls, asks y/n for approvals; one-line errors."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from agora_agent.cli import app
from agora_agent.web import create_app

from .conftest import make_config, refund_script, serve_in_thread


def run(*args: str, input: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, ["chat", *args], input=input)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.slow
def test_chat_approves_on_y_and_the_run_finishes() -> None:
    the_app = create_app(make_config(refund_script()))
    with serve_in_thread(the_app) as url:
        code, out, err = run(
            "--url", url, "--actor", "alice", "--roles", "support", "-m", "refund order 1", input="y\n"
        )
    assert (code, err) == (0, "")
    assert "Checking." in out and "Refund done." in out
    assert "refund_order · pending_approval" in out and "Approve refund_order(" in out
    assert "refund_order · approved" in out and "refund_order · executed" in out


@pytest.mark.slow
def test_chat_rejects_on_n_and_interactive_loop_ends_on_eof() -> None:
    the_app = create_app(make_config(refund_script()))
    with serve_in_thread(the_app) as url:
        code, out, _ = run("--url", url, "--actor", "alice", "--roles", "support", input="refund order 1\nn\n")
    assert code == 0
    assert "refund_order · rejected" in out and "refund_order · executed" not in out


def test_errors_are_one_line_and_non_zero() -> None:
    the_app = create_app(make_config())
    with serve_in_thread(the_app) as url:
        code, _, err = run("--url", url, "--actor", "alice", "--agent", "nope", "-m", "hi")
        assert code == 1 and err.strip() == 'agora-agent chat: HTTP 404: unknown agent "nope" (known: default)'
    code, _, err = run("--url", "http://127.0.0.1:9", "--actor", "alice", "-m", "hi")
    assert code == 1 and err.startswith("agora-agent chat: cannot reach http://127.0.0.1:9") and err.count("\n") == 1
