"""The demo serves MCP at /agent/mcp with one demo key per user; tenant scoping as in the chat, actions refused."""

from __future__ import annotations

from pathlib import Path

import httpx2
import pytest

from agora_agent.demo import create_demo_app
from tests.mcp.conftest import mcp_client, serve

pytestmark = pytest.mark.ref("MCP-12")


async def test_demo_keys_tenant_scoping_and_refused_actions(tmp_path: Path) -> None:
    app = create_demo_app(tmp_path / "demo.db", word_delay=0)
    assert set(app.state.demo_mcp_keys) == {"demo-alice", "demo-bob", "demo-carol"}
    async with serve(app) as base:
        url = f"{base}/agent/mcp"
        async with mcp_client(url, "demo-alice") as alice:
            names = {t.name for t in (await alice.list_tools()).tools}
            assert {"lookup_order", "show_orders", "query_shop"} <= names and "refund_order" not in names
            mine = await alice.call_tool("lookup_order", {"order_id": 1001})
            assert mine.structured_content is not None and mine.structured_content["found"] is True
            refund = await alice.call_tool("refund_order", {"order_id": 1001, "reason": "test"})
            assert refund.is_error
        async with mcp_client(url, "demo-bob") as bob:
            theirs = await bob.call_tool("lookup_order", {"order_id": 1001})
            assert theirs.structured_content == {"found": False, "message": "There is no order 1001 that you can see."}
        async with httpx2.AsyncClient() as http:
            r = await http.post(
                url,
                json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
                headers={"Authorization": "Bearer demo-mallory"},
            )
            assert r.status_code == 401
