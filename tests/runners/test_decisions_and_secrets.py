"""Decisions and secrets (issue #17): cancel closes pending approvals; roles are re-checked with the
requester's current identity when an approved action executes; the redactor covers the assistant
message's tool calls and the stream; provider error text never shows a key outside `debug`."""

from __future__ import annotations

import logging
from typing import Any

import pytest

from agora_agent import Actor, AgentConfig, AgentService, ToolContext, tool
from agora_agent.testing import (
    FakeModel,
    ScriptedTurn,
    ToolCallRequest,
    collect_frames,
    sequence_script,
    wait_for_tool_status,
)
from agora_agent.testing.helpers import OBSERVER
from tests.web.conftest import ALICE, asgi_client, make_config, refund_script

SUPPORT = Actor("alice", roles=("support",))
paid: list[dict[str, Any]] = []


@tool(kind="action", roles=["support"])
def pay_card(card: str, amount: int, ctx: ToolContext) -> str:
    """Charge a card."""
    paid.append({"card": card, "amount": amount, "roles": ctx.actor.roles})
    return "charged"


CARD = "4111111111111111"


def card_script() -> Any:
    return sequence_script(
        ScriptedTurn(tool_calls=[ToolCallRequest("pay_card", {"card": CARD, "amount": 3})]),
        ScriptedTurn(text="done"),
    )


def mask_card(name: str, args: dict[str, Any]) -> dict[str, Any]:
    return {**args, "card": "****" + str(args.get("card", ""))[-4:]} if "card" in args else args


async def test_cancel_closes_pending_approvals_and_a_late_approve_is_a_409() -> None:
    async with asgi_client(make_config(refund_script())) as (client, service):
        started = await service.chat(SUPPORT, "refund order 1")
        pending = await wait_for_tool_status(service, started.run_id)
        mine = await client.get("/agent/approvals/mine", headers=ALICE)
        assert [r["toolCallId"] for r in mine.json()] == [pending.tool_call_id]

        cancelled = await client.post(f"/agent/chat/{started.run_id}/cancel", headers=ALICE)
        assert cancelled.status_code == 200, cancelled.text

        late = await client.post(
            "/agent/tool-call/approve",
            json={"runId": started.run_id, "toolCallId": pending.tool_call_id},
            headers=ALICE,
        )
        assert late.status_code == 409 and "the run was cancelled" in late.json()["error"]
        row = await service.store.get_tool_call(started.run_id, pending.tool_call_id)
        approval = await service.store.get_approval(started.run_id, pending.tool_call_id)
        assert row is not None and (row.status, row.error) == ("expired", "the run was cancelled")
        assert approval is not None and approval.status == "expired"
        assert (await client.get("/agent/approvals/mine", headers=ALICE)).json() == []


async def test_roles_revoked_while_parked_are_honoured_when_the_approved_action_executes() -> None:
    paid.clear()
    async with AgentService.from_config(AgentConfig(model=FakeModel(card_script()), tools=[pay_card])) as service:
        started = await service.chat(SUPPORT, "pay")
        pending = await wait_for_tool_status(service, started.run_id)
        revoked = Actor("alice", roles=())  # what the resolver says about alice now
        await service.approve(revoked, started.run_id, pending.tool_call_id)
        await service.wait_for_run(OBSERVER, started.run_id)
        row = await service.store.get_tool_call(started.run_id, pending.tool_call_id)
    assert paid == []  # never executed
    assert row is not None and row.status == "failed" and "pay_card" in (row.error or "")


async def test_the_redactor_covers_stored_tool_calls_the_thread_view_and_the_stream() -> None:
    paid.clear()
    config = make_config(card_script(), tools=[pay_card], redactor=mask_card)
    async with asgi_client(config) as (client, service):
        actor = Actor("alice", roles=("support",))
        started = await service.chat(actor, "pay")
        pending = await wait_for_tool_status(service, started.run_id)
        await service.approve(actor, started.run_id, pending.tool_call_id)
        await service.wait_for_run(OBSERVER, started.run_id)
        frames = await collect_frames(service, started.run_id)
        thread = await client.get(f"/agent/threads/{started.thread_id}", headers=ALICE)
    assert paid and paid[0]["card"] == CARD  # the tool itself gets the real value
    assert CARD not in thread.text and "****1111" in thread.text
    assert all(CARD not in str(f.input) for f in frames.tools)


KEY = "sk-live-9f8e7d6c5b4a39281706AbCdEfGhIjKl"


class LeakyProvider:
    """A provider whose 401 echoes the key (as an echoing proxy does)."""

    model_id = "leaky"

    async def run_turn(self, request: Any, on_text: Any) -> Any:
        from agora_agent.errors import ModelError

        raise ModelError(
            f"401 Unauthorized: Incorrect API key provided: {KEY} (Authorization: Bearer {KEY})", status=401
        )


@pytest.mark.parametrize("debug", [False, True])
async def test_provider_error_text_never_shows_the_key(debug: bool, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO)
    async with AgentService.from_config(AgentConfig(model=LeakyProvider(), debug=debug)) as service:
        started = await service.chat(SUPPORT, "hi")
        frames = await collect_frames(service, started.run_id)
        run = await service.wait_for_run(OBSERVER, started.run_id)
    shown = frames.errors[0].message
    assert run.status == "failed"
    for text in (shown, run.error or "", caplog.text):
        assert KEY not in text and "9f8e7d6c5b4a" not in text
    if debug:
        assert "Incorrect API key" in shown  # the scrubbed detail
    else:
        assert "Incorrect API key" not in shown and "error " in shown  # generic, with an error id
        error_id = shown.split("error ")[1].split(")")[0]
        assert error_id in caplog.text and "Incorrect API key provided: [redacted]" in caplog.text
