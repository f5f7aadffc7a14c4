"""`agora-agent` usage errors: one message and exit code 2, never a traceback."""

from __future__ import annotations

import pytest

from agora_agent.cli import main


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["frobnicate"], "No such command 'frobnicate'"),
        (["prices", "set", "m", "--input", "abc", "--output", "1", "--url", "sqlite:///x.db"], "Invalid value"),
        (["db", "upgrade", "--nope"], "No such option: --nope"),
    ],
)
def test_usage_errors_exit_2_with_one_message(
    argv: list[str], fragment: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert fragment in err and "Traceback" not in err


def test_help_exits_0(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["--help"]) == 0
    assert "demo" in capsys.readouterr().out


def test_chat_fails_before_the_prompt_when_the_server_is_unreachable(capsys: pytest.CaptureFixture[str]) -> None:
    import socket

    with socket.socket() as s:  # a port nothing listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    assert main(["chat", "--url", f"http://127.0.0.1:{port}", "--actor", "alice"]) == 1
    captured = capsys.readouterr()
    assert f"cannot reach http://127.0.0.1:{port}" in captured.err
    assert "you>" not in captured.out
