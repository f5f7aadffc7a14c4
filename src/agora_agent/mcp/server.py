"""Serve the app's governed tools over MCP (streamable HTTP), on the same FastAPI app as the agent.

    app = create_app(config)
    mount_mcp(app, auth=api_key_auth({"key-1": Actor("alice", ("support",), "acme")}))
    # -> POST/GET/DELETE {prefix}/mcp   (default /agent/mcp)

Built on the official SDK's low-level `Server` and its `StreamableHTTPSessionManager` (stateless by
default). What this module adds is governance:

- identity on every HTTP request from one `MCPAuth` (401 `{"error": …}` otherwise), refined by the served
  agent's own actor resolver when it has one, as over HTTP (it must agree, else 403);
- `tools/list` is the registry's `offer()` for that caller (the same filter chain as chat), minus
  delegation tools and, unless `actions="execute"|"confirm"`, minus action tools;
- `tools/call` re-runs the whole chain (`registry.authorize`), validates the input (every issue listed),
  runs the tool with a minted tool-call id and idempotency key and `ctx.channel == "mcp"`, and answers
  errors as `isError` results;
- `actions="confirm"` asks the human in the MCP client through elicitation before an action runs;
- every call leaves an audit tool-call row: one thread per MCP session (transient: hidden from the
  chat's thread list, shown by the governance routes) and one run per call.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import secrets
import time
import uuid
from collections import OrderedDict
from collections.abc import AsyncIterator, Awaitable, Callable, Collection
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import anyio
import mcp_types as types
from mcp.server import Server, ServerRequestContext
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.auth import ProtectedResourceMetadata
from mcp_types.version import MODERN_PROTOCOL_VERSIONS
from pydantic_core import to_jsonable_python
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route
from starlette.types import ASGIApp, Receive, Scope, Send

from agora_agent.actors import Actor
from agora_agent.errors import ConfigurationError, ForbiddenError, NotFoundError, ToolError, UnauthenticatedError
from agora_agent.mcp.auth import MCPAuth, NoAuth
from agora_agent.messages import ToolDefinition
from agora_agent.records import RunRecord, ToolCallPatch, ToolCallRecord
from agora_agent.tools.context import ToolContext
from agora_agent.tools.registry import AuthorizedCall
from agora_agent.tools.retry import run_with_retry
from agora_agent.tools.spec import DescribeContext
from agora_agent.web.access import refine_for_agent

if TYPE_CHECKING:
    from fastapi import FastAPI

    from agora_agent.service import AgentService

__all__ = ["ActionsMode", "MCPEndpoint", "mount_mcp"]

logger = logging.getLogger("agora_agent.mcp")

ActionsMode = Literal["refuse", "execute", "confirm"]

_ACTOR_KEY = "agora_mcp_actor"
_CONFIRM_KEY = "confirm"
_STATE_TTL_S = 600
_SESSION_CACHE = 4096


def _now() -> datetime:
    return datetime.now(UTC)


def _jsonable(value: Any) -> Any:
    """A tool's output as plain JSON data (pydantic models, dataclasses, dates …), as the audit row stores it."""
    return to_jsonable_python(value, fallback=str)


def _as_text(output: Any) -> str:
    """What an MCP client reads: strings as-is, anything else as JSON (like the chat's tool results)."""
    return output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)


def _text(text: str, *, error: bool = False, structured: Any = None) -> types.CallToolResult:
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=text)],
        structured_content=structured if isinstance(structured, dict) else None,
        is_error=error,
    )


def _actor_of(ctx: ServerRequestContext[Any, Any]) -> Actor:
    """The actor the gate resolved for this HTTP message; no request (stdio, in-process) means no identity."""
    request = ctx.request
    actor = request.scope.get("state", {}).get(_ACTOR_KEY) if isinstance(request, Request) else None
    if not isinstance(actor, Actor):
        raise UnauthenticatedError("unauthorized: no actor associated with this MCP request")
    return actor


class _Gate:
    """ASGI wrapper: authenticate EVERY request before the SDK sees it (fail closed).

    `refine` is the served agent's say on the caller `auth` accepted (401/403 when it refuses)."""

    def __init__(
        self,
        app: ASGIApp,
        auth: MCPAuth,
        metadata_url: Callable[[Request], str] | None,
        refine: Callable[[Actor, Request], Awaitable[Actor]],
    ) -> None:
        self.app = app
        self.auth = auth
        self.metadata_url = metadata_url
        self.refine = refine

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        request = Request(scope, receive)
        try:
            actor = await self.auth.authenticate(request)
            if not isinstance(actor, Actor):
                raise UnauthenticatedError("unauthorized")
            actor = await self.refine(actor, request)
        except UnauthenticatedError as exc:
            await self._refuse(request, str(exc) or "unauthorized", scope, receive, send)
            return
        except ForbiddenError as exc:
            await JSONResponse({"error": str(exc)}, status_code=403)(scope, receive, send)
            return
        except Exception:
            logger.exception("agora-agent MCP: the auth hook raised; refusing the request")
            await self._refuse(request, "unauthorized", scope, receive, send)
            return
        scope.setdefault("state", {})[_ACTOR_KEY] = actor
        # The SDK binds a stateful session to the principal that opened it (another caller gets 404).
        scope["user"] = AuthenticatedUser(
            AccessToken(
                token="",
                client_id=actor.id,
                scopes=list(actor.roles),
                subject=f"{actor.id}\x1f{actor.tenant_ref or ''}",
            )
        )
        await self.app(scope, receive, send)

    async def _refuse(self, request: Request, message: str, scope: Scope, receive: Receive, send: Send) -> None:
        challenge = f'Bearer error="invalid_token", error_description="{message.replace(chr(34), chr(39))}"'
        if self.metadata_url is not None:
            challenge += f', resource_metadata="{self.metadata_url(request)}"'
        response = JSONResponse({"error": message}, status_code=401, headers={"WWW-Authenticate": challenge})
        await response(scope, receive, send)


@dataclass(frozen=True, slots=True)
class _Session:
    thread_id: str


class MCPEndpoint:
    """One MCP server over an `AgentService`. Build it with `mount_mcp`; `lifespan()` runs its session manager."""

    def __init__(
        self,
        service: AgentService,
        *,
        auth: MCPAuth | None = None,
        path: str | None = None,
        actions: ActionsMode = "refuse",
        agent: str | None = None,
        tools: Collection[str] | None = None,
        name: str = "agora-agent",
        version: str = "0.1.0",
        stateless: bool = True,
        json_response: bool = False,
        transport_security: TransportSecuritySettings | None = None,
        state_secret: bytes | None = None,
        resource_url: str | None = None,
    ) -> None:
        if actions not in ("refuse", "execute", "confirm"):
            raise ConfigurationError(f'MCP actions must be "refuse", "execute" or "confirm"; got {actions!r}')
        self.service = service
        self.auth: MCPAuth = auth if auth is not None else NoAuth()
        prefix = service.config.prefix
        self.path = "/" + (path if path is not None else f"{prefix}/mcp").strip("/")
        self.actions: ActionsMode = actions
        self.agent_name = agent
        try:
            self._agent = service.agent(agent)  # whose allow-list and actor resolver apply
        except NotFoundError as exc:
            raise ConfigurationError(f"mount_mcp: {exc}", code="unknown_agent", option="agent") from exc
        self.tools = frozenset(tools) if tools is not None else None
        self.resource_url = resource_url
        # Seals the elicitation round trip (modern protocol); share it across workers behind a load balancer.
        self._state_secret = state_secret or secrets.token_bytes(32)
        self._sessions: OrderedDict[tuple[str, str, str], _Session] = OrderedDict()
        self._session_lock = anyio.Lock()
        self.server: Server[Any] = Server(
            name, version=version, on_list_tools=self._on_list_tools, on_call_tool=self._on_call_tool
        )
        self._manager_options: dict[str, Any] = {
            "stateless": stateless,
            "json_response": json_response,
            "security_settings": transport_security,
        }
        self.session_manager = StreamableHTTPSessionManager(app=self.server, **self._manager_options)
        self._manager_used = False
        metadata = self._metadata_url if self.auth.oauth is not None else None
        self.asgi: ASGIApp = _Gate(self._dispatch, self.auth, metadata, self._refine)

    async def _refine(self, actor: Actor, request: Request) -> Actor:
        """The served agent's own resolver, if any, refines the caller the mount's auth accepted: it must
        agree (same actor and tenant, no extra roles) — the rule of the HTTP routes that name an agent."""
        return await refine_for_agent(actor, self._agent, request)

    # -- mounting --------------------------------------------------------------------------------

    @property
    def metadata_path(self) -> str:
        """`/.well-known/oauth-protected-resource<path>` (RFC 9728 §3.1)."""
        return f"/.well-known/oauth-protected-resource{self.path}"

    def _resource(self, request: Request) -> str:
        if self.resource_url:
            return self.resource_url
        return f"{request.url.scheme}://{request.url.netloc}{self.path}"

    def _metadata_url(self, request: Request) -> str:
        return f"{request.url.scheme}://{request.url.netloc}{self.metadata_path}"

    async def _metadata(self, request: Request) -> Response:
        oauth = self.auth.oauth
        assert oauth is not None
        body = ProtectedResourceMetadata.model_validate(
            {
                "resource": self._resource(request),
                "authorization_servers": [oauth.issuer],
                "scopes_supported": list(oauth.scopes) or None,
                "resource_name": oauth.resource_name,
            }
        )
        return JSONResponse(body.model_dump(mode="json", exclude_none=True))

    def routes(self) -> list[Route]:
        """The endpoint (with and without a trailing slash, so no 307) and, with OAuth, its metadata route."""
        routes = [Route(self.path, endpoint=self.asgi), Route(self.path + "/", endpoint=self.asgi)]
        if self.auth.oauth is not None:
            routes.append(Route(self.metadata_path, endpoint=self._metadata, methods=["GET"]))
        return routes

    async def _dispatch(self, scope: Scope, receive: Receive, send: Send) -> None:
        await StreamableHTTPASGIApp(self.session_manager)(scope, receive, send)

    @asynccontextmanager
    async def lifespan(self) -> AsyncIterator[None]:
        """Run the SDK session manager (a mounted app's own lifespan never runs; the host must enter this).

        The SDK's manager runs once per instance, so a second start of the same app (tests, reloads)
        gets a fresh one.
        """
        if self._manager_used:
            self.session_manager = StreamableHTTPSessionManager(app=self.server, **self._manager_options)
        self._manager_used = True
        async with self.session_manager.run():
            yield

    # -- tools/list ------------------------------------------------------------------------------

    def _allow_list(self) -> frozenset[str] | None:
        agent_tools = self.service.agent(self.agent_name).tools
        allow = frozenset(agent_tools) if agent_tools is not None else None
        if self.tools is not None:
            allow = self.tools if allow is None else allow & self.tools
        return allow

    def _served(self, kind: str) -> bool:
        if kind == "agent":  # delegation needs the agent loop, which MCP callers do not run
            return False
        return kind != "action" or self.actions != "refuse"

    async def visible_tools(self, actor: Actor) -> list[ToolDefinition]:
        """What `tools/list` shows this actor: the chat's filter chain, then the MCP kind rule."""
        service = self.service
        offered = await service.registry.offer(
            actor,
            policy=service.policy,
            allow_list=self._allow_list(),
            describe_ctx=DescribeContext(actor=actor, agent=self.agent_name, channel="mcp"),
        )
        return [d for d in offered if self._served(d.kind)]

    async def _on_list_tools(
        self, ctx: ServerRequestContext[Any, Any], params: types.PaginatedRequestParams | None
    ) -> types.ListToolsResult:
        actor = _actor_of(ctx)
        tools = []
        for d in await self.visible_tools(actor):
            read_only = d.kind == "read"
            tools.append(
                types.Tool(
                    name=d.name,
                    description=d.description,
                    input_schema=d.input_schema,
                    annotations=types.ToolAnnotations(read_only_hint=read_only, destructive_hint=not read_only),
                )
            )
        return types.ListToolsResult(tools=tools)

    # -- tools/call ------------------------------------------------------------------------------

    async def _on_call_tool(
        self, ctx: ServerRequestContext[Any, Any], params: types.CallToolRequestParams
    ) -> types.CallToolResult | types.InputRequiredResult:
        actor = _actor_of(ctx)
        service = self.service
        name, args = params.name, dict(params.arguments or {})
        session = await self._session(actor, ctx)
        call_id = f"mcp_{uuid.uuid4().hex[:24]}"
        run_id = uuid.uuid4().hex
        tctx = ToolContext(
            actor=actor,
            thread_id=session.thread_id,
            run_id=run_id,
            tool_call_id=call_id,
            agent=self.agent_name,
            page_context={"channel": "mcp"},
            channel="mcp",
        )
        spec = service.registry.get(name)
        kind = spec.kind if spec is not None else "read"
        try:
            if spec is None or not self._served(kind):
                # Not served over MCP: answered exactly like an unknown name (MCP-12).
                from agora_agent.errors import ToolNotFoundError

                raise ToolNotFoundError(name, "it is not available over MCP" if spec is not None else None)
            authorized = await service.registry.authorize(
                name, args, ctx=tctx, policy=service.policy, allow_list=self._allow_list()
            )
        except ToolError as exc:
            await self._audit_refusal(actor, session, run_id, call_id, name, kind, args, str(exc), type(exc).__name__)
            return _text(str(exc), error=True)

        decided_by: str | None = None
        decision = "allowed"
        if kind == "action" and self.actions == "confirm":
            verdict = await self._confirm(ctx, params, actor, name, authorized.args_hash, authorized.args)
            if isinstance(verdict, types.InputRequiredResult):
                return verdict
            if verdict is not True:
                await self._audit_refusal(
                    actor, session, run_id, call_id, name, kind, args, verdict, "not confirmed", status="rejected"
                )
                return _text(verdict, error=True)
            decided_by, decision = actor.id, "confirmed by the caller (MCP elicitation)"

        await self._start(actor, session, run_id)
        await service.store.record_tool_call(
            self._record(actor, session, run_id, call_id, name, kind, args, "started", decision)
        )
        return await self._execute(actor, run_id, call_id, authorized, tctx, decided_by)

    async def _execute(
        self,
        actor: Actor,
        run_id: str,
        call_id: str,
        authorized: AuthorizedCall,
        tctx: ToolContext,
        decided_by: str | None,
    ) -> types.CallToolResult:
        """Run an authorized call once (with the transient retry) and settle its audit row and run."""
        service, name = self.service, authorized.spec.name
        started = time.perf_counter()

        async def attempt() -> Any:
            return await service.registry.execute(authorized, tctx)

        try:
            output = _jsonable(await run_with_retry(attempt, service.retry))
        except Exception as exc:
            message = str(exc) if isinstance(exc, ToolError) else f'Tool "{name}" failed: {exc or repr(exc)}'
            if not isinstance(exc, ToolError):
                logger.warning("agora-agent MCP: tool %s raised for %s: %r", name, actor.id, exc)
            await service.store.update_tool_call(
                run_id,
                call_id,
                ToolCallPatch(
                    status="failed",
                    error=message,
                    execution_ms=int((time.perf_counter() - started) * 1000),
                    decided_by=decided_by,
                ),
            )
            await service.store.record_run_end(run_id, status="failed", error=message, step_count=1)
            return _text(message, error=True)
        await service.store.update_tool_call(
            run_id,
            call_id,
            ToolCallPatch(
                status="executed",
                output=output,
                execution_ms=int((time.perf_counter() - started) * 1000),
                executed_by_ref=actor.id,
                decided_by=decided_by,
            ),
        )
        await service.store.record_run_end(run_id, status="completed", step_count=1)
        return _text(_as_text(output), structured=output)

    # -- confirmation through elicitation ----------------------------------------------------------

    def _seal(self, payload: dict[str, Any]) -> str:
        body = base64.urlsafe_b64encode(json.dumps(payload, sort_keys=True).encode()).decode()
        mac = hmac.new(self._state_secret, body.encode(), hashlib.sha256).hexdigest()
        return f"{body}.{mac}"

    def _unseal(self, state: str | None) -> dict[str, Any] | None:
        if not state or "." not in state:
            return None
        body, _, mac = state.rpartition(".")
        expected = hmac.new(self._state_secret, body.encode(), hashlib.sha256).hexdigest()
        if not hmac.compare_digest(expected, mac):
            return None
        try:
            payload = json.loads(base64.urlsafe_b64decode(body.encode()))
        except ValueError:
            return None
        return payload if isinstance(payload, dict) else None

    async def _confirm(
        self,
        ctx: ServerRequestContext[Any, Any],
        params: types.CallToolRequestParams,
        actor: Actor,
        name: str,
        args_hash: str,
        args: dict[str, Any],
    ) -> Literal[True] | str | types.InputRequiredResult:
        """True to run; a refusal message; or (2026-07-28 clients) the elicitation to send first."""
        message = f'Run the action "{name}" with {json.dumps(args, sort_keys=True, default=str)}?'
        schema: dict[str, Any] = {
            "type": "object",
            "properties": {_CONFIRM_KEY: {"type": "boolean", "title": "Run this action", "default": False}},
            "required": [_CONFIRM_KEY],
        }
        wants = types.ClientCapabilities(elicitation=types.ElicitationCapability())
        supports = ctx.session.check_client_capability(wants)
        refusal = (
            f'Tool "{name}" is an action and this MCP server runs actions only after the user confirms them '
            "through MCP elicitation, which this client does not support; nothing was done"
        )
        binding = {"tool": name, "args": args_hash, "actor": actor.id, "tenant": actor.tenant_ref}
        if ctx.protocol_version in MODERN_PROTOCOL_VERSIONS:
            responses = params.input_responses or {}
            answer = responses.get(_CONFIRM_KEY)
            if answer is None:
                if not supports:
                    return refusal
                state = self._seal({**binding, "exp": int(time.time()) + _STATE_TTL_S})
                request = types.ElicitRequest(
                    params=types.ElicitRequestFormParams(message=message, requested_schema=schema)
                )
                return types.InputRequiredResult(input_requests={_CONFIRM_KEY: request}, request_state=state)
            sealed = self._unseal(params.request_state)
            if sealed is None or int(sealed.get("exp", 0)) < time.time():
                return f'Tool "{name}": the confirmation is missing, forged or expired; call the tool again'
            if {k: sealed.get(k) for k in binding} != binding:
                return f'Tool "{name}": the confirmation was given for other arguments or another caller; call again'
            return self._accepted(name, answer)
        # Handshake-era connection: ask over the session's back-channel when there is one (stateful mode).
        if not supports or not ctx.session.can_send_request:
            return refusal
        try:
            result = await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)
        except Exception as exc:
            logger.warning("agora-agent MCP: elicitation for %s failed: %r", name, exc)
            return refusal
        return self._accepted(name, result)

    @staticmethod
    def _accepted(name: str, answer: Any) -> Literal[True] | str:
        if not isinstance(answer, types.ElicitResult) or answer.action != "accept":
            action = getattr(answer, "action", "no answer")
            return f'Tool "{name}": the user did not confirm the action ({action}); nothing was done'
        content = answer.content or {}
        if content.get(_CONFIRM_KEY) is not True:
            return f'Tool "{name}": the user did not tick the confirmation; nothing was done'
        return True

    # -- audit -------------------------------------------------------------------------------------

    async def _session(self, actor: Actor, ctx: ServerRequestContext[Any, Any]) -> _Session:
        """The audit thread of this MCP session (stateless: one per actor and process)."""
        request = ctx.request
        sid = request.headers.get("mcp-session-id", "") if isinstance(request, Request) else ""
        key = (actor.id, actor.tenant_ref or "", sid)
        async with self._session_lock:
            found = self._sessions.get(key)
            if found is not None:
                self._sessions.move_to_end(key)
                return found
            thread = await self.service.store.create_thread(
                actor_ref=actor.id, tenant_ref=actor.tenant_ref, persona="mcp", transient=True, title="MCP session"
            )
            session = _Session(thread_id=thread.id)
            self._sessions[key] = session
            while len(self._sessions) > _SESSION_CACHE:
                self._sessions.popitem(last=False)
            return session

    async def _start(self, actor: Actor, session: _Session, run_id: str) -> None:
        await self.service.store.record_run_start(
            RunRecord(
                id=run_id,
                thread_id=session.thread_id,
                agent_name=self.agent_name or "mcp",
                actor_ref=actor.id,
                tenant_ref=actor.tenant_ref,
                started_at=_now(),
            )
        )

    def _record(
        self,
        actor: Actor,
        session: _Session,
        run_id: str,
        call_id: str,
        name: str,
        kind: str,
        args: dict[str, Any],
        status: Any,
        decision: str,
        **extra: Any,
    ) -> ToolCallRecord:
        redactor = self.service.config.redactor
        return ToolCallRecord(
            id=call_id,
            run_id=run_id,
            thread_id=session.thread_id,
            message_id=None,
            tool_name=name,
            tool_type=kind,
            input=redactor(name, dict(args)) if redactor is not None else dict(args),
            status=status,
            actor_ref=actor.id,
            tenant_ref=actor.tenant_ref,
            policy_decision=decision,
            idempotency_key=f"{run_id}:{call_id}",
            created_at=_now(),
            **extra,
        )

    async def _audit_refusal(
        self,
        actor: Actor,
        session: _Session,
        run_id: str,
        call_id: str,
        name: str,
        kind: str,
        args: dict[str, Any],
        message: str,
        reason: str,
        *,
        status: str = "failed",
    ) -> None:
        await self._start(actor, session, run_id)
        decision = f"refused: {reason}" if status == "failed" else "rejected by the caller"
        await self.service.store.record_tool_call(
            self._record(
                actor,
                session,
                run_id,
                call_id,
                name,
                kind,
                args,
                status,
                decision,
                error=message,
                decided_by=actor.id if status == "rejected" else None,
            )
        )
        await self.service.store.record_run_end(run_id, status="failed", error=message, step_count=1)


def mount_mcp(
    app: FastAPI,
    service: AgentService | Any = None,
    *,
    auth: MCPAuth | None = None,
    path: str | None = None,
    actions: ActionsMode = "refuse",
    agent: str | None = None,
    tools: Collection[str] | None = None,
    name: str = "agora-agent",
    version: str = "0.1.0",
    stateless: bool = True,
    json_response: bool = False,
    transport_security: TransportSecuritySettings | None = None,
    state_secret: bytes | None = None,
    resource_url: str | None = None,
) -> MCPEndpoint:
    """Serve the agent's tools at `path` (default `{config.path}/mcp`) on `app`, and wire the lifespan.

    `service`: the `AgentService` (or an `agent_router(...)`, which carries one); default
    `app.state.agent_service`, which `create_app` sets. Call before the app starts.

    - `auth`: who the caller is — `api_key_auth`, `bearer_auth`, `resolver_auth`, `fixed_actor`.
      None refuses every request (401).
    - `actions`: `"refuse"` (default: action tools neither listed nor callable), `"execute"` (run them
      like reads — you opt out of human approval), `"confirm"` (ask the human in the MCP client through
      elicitation; clients without it get a clear refusal).
    - `agent` / `tools`: whose tool allow-list applies (default agent) and an extra allow-list. When that
      agent has its own `actor_resolver`, it refines every caller `auth` accepted, as on the HTTP routes
      that name an agent: it must accept (else 401) and agree — same actor and tenant, no extra roles
      (else 403). Naming an agent never lowers the identity bar.
    - `stateless` (default True) scales across workers; False keeps SDK sessions (needs sticky routing,
      and is what lets handshake-era clients answer an elicitation).
    - `transport_security`: the SDK's DNS-rebinding settings (allowed hosts/origins); off by default
      because every request is authenticated.
    - `state_secret`: the key sealing the elicitation round trip; set the same one on every worker.
    """
    if service is None:
        service = getattr(app.state, "agent_service", None)
    service = getattr(service, "service", service)  # an AgentRouter carries its service
    from agora_agent.service import AgentService

    if not isinstance(service, AgentService):
        raise ConfigurationError(
            "mount_mcp needs the AgentService: pass it (or the agent_router) as the second argument, "
            "or use create_app, which sets app.state.agent_service"
        )
    endpoint = MCPEndpoint(
        service,
        auth=auth,
        path=path,
        actions=actions,
        agent=agent,
        tools=tools,
        name=name,
        version=version,
        stateless=stateless,
        json_response=json_response,
        transport_security=transport_security,
        state_secret=state_secret,
        resource_url=resource_url,
    )
    # Before every other route: a host's catch-all (a Mount("/") or a SPA fallback) must not shadow it.
    for route in reversed(endpoint.routes()):
        app.router.routes.insert(0, route)
    previous = app.router.lifespan_context

    @asynccontextmanager
    async def lifespan(a: Any) -> AsyncIterator[Any]:
        async with previous(a) as state, endpoint.lifespan():
            yield state

    app.router.lifespan_context = lifespan
    app.state.mcp_endpoint = endpoint
    return endpoint
