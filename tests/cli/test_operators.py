"""`agora-agent runs list|show` and `agora-agent approvals list|approve|reject` against a real server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from agora_agent import AgentDefinition
from agora_agent.cli import main
from agora_agent.testing import FakeModel, wait_for_tool_status
from agora_agent.testing.helpers import OBSERVER
from agora_agent.web import create_app
from tests.observability.conftest import serve, web_config
from tests.observability.test_events import ALICE, QuickRefund, Refund, lookup, script

ADMIN_ARGS = ["--actor", "root", "--roles", "admin"]


async def cli(*args: str) -> int:
    return await asyncio.to_thread(main, list(args))


async def test_operators_list_inspect_and_decide_through_the_governance_api(capsys: pytest.CaptureFixture[str]) -> None:
    config = web_config(
        model=FakeModel(script),
        tools=[lookup, Refund, QuickRefund],
        default_agent=AgentDefinition(delegates_to=("billing",)),
        agents=[AgentDefinition(name="billing", system_prompt="You answer billing questions.")],
    )
    app = create_app(config)
    service: Any = app.state.agent_service
    async with serve(app) as base:
        started = await service.chat(ALICE, "full")
        await wait_for_tool_status(service, started.run_id)
        capsys.readouterr()

        assert await cli("approvals", "list", "--server", base, *ADMIN_ARGS) == 0
        out = capsys.readouterr().out
        assert "c-act" in out and "refund" in out and "alice" in out

        assert await cli("approvals", "approve", started.run_id, "c-act", "--server", base, *ADMIN_ARGS) == 0
        assert "approved" in capsys.readouterr().out
        await service.wait_for_run(OBSERVER, started.run_id)

        assert await cli("runs", "list", "--server", base, *ADMIN_ARGS, "--status", "completed") == 0
        out = capsys.readouterr().out
        assert started.run_id in out and "completed" in out

        assert await cli("runs", "show", started.run_id, "--server", base, *ADMIN_ARGS) == 0
        out = capsys.readouterr().out
        assert "approval" in out and "requested by alice · decided by root" in out
        assert "delegation" in out and "ask_billing" in out and "↳ run" in out

        rejected = await service.chat(ALICE, "reject")
        await wait_for_tool_status(service, rejected.run_id)
        args = ("approvals", "reject", rejected.run_id, "c-rej", "--server", base, "--reason", "no", *ADMIN_ARGS)
        assert await cli(*args) == 0
        assert "rejected" in capsys.readouterr().out
        assert await cli(*args) == 1  # already decided: one line, exit 1
        assert "HTTP 409" in capsys.readouterr().err

        assert await cli("runs", "list", "--server", base, "--actor", "bob", "--roles", "member") == 1
        err = capsys.readouterr().err
        assert "HTTP 403" in err and "governance_authorize refused" in err and "Traceback" not in err
        assert await cli("runs", "show", "nope", "--server", base, *ADMIN_ARGS) == 1
        assert "HTTP 404" in capsys.readouterr().err


def test_bad_input_is_one_line_and_exit_1(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["runs", "list", "--server", "localhost:1", *ADMIN_ARGS]) == 1
    assert "--server must be an http(s) URL" in capsys.readouterr().err
    assert main(["runs", "list", "--server", "http://127.0.0.1:9", *ADMIN_ARGS]) == 1
    assert "cannot reach http://127.0.0.1:9/agent" in capsys.readouterr().err
    assert main(["approvals", "list", "--server", "http://127.0.0.1:9", "-H", "nocolon"]) == 1
    assert "--header must look like 'Name: value'" in capsys.readouterr().err
