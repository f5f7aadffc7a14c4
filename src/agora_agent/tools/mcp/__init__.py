"""Tools from external MCP servers: `MCPServer` configures one, `MCPConnections` (client.py) connects them.

`AgentConfig(mcp_servers=[MCPServer(...)])` is all an app writes; the service connects at start-up and
the servers' tools join the registry as governed tools. The client needs the `mcp` extra and is imported
only when the service starts. Serving the app's own tools over MCP is the edge's job (`agora_agent.mcp`).
"""

from __future__ import annotations

from agora_agent.tools.mcp.config import MCPServer

__all__ = ["MCPServer"]
