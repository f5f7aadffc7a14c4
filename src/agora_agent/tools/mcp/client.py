"""Connections to external MCP servers, and their tools as governed registry tools.

`MCPConnections` lives in the `AgentService` (started and closed with it, so in the app's lifespan).
Each server gets one supervisor task that owns the SDK `Client` (stdio subprocess or streamable HTTP):
connect, list the tools, register them, then ping; on any failure it marks the server down (its tools
stop being offered: their `enabled` flag reads the connection), logs ONE warning per outage, and
reconnects with exponential backoff. `tools/list_changed` re-lists. A call has a timeout and turns
every transport failure into a tool error the model can read — never a crash or a hang of the chat.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, Literal

import httpx2
import jsonschema
import mcp_types as types
from mcp import Client, StdioServerParameters
from mcp.client.streamable_http import streamable_http_client
from pydantic import BaseModel, ConfigDict, model_validator

from agora_agent.errors import ToolExecutionError
from agora_agent.tools.context import ToolContext
from agora_agent.tools.mcp.config import MCPServer
from agora_agent.tools.registry import ToolRegistry
from agora_agent.tools.spec import ToolKind, ToolSpec

__all__ = ["IDEMPOTENCY_META_KEY", "MCPConnections", "ServerStatus"]

logger = logging.getLogger("agora_agent.mcp")

IDEMPOTENCY_META_KEY = "idempotencyKey"
"""The `_meta` key carrying `ctx.idempotency_key` on every `tools/call` to an external server."""

_PING_INTERVAL = 5.0
_FIRST_BACKOFF = 0.5

State = Literal["connecting", "up", "down", "disabled", "closed"]


@dataclass(frozen=True, kw_only=True)
class ServerStatus:
    """One external server as `/readyz` would show it."""

    name: str
    state: State
    tools: int
    error: str | None
    since: datetime


@dataclass(frozen=True, kw_only=True)
class RemoteToolSpec(ToolSpec):
    """A `ToolSpec` whose JSON schema is the remote server's `inputSchema`, unchanged."""

    remote_schema: dict[str, Any]
    remote_name: str
    server: str

    def json_schema(self) -> dict[str, Any]:
        return self.remote_schema


def _input_model(name: str, schema: dict[str, Any]) -> type[BaseModel]:
    """A pydantic model that validates against the remote JSON Schema and keeps the arguments as given."""
    validator_cls = jsonschema.validators.validator_for(schema, default=jsonschema.Draft202012Validator)
    validator = validator_cls(schema)

    class RemoteInput(BaseModel):
        model_config = ConfigDict(extra="allow")

        @model_validator(mode="before")
        @classmethod
        def _against_schema(cls, data: Any) -> Any:
            issues = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
            if issues:
                listed = "; ".join(
                    f"{'.'.join(str(p) for p in e.absolute_path) or 'input'}: {e.message}" for e in issues
                )
                raise ValueError(listed)
            return data

    RemoteInput.__name__ = RemoteInput.__qualname__ = f"MCPInput_{name}"
    return RemoteInput


def _result_value(result: types.CallToolResult) -> Any:
    """What the model sees: the structured result when there is one, else the text parts."""
    if result.structured_content is not None:
        return result.structured_content
    parts = []
    for block in result.content:
        if isinstance(block, types.TextContent):
            parts.append(block.text)
        else:
            parts.append(f"[{block.type} content omitted]")
    return "\n".join(parts)


class RemoteTool:
    """A registry `Tool` that runs on an external MCP server through its connection."""

    def __init__(self, spec: RemoteToolSpec, connection: _Connection) -> None:
        self._spec = spec
        self._connection = connection

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    async def invoke(self, input: BaseModel, ctx: ToolContext) -> Any:
        args = input.model_dump(mode="json")
        meta: dict[str, Any] = {}
        if ctx.idempotency_key is not None:
            meta[IDEMPOTENCY_META_KEY] = ctx.idempotency_key
        return await self._connection.call(self._spec, args, meta)


class _Connection:
    """One server: a supervisor task owning the SDK client, and the set of tools it lists now."""

    def __init__(self, server: MCPServer, registry: ToolRegistry) -> None:
        self.server = server
        self.registry = registry
        self.state: State = "connecting"
        self.error: str | None = None
        self.since = datetime.now(UTC)
        self.listed: dict[str, types.Tool] = {}  # remote name -> tool, while up
        self.first_attempt = asyncio.Event()
        self._client: Client | None = None
        self._wake = asyncio.Event()  # set on a lost connection or a tools/list_changed
        self._lost = False
        self._relist = False
        self._task: asyncio.Task[None] | None = None
        self._warned = False
        self._closed = False

    # -- lifecycle -------------------------------------------------------------------------------

    def start(self) -> None:
        self._task = asyncio.create_task(self._supervise(), name=f"agora-mcp-client:{self.server.name}")

    async def close(self) -> None:
        self._closed = True
        self._set("closed", None)
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task

    def _set(self, state: State, error: str | None) -> None:
        if state != self.state:
            self.since = datetime.now(UTC)
        self.state, self.error = state, error
        if state != "up":
            self.listed = {}

    def is_offered(self, remote_name: str) -> bool:
        return self.state == "up" and remote_name in self.listed and self.server_enabled()

    def server_enabled(self) -> bool:
        flag = self.server.enabled
        return bool(flag()) if callable(flag) else bool(flag)

    def status(self) -> ServerStatus:
        return ServerStatus(
            name=self.server.name, state=self.state, tools=len(self.listed), error=self.error, since=self.since
        )

    def _transport(self) -> Any:
        server = self.server
        if server.command is not None:
            command = list(server.command)
            return StdioServerParameters(
                command=command[0],
                args=command[1:],
                env=dict(server.env) if server.env is not None else None,
                cwd=server.cwd,
            )
        assert server.url is not None
        http = httpx2.AsyncClient(
            headers=dict(server.headers or {}), timeout=httpx2.Timeout(server.call_timeout, read=server.call_timeout)
        )
        return streamable_http_client(server.url, http_client=http), http

    async def _supervise(self) -> None:
        backoff = _FIRST_BACKOFF
        while not self._closed:
            try:
                await self._session()
                backoff = _FIRST_BACKOFF
            except asyncio.CancelledError:
                raise
            except BaseException as exc:  # the SDK raises exception groups from its task groups
                message = _describe(exc)
                if not self._warned:
                    logger.warning(
                        'agora-agent: MCP server "%s" is unavailable (%s); its tools are not offered until it is back',
                        self.server.name,
                        message,
                    )
                    self._warned = True
                if not self._closed:
                    self._set("down", message)
            finally:
                self._client = None
                self.first_attempt.set()
            if self._closed:
                return
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self.server.max_backoff)

    async def _session(self) -> None:
        server = self.server
        transport = self._transport()
        http: httpx2.AsyncClient | None = None
        if isinstance(transport, tuple):
            transport, http = transport
        self._lost = self._relist = False
        self._wake.clear()
        async with contextlib.AsyncExitStack() as stack:
            if http is not None:
                await stack.enter_async_context(http)
            client = Client(transport, mode=server.mode, message_handler=self._on_message)
            # asyncio.timeout, not wait_for: the SDK's task groups must be entered and left in this task.
            async with asyncio.timeout(server.connect_timeout or None):
                await stack.enter_async_context(client)
            self._client = client
            await self._list(client)
            if self._warned:
                logger.warning('agora-agent: MCP server "%s" is back; its tools are offered again', server.name)
            self._warned = False
            self._set("up", None)
            self.first_attempt.set()
            listener = asyncio.create_task(self._listen(client)) if self._can_listen(client) else None
            try:
                await self._watch(client)
            finally:
                if listener is not None:
                    listener.cancel()
                    with contextlib.suppress(asyncio.CancelledError, Exception):
                        await listener

    @staticmethod
    def _can_listen(client: Client) -> bool:
        """2026-07-28 servers announce list changes on a `subscriptions/listen` stream, not as notifications."""
        from mcp_types.version import MODERN_PROTOCOL_VERSIONS

        tools = client.server_capabilities.tools
        return client.protocol_version in MODERN_PROTOCOL_VERSIONS and bool(tools and tools.list_changed)

    async def _listen(self, client: Client) -> None:
        try:
            async with client.listen(tools_list_changed=True) as subscription:
                async for _event in subscription:
                    self._relist = True
                    self._wake.set()
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a lost stream is the ping's business; list changes then wait for a reconnect
            logger.debug('agora-agent: MCP server "%s": list-change stream ended: %r', self.server.name, exc)

    async def _watch(self, client: Client) -> None:
        """Ping while up; re-list on `tools/list_changed`; return (to reconnect) when the connection is lost."""
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._wake.wait(), timeout=_PING_INTERVAL)
            self._wake.clear()
            if self._lost:
                raise ConnectionError(self.error or "connection lost")
            if self._relist:
                self._relist = False
                await self._list(client)
                continue
            async with asyncio.timeout(self.server.call_timeout):
                await client.send_ping()

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            self._relist = True
            self._wake.set()

    async def _list(self, client: Client) -> None:
        server = self.server
        listed: dict[str, types.Tool] = {}
        cursor: str | None = None
        while True:
            async with asyncio.timeout(server.call_timeout):
                page = await client.list_tools(cursor=cursor)
            for tool in page.tools:
                if server.tools is None or tool.name in server.tools:
                    listed[tool.name] = tool
            cursor = page.next_cursor
            if not cursor:
                break
        for tool in listed.values():
            self._register(tool)
        self.listed = listed

    def _register(self, tool: types.Tool) -> None:
        server = self.server
        name = f"{server.prefix}{tool.name}"
        existing = self.registry.get(name)
        if existing is not None:
            if not (isinstance(existing, RemoteToolSpec) and existing.server == server.name):
                logger.warning(
                    'agora-agent: MCP server "%s" lists "%s", but a tool named "%s" is already registered; skipping it',
                    server.name,
                    tool.name,
                    name,
                )
            return
        kind: ToolKind = server.kinds.get(tool.name) or (
            "read" if tool.annotations is not None and tool.annotations.read_only_hint else "action"
        )
        remote_name = tool.name
        schema = dict(tool.input_schema or {"type": "object"})
        spec = RemoteToolSpec(
            name=name,
            description=tool.description or tool.title or f"{tool.name} (from the MCP server {server.name})",
            kind=kind,
            input_model=_input_model(name, schema),
            roles=server.roles,
            enabled=lambda: self.is_offered(remote_name),
            can_use=server.can_use,
            approver_roles=server.approver_roles,
            approval_ttl=server.approval_ttl,
            remote_schema=schema,
            remote_name=remote_name,
            server=server.name,
        )
        self.registry.register(RemoteTool(spec, self))

    # -- calls -----------------------------------------------------------------------------------

    async def call(self, spec: RemoteToolSpec, args: dict[str, Any], meta: Mapping[str, Any]) -> Any:
        server = self.server
        client = self._client
        if client is None or self.state != "up":
            raise ToolExecutionError(
                spec.name, f'Tool "{spec.name}": the MCP server "{server.name}" is unavailable; try again later'
            )
        try:
            async with asyncio.timeout(server.call_timeout):
                result = await client.call_tool(
                    spec.remote_name,
                    args,
                    meta=dict(meta) or None,  # type: ignore[arg-type]
                )
        except TimeoutError:
            raise ToolExecutionError(
                spec.name,
                f'Tool "{spec.name}": the MCP server "{server.name}" did not answer within {server.call_timeout:g} s',
            ) from None
        except Exception as exc:
            from mcp.shared.exceptions import MCPError

            if isinstance(exc, MCPError) and exc.code != types.CONNECTION_CLOSED:
                # The server answered with a JSON-RPC error: the connection itself is fine.
                raise ToolExecutionError(spec.name, f'Tool "{spec.name}" failed on "{server.name}": {exc}') from exc
            message = _describe(exc)
            self.error = message
            self._lost = True
            self._wake.set()
            raise ToolExecutionError(
                spec.name, f'Tool "{spec.name}": the MCP server "{server.name}" failed during the call ({message})'
            ) from exc
        if result.is_error:
            text = _result_value(result)
            raise ToolExecutionError(spec.name, f'Tool "{spec.name}" failed: {text}')
        return _result_value(result)


def _describe(exc: BaseException) -> str:
    """A one-line reason, unwrapping exception groups (the SDK's task groups raise them)."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    text = str(exc).strip()
    return f"{type(exc).__name__}: {text}" if text else type(exc).__name__


class MCPConnections:
    """Every configured external server of one `AgentService`; its tools are registered into `registry`."""

    def __init__(self, servers: list[MCPServer], registry: ToolRegistry) -> None:
        names = [s.name for s in servers]
        duplicates = sorted({n for n in names if names.count(n) > 1})
        if duplicates:
            from agora_agent.errors import ConfigurationError

            raise ConfigurationError(f"MCPServer names must be unique; duplicated: {', '.join(duplicates)}")
        self._connections = [_Connection(s, registry) for s in servers]

    async def start(self) -> None:
        """Start every connection, then wait (at most each server's `connect_timeout`) for the first attempts."""
        for connection in self._connections:
            connection.start()

        async def first(connection: _Connection) -> None:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(connection.first_attempt.wait(), timeout=connection.server.connect_timeout)

        await asyncio.gather(*(first(c) for c in self._connections))

    async def close(self) -> None:
        await asyncio.gather(*(c.close() for c in self._connections))

    def status(self) -> list[ServerStatus]:
        """One `ServerStatus` per server, in configuration order."""
        return [c.status() for c in self._connections]

    @property
    def ready(self) -> bool:
        """True when every enabled server is up."""
        return all(c.state == "up" for c in self._connections if c.server_enabled())
