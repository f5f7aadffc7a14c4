"""`MCPServer`: one external MCP server whose tools become governed tools (no SDK import here).

AgentConfig(
    model=...,
    mcp_servers=[
        MCPServer("files", command=["npx", "-y", "@modelcontextprotocol/server-filesystem", "/srv"]),
        MCPServer("crm", url="https://crm.internal/mcp", headers={"Authorization": "Bearer …"},
                  roles=("support",), kinds={"find_customer": "read"}),
    ],
)
"""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import KW_ONLY, dataclass, field
from datetime import timedelta
from typing import Literal

from agora_agent.errors import ConfigurationError
from agora_agent.tools.spec import CanUse, EnabledFlag

__all__ = ["MCPServer"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,40}$")


@dataclass(frozen=True)
class MCPServer:
    """An external MCP server as a tool source. Exactly one of `url` (streamable HTTP) or `command` (stdio).

    Its tools join the agent's registry as `<tool_prefix><tool>` (default prefix `"<name>_"`) and pass
    the same filter chain, approvals, audit, retries and budgets as local tools:

    - `enabled`, `can_use`, `roles`: applied to every tool of this server (like a local tool's).
    - kind: `kinds[tool]` when given ("read" | "action"), else `read` only when the server marks the
      tool `readOnlyHint`, otherwise `action` (fail safe: an unknown tool parks for approval).
    - `approver_roles`, `approval_ttl`: for its actions, as on a local action tool.
    - `tools`: import only these remote tool names (default: all).
    - `call_timeout` (s) bounds every call; `connect_timeout` (s) bounds start-up's wait for the
      first connection; a server that is down is retried with backoff up to `max_backoff` (s).
    - `headers` go with every HTTP request (e.g. `Authorization`); `env`/`cwd` shape a stdio subprocess.
    """

    name: str
    url: str | None = None
    command: Sequence[str] | None = None
    _: KW_ONLY
    headers: Mapping[str, str] | None = None
    env: Mapping[str, str] | None = None
    cwd: str | None = None
    enabled: EnabledFlag = True
    can_use: CanUse | None = None
    roles: tuple[str, ...] | None = None
    tool_prefix: str | None = None
    kinds: Mapping[str, Literal["read", "action"]] = field(default_factory=dict)
    tools: Collection[str] | None = None
    approver_roles: tuple[str, ...] | None = None
    approval_ttl: timedelta | None = None
    call_timeout: float = 30.0
    connect_timeout: float = 10.0
    max_backoff: float = 30.0
    mode: Literal["auto", "legacy"] = "auto"

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not _NAME.match(self.name):
            raise ConfigurationError(
                f"MCPServer name must be 1-40 letters, digits, '_' or '-' (it prefixes tool names); got {self.name!r}",
                option="name",
            )
        if (self.url is None) == (self.command is None):
            raise ConfigurationError(
                f'MCPServer "{self.name}": give exactly one of url=... or command=[...]', code="url_or_command"
            )
        if self.command is not None and (isinstance(self.command, str) or not list(self.command)):
            raise ConfigurationError(
                f'MCPServer "{self.name}": command must be a non-empty list such as ["python", "server.py"]',
                option="command",
            )
        for tool, kind in self.kinds.items():
            if kind not in ("read", "action"):
                raise ConfigurationError(
                    f'MCPServer "{self.name}": kinds[{tool!r}] must be "read" or "action"', option="kinds"
                )
        if self.roles is not None and not isinstance(self.roles, tuple):
            object.__setattr__(self, "roles", tuple(self.roles))
        if self.call_timeout <= 0 or self.connect_timeout < 0:
            raise ConfigurationError(f'MCPServer "{self.name}": timeouts must be positive')

    @property
    def prefix(self) -> str:
        """The prefix of this server's tool names in the registry."""
        return f"{self.name}_" if self.tool_prefix is None else self.tool_prefix
