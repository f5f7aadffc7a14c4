"""The real AI SDK and AG-UI clients (Node) against a live agora-agent app on uvicorn (127.0.0.1).

The npm packages are pinned in tests/frontends/package-lock.json and installed here with `npm ci` into
tests/frontends/node_modules (git-ignored) when that tree is missing or older than the lock file.
Without Node and npm these tests skip, except under CI=true, where they fail.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
import pytest_asyncio
from pydantic import BaseModel

from agora_agent import ActionTool, AgentConfig, AgentDefinition, ToolContext, tool
from agora_agent.actors import HeaderActorResolver
from agora_agent.messages import ModelRequest
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest
from agora_agent.web import create_app
from tests.web.conftest import serve

HERE = Path(__file__).resolve().parent
NODE_TIMEOUT = 60


def _need(tool_name: str) -> str:
    found = shutil.which(tool_name)
    if found is None:
        message = f"{tool_name} is not installed (the frontend tests run the real npm clients under Node)"
        if os.environ.get("CI") == "true":
            pytest.fail(message)
        pytest.skip(message)
    return found


@pytest.fixture(scope="session")
def node() -> str:
    """The `node` binary, with the pinned npm packages installed (npm ci) next to the scripts."""
    node_bin = _need("node")
    npm = _need("npm")
    lock = HERE / "package-lock.json"
    installed = HERE / "node_modules" / ".package-lock.json"
    if not installed.exists() or installed.stat().st_mtime < lock.stat().st_mtime:
        done = subprocess.run(
            [npm, "ci", "--no-audit", "--no-fund", "--loglevel=error"],
            cwd=HERE,
            capture_output=True,
            text=True,
            timeout=300,
            check=False,
        )
        if done.returncode != 0:
            pytest.fail(f"npm ci failed in {HERE}:\n{done.stderr[-2000:]}")
    return node_bin


async def run_node(node_bin: str, script: str, plan: dict[str, Any]) -> list[dict[str, Any]]:
    """Run one driver script with `plan`; returns its snapshots (one per step)."""
    proc = await asyncio.create_subprocess_exec(
        node_bin,
        str(HERE / script),
        json.dumps(plan),
        cwd=HERE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "SUPPRESS_TRANSFORMATION_WARNINGS": "true"},
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), NODE_TIMEOUT)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    assert proc.returncode == 0, f"node {script} exited {proc.returncode}:\n{err.decode()[-3000:]}"
    result: list[dict[str, Any]] = json.loads(out)
    return result


# -- the app under test ------------------------------------------------------------------------------


@tool
async def lookup_order(order_id: int, ctx: ToolContext) -> dict[str, Any]:
    """Look up an order by id."""
    return {"order_id": order_id, "status": "shipped"}


@tool
async def show_chart(metric: str, ctx: ToolContext) -> dict[str, Any]:
    """Show a chart of a metric."""
    await ctx.emit_component("chart", {"metric": metric, "points": [1, 2, 3]})
    return {"shown": metric}


class RefundInput(BaseModel):
    order_id: int
    amount: float


REFUNDS: list[tuple[int, float, str]] = []
"""Every refund actually executed: (order id, amount, actor)."""


class RefundOrder(ActionTool):
    """Refund an order (needs approval)."""

    name = "refund_order"
    description = "Refund an order."
    Input = RefundInput
    roles = ("support", "admin")

    async def execute(self, input: RefundInput, ctx: ToolContext) -> dict[str, Any]:
        REFUNDS.append((input.order_id, input.amount, ctx.actor.id))
        return {"refunded": input.order_id, "amount": input.amount}


def script(request: ModelRequest, turn_index: int) -> ScriptedTurn:
    """Answers by the last user message; `step` = model turns since that message."""
    if request.system.startswith("You analyse"):
        return ScriptedTurn(text="Sales are up 12%.")
    last_user = max(i for i, m in enumerate(request.messages) if m.role == "user")
    text = request.messages[last_user].content
    step = sum(1 for m in request.messages[last_user:] if m.role == "assistant")
    usd = 0.0015
    if "refund" in text:
        if step == 0:
            call = ToolCallRequest(
                name="refund_order", input={"order_id": 1, "amount": 2.5}, id=f"refund-{len(request.messages)}"
            )
            return ScriptedTurn(text="Checking. ", tool_calls=[call], cost_usd=usd)
        result = request.messages[-1].tool_results[0]
        return ScriptedTurn(text="Refund not done." if result.is_error else "Refund done.", cost_usd=usd)
    if "lookup" in text:
        if step == 0:
            return ScriptedTurn(tool_calls=[ToolCallRequest(name="lookup_order", input={"order_id": 7})], cost_usd=usd)
        return ScriptedTurn(text="Order 7 has shipped.", cost_usd=usd)
    if "chart" in text:
        if step == 0:
            return ScriptedTurn(tool_calls=[ToolCallRequest(name="show_chart", input={"metric": "sales"})])
        return ScriptedTurn(text="Here is the chart.")
    if "analyst" in text:
        if step == 0:
            return ScriptedTurn(tool_calls=[ToolCallRequest(name="ask_analyst", input={"task": "sales trend?"})])
        return ScriptedTurn(text="The analyst says sales are up.")
    if "boom" in text:
        raise RuntimeError("the model fell over")
    return ScriptedTurn(text="Hello there, friend.", cost_usd=usd)


def hdr(actor: str, roles: str = "support") -> dict[str, str]:
    return {"x-actor-id": actor, "x-actor-role": roles}


ALICE = hdr("alice")
BOB = hdr("bob")


@pytest_asyncio.fixture
async def app_url() -> AsyncIterator[tuple[str, Any]]:
    """A live app (uvicorn, 127.0.0.1, free port) with the scripted model; yields (base URL, service)."""
    REFUNDS.clear()
    analyst = AgentDefinition(name="analyst", system_prompt="You analyse sales.", tools=())
    config = AgentConfig(
        model=FakeModel(script),
        actor_resolver=HeaderActorResolver(),
        tools=[lookup_order, show_chart, RefundOrder],
        default_agent=AgentDefinition(delegates_to=("analyst",)),
        agents=[analyst],
    )
    app = create_app(config)
    async with serve(app) as url:
        yield url, app.state.agent_service


NodeRunner = Callable[[str, dict[str, Any]], Any]


@pytest.fixture
def ai_sdk(node: str, app_url: tuple[str, Any]) -> Callable[..., Any]:
    """`await ai_sdk(steps, chat_id=..., headers=...)` -> snapshots from the AI SDK driver."""
    url = app_url[0]

    async def go(steps: list[dict[str, Any]], *, chat_id: str, headers: dict[str, str] | None = None) -> Any:
        plan = {"api": f"{url}/agent/ai-sdk/chat", "chatId": chat_id, "headers": headers or ALICE, "steps": steps}
        return await run_node(node, "ai_sdk.mjs", plan)

    return go


@pytest.fixture
def agui(node: str, app_url: tuple[str, Any]) -> Callable[..., Any]:
    """`await agui(steps, thread_id=..., headers=...)` -> snapshots from the AG-UI driver."""
    url = app_url[0]

    async def go(steps: list[dict[str, Any]], *, thread_id: str, headers: dict[str, str] | None = None) -> Any:
        plan = {"url": f"{url}/agent/ag-ui", "threadId": thread_id, "headers": headers or ALICE, "steps": steps}
        return await run_node(node, "agui.mjs", plan)

    return go
