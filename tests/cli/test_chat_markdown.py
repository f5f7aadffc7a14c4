"""The terminal chat draws replies as Markdown (rich) and never lets a reply drive the terminal."""

from __future__ import annotations

import io

from rich.console import Console
from typer.testing import CliRunner

from agora_agent.cli import app as cli_app
from agora_agent.cli.chat import ReplyText
from agora_agent.testing import ScriptedTurn, ToolCallRequest, sequence_script
from agora_agent.web import create_app
from tests.web.conftest import make_config, serve_in_thread

ANSWER = (
    "## Your orders\n\nOrder **1001** has *shipped*.\n\n"
    "| id | total |\n|---|---|\n| 1001 | 149.00 |\n\n"
    "```python\nprint('tracking')\n```\n"
)
HOSTILE = "Fine \x1b]0;pwned\x07\x1b[2Jthen\x08 done.\n"


def draw(text: str, *, markdown: bool, chunk: int = 3) -> str:
    """Stream `text` in small deltas the way frames arrive; what a (non-terminal) console ends up with."""
    out = io.StringIO()
    reply = ReplyText(Console(file=out, width=60, color_system=None), markdown=markdown)
    for i in range(0, len(text), chunk):
        reply.add(text[i : i + chunk])
    reply.close()
    return out.getvalue()


def test_markdown_is_drawn_not_shown_as_source() -> None:
    drawn = draw(ANSWER, markdown=True)
    assert "Your orders" in drawn and "##" not in drawn
    assert "Order 1001 has shipped." in drawn and "**" not in drawn  # emphasis rendered, markers gone
    assert "─" in drawn and "1001" in drawn and "|---|" not in drawn  # a drawn table
    assert "print('tracking')" in drawn and "```" not in drawn  # a code block
    assert drawn.count("Your orders") == 1 and drawn.count("print('tracking')") == 1  # each block once


def test_plain_mode_prints_the_text_as_it_came() -> None:
    assert draw(ANSWER, markdown=False) == ANSWER


def test_a_reply_cannot_send_terminal_control_sequences() -> None:
    for markdown in (True, False):
        drawn = draw(HOSTILE, markdown=markdown)
        assert "\x1b" not in drawn and "\x07" not in drawn and "\x08" not in drawn
        assert "Fine" in drawn and "done." in drawn


def test_the_terminal_chat_renders_markdown_around_tool_lines() -> None:
    script = sequence_script(
        ScriptedTurn(text=ANSWER, tool_calls=[ToolCallRequest("lookup_order", {"order_id": 1001})]),
        ScriptedTurn(text="All **done**."),
    )
    with serve_in_thread(create_app(make_config(script))) as url:
        args = ["chat", "--url", url, "--actor", "alice", "--roles", "support", "-m", "my orders"]
        drawn = CliRunner().invoke(cli_app, [*args, "--markdown"])
        plain = CliRunner().invoke(cli_app, [*args, "--plain"])
    assert drawn.exit_code == 0 and plain.exit_code == 0, drawn.output + plain.output
    out = drawn.stdout
    assert "**" not in out and "|---|" not in out and "─" in out
    assert out.index("Your orders") < out.index("lookup_order · executed") < out.index("All done.")
    assert "## Your orders" in plain.stdout and "All **done**." in plain.stdout  # a pipe gets the source
