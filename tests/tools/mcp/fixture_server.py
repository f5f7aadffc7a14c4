"""A real MCP server written with the SDK's `MCPServer` (FastMCP), for the client tests.

    python tests/tools/mcp/fixture_server.py                 # stdio
    python tests/tools/mcp/fixture_server.py --http PORT     # streamable HTTP on 127.0.0.1:PORT/mcp

`MCP_FIXTURE_LOG` (a file path) gets one JSON line per destructive call and the server's pid at start.
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp_types import ToolAnnotations

server = MCPServer("fixture-shop")


def _log(entry: dict[str, Any]) -> None:
    path = os.environ.get("MCP_FIXTURE_LOG")
    if path:
        with open(path, "a") as f:
            f.write(json.dumps(entry) + "\n")


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
def lookup_order(order_id: int) -> dict[str, Any]:
    """Look up an order of the fixture shop."""
    return {"order_id": order_id, "status": "shipped", "pid": os.getpid()}


@server.tool()
def cancel_order(order_id: int, ctx: Context) -> str:
    """Cancel an order (destructive: no read-only hint)."""
    meta = ctx.request_context.meta or {}
    _log({"tool": "cancel_order", "order_id": order_id, "key": dict(meta).get("idempotencyKey")})
    return f"order {order_id} cancelled"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def slow_report(seconds: float = 30) -> str:
    """A read that takes a while (the tests kill the server during it)."""
    _log({"tool": "slow_report", "started": True})
    await asyncio.sleep(seconds)
    return "report ready"


def extra_report() -> str:
    """A tool that appears only after unlock_extra ran (tools/list_changed)."""
    return "extra"


@server.tool(annotations=ToolAnnotations(read_only_hint=True))
async def unlock_extra(ctx: Context) -> str:
    """Add the extra_report tool and tell clients the tool list changed."""
    server.add_tool(extra_report, annotations=ToolAnnotations(read_only_hint=True))
    try:
        await ctx.notify_tools_changed()  # 2026-07-28: subscriptions/listen
    except Exception:
        await ctx.session.send_tool_list_changed()  # handshake era: a notification
    return "unlocked"


if __name__ == "__main__":
    _log({"pid": os.getpid()})
    if len(sys.argv) == 3 and sys.argv[1] == "--http":
        import uvicorn

        app = server.streamable_http_app()
        uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
    else:
        server.run()
