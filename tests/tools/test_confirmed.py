"""Confirmed tools (LATER-CONF-01..03): preview + signed token, then a single-use commit, in chat and in SQL."""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from agora_agent import Actor, AgentConfig, AgentService, ToolContext
from agora_agent.errors import ConfigurationError
from agora_agent.messages import ModelRequest
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest
from agora_agent.testing.helpers import OBSERVER
from agora_agent.tools.confirmed import ConfirmationRefusedError, ConfirmedTool, confirmed_tool

pytestmark = pytest.mark.ref("LATER-CONF-01", "LATER-CONF-02", "LATER-CONF-03", "MCP-14")

SECRET = "a-test-secret-of-some-length"
ALICE = Actor("alice", ("support",), "acme")
MALLORY = Actor("mallory", ("support",), "acme")
ALICE_OTHER_TENANT = Actor("alice", ("support",), "globex")


class CancelInput(BaseModel):
    order_id: int


def make_tool(log: list[int], *, ttl: timedelta = timedelta(minutes=15)) -> ConfirmedTool:
    def prepare(args: CancelInput, ctx: ToolContext) -> dict[str, Any]:
        if args.order_id == 404:
            raise ValueError("no such order")
        return {"order_id": args.order_id, "tenant": ctx.actor.tenant_ref}

    def preview(prepared: dict[str, Any]) -> dict[str, Any]:
        return {"summary": f"cancel order {prepared['order_id']}", "data": prepared}

    async def commit(prepared: dict[str, Any]) -> dict[str, Any]:
        log.append(prepared["order_id"])
        return {"summary": f"order {prepared['order_id']} cancelled", "data": prepared}

    return confirmed_tool(
        name="cancel_order",
        description="Cancel an order.",
        input=CancelInput,
        prepare=prepare,
        preview=preview,
        commit=commit,
        secret=SECRET,
        ttl=ttl,
    )


async def call(service: AgentService, actor: Actor, args: dict[str, Any]) -> Any:
    ctx = ToolContext(actor=actor)
    return await service.registry.invoke("cancel_order", args, ctx, policy=service.policy)


async def test_preview_then_commit_once_and_every_refusal_has_a_reason() -> None:
    log: list[int] = []
    config = AgentConfig(model=FakeModel(lambda r, i: ScriptedTurn(text="ok")), tools=[make_tool(log)])
    async with AgentService.from_config(config) as service:
        first = await call(service, ALICE, {"order_id": 7})
        assert first["status"] == "preview" and first["preview"]["summary"] == "cancel order 7" and log == []
        token = first["confirmToken"]
        with pytest.raises(ConfirmationRefusedError) as refused:
            await call(service, MALLORY, {"order_id": 7, "confirm": True, "confirmToken": token})
        assert refused.value.reason == "other_caller"
        with pytest.raises(ConfirmationRefusedError) as refused:
            await call(service, ALICE_OTHER_TENANT, {"order_id": 7, "confirm": True, "confirmToken": token})
        assert refused.value.reason == "other_caller"
        with pytest.raises(ConfirmationRefusedError) as refused:
            await call(service, ALICE, {"order_id": 8, "confirm": True, "confirmToken": token})
        assert refused.value.reason == "arguments_changed"
        with pytest.raises(ConfirmationRefusedError) as refused:
            await call(service, ALICE, {"order_id": 7, "confirm": True, "confirmToken": token[:-3] + "abc"})
        assert refused.value.reason == "invalid"
        with pytest.raises(ConfirmationRefusedError) as refused:
            await call(service, ALICE, {"order_id": 7, "confirm": True})
        assert refused.value.reason == "missing"
        done = await call(service, ALICE, {"order_id": 7, "confirm": True, "confirmToken": token})
        assert done == {
            "status": "committed",
            "result": {"summary": "order 7 cancelled", "data": done["result"]["data"]},
        }
        with pytest.raises(ConfirmationRefusedError) as refused:
            await call(service, ALICE, {"order_id": 7, "confirm": True, "confirmToken": token})
        assert refused.value.reason == "used"
        with pytest.raises(ValueError) as refused:  # prepare refuses before any preview
            await call(service, ALICE, {"order_id": 404})
        assert not isinstance(refused.value, ConfirmationRefusedError)  # the tool's own error, not a token refusal
    assert log == [7]


async def test_an_expired_token_is_refused() -> None:
    log: list[int] = []
    config = AgentConfig(
        model=FakeModel(lambda r, i: ScriptedTurn(text="ok")), tools=[make_tool(log, ttl=timedelta(milliseconds=50))]
    )
    async with AgentService.from_config(config) as service:
        token = (await call(service, ALICE, {"order_id": 1}))["confirmToken"]
        await asyncio.sleep(0.1)
        with pytest.raises(ConfirmationRefusedError) as refused:
            await call(service, ALICE, {"order_id": 1, "confirm": True, "confirmToken": token})
        assert refused.value.reason == "expired"
    assert log == []


def two_step_script(request: ModelRequest, turn: int) -> ScriptedTurn:
    """The model previews, reads the token from the tool result, then confirms (as a user would have asked)."""
    if turn == 0:
        return ScriptedTurn(text="Preview: ", tool_calls=[ToolCallRequest(name="cancel_order", input={"order_id": 5})])
    if turn == 1:
        result = json.loads(request.messages[-1].tool_results[0].content)
        args = {"order_id": 5, "confirm": True, "confirmToken": result["confirmToken"]}
        return ScriptedTurn(text="Confirming. ", tool_calls=[ToolCallRequest(name="cancel_order", input=args)])
    return ScriptedTurn(text="Cancelled.")


async def test_usable_from_chat_with_single_use_in_the_sql_store(tmp_path: Path) -> None:
    log: list[int] = []
    tool = make_tool(log)
    schema = tool.spec.json_schema()
    assert {"order_id", "confirm", "confirmToken"} <= set(schema["properties"])
    config = AgentConfig(model=FakeModel(two_step_script), tools=[tool], store=f"sqlite:///{tmp_path / 'a.db'}")
    async with AgentService.from_config(config) as service:
        started = await service.chat(ALICE, "cancel order 5")
        run = await service.wait_for_run(OBSERVER, started.run_id, timeout=20)
        rows = await service.store.list_tool_calls(run_id=started.run_id)
        assert run.status == "completed" and [r.status for r in rows] == ["executed", "executed"]
        assert rows[1].output["status"] == "committed" and log == [5]
        token = rows[1].input["confirmToken"]
    # Another process on the same database: the token is already used there too.
    config = AgentConfig(
        model=FakeModel(two_step_script), tools=[make_tool(log)], store=f"sqlite:///{tmp_path / 'a.db'}"
    )
    async with AgentService.from_config(config) as service:
        with pytest.raises(ConfirmationRefusedError) as refused:
            await call(service, ALICE, {"order_id": 5, "confirm": True, "confirmToken": token})
        assert refused.value.reason == "used"
    assert log == [5]


def test_a_secret_is_required_and_the_input_may_not_clash() -> None:
    kwargs: dict[str, Any] = {
        "name": "t",
        "description": "d",
        "prepare": lambda a, c: a,
        "preview": lambda p: p,
        "commit": lambda p: p,
    }
    with pytest.raises(ConfigurationError) as no_secret:
        confirmed_tool(input=CancelInput, secret="", **kwargs)
    assert no_secret.value.option == "secret"

    class Clash(BaseModel):
        confirm: bool

    with pytest.raises(ConfigurationError) as clash:
        confirmed_tool(input=Clash, secret=SECRET, **kwargs)
    assert clash.value.option == "input" and "confirm" in str(clash.value)
