"""The redactor covers every place tool arguments are stored or shown (issue #17): the HTTP thread and
run views, the governance views and exports, the approvals inboxes, and a re-attach after a restart."""

from __future__ import annotations

from pathlib import Path

from agora_agent import Actor
from agora_agent.testing import wait_for_tool_status
from agora_agent.web import create_app
from tests.web.conftest import ADMIN, ALICE, asgi_client, is_admin, make_config

from .test_decisions_and_secrets import CARD, card_script, mask_card, pay_card

SUPPORT = Actor("alice", roles=("support",))


async def test_no_view_shows_the_raw_argument(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'agent.db'}"

    def config() -> object:
        return make_config(
            card_script(), tools=[pay_card], redactor=mask_card, store=url, governance_authorize=is_admin
        )

    async with asgi_client(config()) as (client, service):
        parked = await service.chat(SUPPORT, "pay")
        await wait_for_tool_status(service, parked.run_id)
        shown = {
            "mine": await client.get("/agent/approvals/mine", headers=ALICE),
            "pending": await client.get("/agent/governance/approvals/pending", headers=ADMIN),
        }
        pending = await wait_for_tool_status(service, parked.run_id)
        await service.approve(SUPPORT, parked.run_id, pending.tool_call_id)
        await service.wait_for_run(SUPPORT, parked.run_id)
        run, thread = parked.run_id, parked.thread_id
        for name, path in {
            "thread": f"/agent/threads/{thread}",
            "gov thread": f"/agent/governance/threads/{thread}",
            "gov run": f"/agent/governance/runs/{run}",
            "recent calls": "/agent/governance/tool-calls/recent",
            "inspect": f"/agent/governance/runs/{run}/inspect",
            "audit": "/agent/governance/audit",
            "audit csv": "/agent/governance/audit?format=csv",
            "ai-sdk messages": f"/agent/ai-sdk/chat/{thread}/messages",
        }.items():
            shown[name] = await client.get(path, headers=ADMIN if "governance" in path else ALICE)
    app = create_app(config())  # a restart: the re-attach replays the stored transcript
    async with asgi_client(app.state.agent_service) as (client, _):
        shown["re-attach"] = await client.get(f"/agent/chat/{run}/stream", headers=ALICE)
    for name, response in shown.items():
        assert response.status_code == 200, (name, response.status_code, response.text[:200])
        assert CARD not in response.text, (name, response.text[:500])
    masked = {name for name, response in shown.items() if "****1111" in response.text}
    assert masked == set(shown) - {"gov thread"}  # each view really shows the call (the thread view: messages)
