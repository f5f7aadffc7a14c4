"""The real AI SDK and AG-UI clients (Node) against a live agora-agent app on uvicorn (127.0.0.1).

The npm packages are pinned in tests/frontends/package-lock.json and installed here with `npm ci` into
tests/frontends/node_modules (git-ignored) when that tree is missing or older than the lock file.
Without Node and npm these tests skip, except under CI=true, where they fail.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from pydantic import BaseModel

from agora_agent import ActionTool, AgentConfig, AgentDefinition, ToolContext, tool
from agora_agent.actors import HeaderActorResolver
from agora_agent.messages import ModelRequest
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest
from agora_agent.web import create_app
from tests.web.conftest import serve_in_thread

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
    # One `npm ci` at a time: under pytest-xdist each worker process runs this session fixture.
    guard = Path(tempfile.gettempdir()) / f"agora-frontends-npm-{hashlib.sha256(bytes(HERE)).hexdigest()[:12]}.lock"
    with open(guard, "w") as held:
        fcntl.flock(held, fcntl.LOCK_EX)
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


def run_node(node_bin: str, script: str, plan: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Run one driver script with `plan`; returns its snapshots by scenario name."""
    done = subprocess.run(
        [node_bin, str(HERE / script), json.dumps(plan)],
        cwd=HERE,
        capture_output=True,
        timeout=NODE_TIMEOUT,
        check=False,
        env={**os.environ, "SUPPRESS_TRANSFORMATION_WARNINGS": "true"},
    )
    assert done.returncode == 0, f"node {script} exited {done.returncode}:\n{done.stderr.decode()[-3000:]}"
    result: dict[str, list[dict[str, Any]]] = json.loads(done.stdout)
    return result


# -- the app under test ------------------------------------------------------------------------------


@tool
async def lookup_order(order_id: int, ctx: ToolContext) -> dict[str, Any]:
    """Look up an order by id."""
    return {"order_id": order_id, "status": "shipped"}


@tool
async def show_chart(metric: str, ctx: ToolContext) -> dict[str, Any]:
    """Show a chart of a metric."""
    await ctx.emit_component("chart", {"id": "chart-1", "loading": True})
    await ctx.emit_component("chart", {"id": "chart-1", "metric": metric, "points": [1, 2, 3]})
    return {"shown": metric}


class RefundInput(BaseModel):
    order_id: int
    amount: float


REFUNDS: list[tuple[int, float, str]] = []
"""Every refund the current `app_url` app executed: (order id, amount, actor). Emptied when an app starts, so
a module whose fixtures are set up again in the same process (pytest-xdist may split a module between
workers and hand part of it back) counts only its own run of the scenarios."""


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
    if request.system.startswith("You analyse"):  # the sub-agent: one read tool call, then its answer
        if request.messages[-1].role == "user":
            return ScriptedTurn(tool_calls=[ToolCallRequest(name="lookup_order", input={"order_id": 9})])
        return ScriptedTurn(text="Sales are up 12%.")
    last_user = max(i for i, m in enumerate(request.messages) if m.role == "user")
    text = request.messages[last_user].content
    step = sum(1 for m in request.messages[last_user:] if m.role == "assistant")
    usd = 0.0015
    if "refund" in text:
        if step == 0:
            order = re.search(r"order (\d+)", text)
            # "in full" asks for an integral float: JSON 3.0, which a JavaScript client sends back as 3.
            args = {"order_id": int(order.group(1)) if order else 1, "amount": 3.0 if "in full" in text else 2.5}
            call = ToolCallRequest(name="refund_order", input=args, id=f"refund-{len(request.messages)}")
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


@pytest.fixture(scope="module")
def app_url() -> Iterator[str]:
    """A live app (uvicorn in its own thread, 127.0.0.1, a free port) with the scripted model, shared by a
    module's scenarios (each uses its own chat); yields the base URL."""
    analyst = AgentDefinition(name="analyst", system_prompt="You analyse sales.", tools=("lookup_order",))
    config = AgentConfig(
        model=FakeModel(script),
        actor_resolver=HeaderActorResolver(),
        tools=[lookup_order, show_chart, RefundOrder],
        default_agent=AgentDefinition(delegates_to=("analyst",)),
        agents=[analyst],
        dashboard=False,
    )
    REFUNDS.clear()
    with serve_in_thread(create_app(config)) as url:
        yield url


def refunds(order_id: int) -> list[tuple[int, float, str]]:
    """The refunds executed for one order (each scenario refunds its own order number)."""
    return [r for r in REFUNDS if r[0] == order_id]


def thread_detail(url: str, thread_id: str, headers: dict[str, str] = ALICE) -> dict[str, Any]:
    """GET {prefix}/threads/{id}: the messages and the tool-call audit rows, as the owner sees them."""
    response = httpx2.get(f"{url}/agent/threads/{thread_id}", headers=headers, timeout=10)
    assert response.status_code == 200, response.text
    detail: dict[str, Any] = response.json()
    return detail
