"""MCP both ways (needs the `mcp` extra for the server and the client connections).

- Serve the app's governed tools to MCP clients: `mount_mcp(app, auth=api_key_auth(...))`.
- Use an external MCP server's tools as governed tools: `AgentConfig(mcp_servers=[MCPServer(...)])`.

This package is an edge, like `web/`: the server (server.py) and its auth (auth.py) sit on top of the
service. The client side lives below the service, in `agora_agent.tools.mcp`; its public names are
re-exported here. The SDK is imported only when a name that needs it is first used, so `MCPServer` can
be configured without the extra installed.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from agora_agent._lazy import lazy_exports
from agora_agent.mcp.auth import MCPAuth, OAuthResource, api_key_auth, bearer_auth, fixed_actor, resolver_auth
from agora_agent.tools.mcp.config import MCPServer

if TYPE_CHECKING:
    from agora_agent.mcp.server import ActionsMode, MCPEndpoint, mount_mcp
    from agora_agent.tools.mcp.client import MCPConnections, ServerStatus

__all__ = [
    "ActionsMode",
    "MCPAuth",
    "MCPConnections",
    "MCPEndpoint",
    "MCPServer",
    "OAuthResource",
    "ServerStatus",
    "api_key_auth",
    "bearer_auth",
    "fixed_actor",
    "mount_mcp",
    "resolver_auth",
]

_LAZY = {
    "ActionsMode": "agora_agent.mcp.server",
    "MCPEndpoint": "agora_agent.mcp.server",
    "mount_mcp": "agora_agent.mcp.server",
    "MCPConnections": "agora_agent.tools.mcp.client",
    "ServerStatus": "agora_agent.tools.mcp.client",
}


__getattr__ = lazy_exports(__name__, _LAZY, globals())
