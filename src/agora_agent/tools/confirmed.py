"""Confirmed tools: preview first, commit only with a signed, single-use token.

    class CancelInput(BaseModel):
        order_id: int

    cancel_order = confirmed_tool(
        name="cancel_order",
        description="Cancel an order.",
        input=CancelInput,
        prepare=load_order,          # (args, ctx) -> prepared; raise to refuse
        preview=describe_cancel,     # (prepared) -> {"summary": ..., "data": ...}; writes nothing
        commit=do_cancel,            # (prepared) -> {"summary": ..., "data": ...}
        secret=os.environ["CONFIRM_SECRET"],
    )

The first call previews and returns a `confirmToken`: an HMAC over the tool name, the caller's actor
id and tenant, the arguments and an expiry (default 15 minutes). The second call, with the same
arguments, `confirm: true` and that token, runs `prepare` again and then `commit`. A token is refused
(with the reason) when it is forged, expired, for another tool, actor, tenant or other arguments,
or already used: single use is enforced by a `ConfirmTokenStore` (the agent's SQL store when it has
one — the service binds it at start-up; in memory otherwise, i.e. per process).

The tool runs without an approval park (kind "read"): the preview/confirm round trip is its
confirmation, in chat and over MCP alike. Chat models see `confirm` and `confirmToken` in the schema.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import inspect
import json
import secrets
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel, ConfigDict, Field, create_model

from agora_agent.errors import ConfigurationError, ToolError
from agora_agent.tools.context import ToolContext
from agora_agent.tools.spec import CanUse, EnabledFlag, ToolSpec

__all__ = [
    "ConfirmTokenStore",
    "ConfirmationRefusedError",
    "ConfirmedTool",
    "MemoryConfirmTokenStore",
    "confirmed_tool",
]

_DEFAULT_TTL = timedelta(minutes=15)
_CONTROL_FIELDS = frozenset({"confirm", "confirm_token"})


RefusalReason = Literal["missing", "invalid", "other_tool", "other_caller", "arguments_changed", "expired", "used"]


class ConfirmationRefusedError(ToolError):
    """The second step was refused: the token is missing, forged, expired, used or bound to something else.

    `reason` says which, for code; the message says it (and what to do) for the model and the person.
    """

    def __init__(self, tool_name: str, message: str, *, reason: RefusalReason) -> None:
        super().__init__(tool_name, message)
        self.reason: RefusalReason = reason


@runtime_checkable
class ConfirmTokenStore(Protocol):
    """Marks a token id used, once. `consume` returns False when it was already used (a replay)."""

    async def consume(self, token_id: str, *, tool_name: str, actor_ref: str, expires_at: datetime) -> bool: ...


class MemoryConfirmTokenStore:
    """In-process single use (a restart forgets, but tokens also expire): the default without a SQL store."""

    def __init__(self) -> None:
        self._used: dict[str, datetime] = {}

    async def consume(self, token_id: str, *, tool_name: str, actor_ref: str, expires_at: datetime) -> bool:
        now = datetime.now(UTC)
        for stale in [k for k, exp in self._used.items() if exp < now]:
            del self._used[stale]
        if token_id in self._used:
            return False
        self._used[token_id] = expires_at
        return True


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


async def _call(fn: Callable[..., Any], *args: Any) -> Any:
    result = fn(*args)
    if inspect.isawaitable(result):
        result = await result
    return result


class ConfirmedTool:
    """The registry `Tool` built by `confirmed_tool`; see the module docstring for the two steps."""

    def __init__(
        self,
        *,
        name: str,
        description: str,
        input: type[BaseModel],
        prepare: Callable[[Any, ToolContext], Any],
        preview: Callable[[Any], Any],
        commit: Callable[[Any], Any],
        secret: str | bytes,
        ttl: timedelta,
        store: ConfirmTokenStore | None,
        roles: tuple[str, ...] | None,
        enabled: EnabledFlag,
        can_use: CanUse | None,
    ) -> None:
        self._input = input
        self._prepare, self._preview, self._commit = prepare, preview, commit
        self._secret = secret.encode() if isinstance(secret, str) else bytes(secret)
        self.ttl = ttl
        self.store: ConfirmTokenStore | None = store
        self._agent_store: ConfirmTokenStore | None = None
        wire = create_model(
            f"{input.__name__}Confirmed",
            __base__=input,
            __config__=None,
            confirm=(
                bool,
                Field(default=False, description="false (default): preview only. true: commit, with confirmToken."),
            ),
            confirm_token=(
                str | None,
                Field(
                    default=None,
                    alias="confirmToken",
                    description="The confirmToken the preview returned; required with confirm: true.",
                ),
            ),
        )
        wire.model_config = ConfigDict(**{**input.model_config, "validate_by_name": True, "validate_by_alias": True})
        wire.model_rebuild(force=True)
        self._spec = ToolSpec(
            name=name,
            description=description
            + " Two steps: call once to get a preview and a confirmToken; after the user agrees, call again with the"
            " same arguments, confirm: true and that confirmToken.",
            kind="read",
            input_model=wire,
            roles=roles,
            enabled=enabled,
            can_use=can_use,
        )

    @property
    def spec(self) -> ToolSpec:
        return self._spec

    def bind_agent_store(self, store: ConfirmTokenStore | None) -> None:
        """Called by `AgentService.start()`: the agent's SQL token store (None: this process's memory)."""
        self._agent_store = store

    def _bound(self, args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        canonical = json.dumps(args, sort_keys=True, separators=(",", ":"), default=str)
        return {
            "t": self._spec.name,
            "a": ctx.actor.id,
            "n": ctx.actor.tenant_ref,
            "h": hashlib.sha256(canonical.encode()).hexdigest(),
        }

    def _sign(self, payload: dict[str, Any]) -> str:
        body = _b64(json.dumps(payload, sort_keys=True, separators=(",", ":")).encode())
        mac = _b64(hmac.new(self._secret, body.encode(), hashlib.sha256).digest())
        return f"{body}.{mac}"

    def _refuse(self, reason: RefusalReason, explanation: str) -> ConfirmationRefusedError:
        return ConfirmationRefusedError(
            self._spec.name, f'Tool "{self._spec.name}": confirmation refused: {explanation}', reason=reason
        )

    def _verify(self, token: str | None, args: dict[str, Any], ctx: ToolContext) -> dict[str, Any]:
        if not token:
            raise self._refuse(
                "missing", "confirm: true needs the confirmToken of a preview; call without confirm first"
            )
        body, _, mac = token.partition(".")
        expected = _b64(hmac.new(self._secret, body.encode(), hashlib.sha256).digest())
        if not mac or not hmac.compare_digest(expected, mac):
            raise self._refuse("invalid", "the confirmToken is not valid (forged or damaged)")
        try:
            payload = json.loads(_unb64(body))
        except ValueError:
            raise self._refuse("invalid", "the confirmToken is not valid (forged or damaged)") from None
        bound = self._bound(args, ctx)
        if payload.get("t") != bound["t"]:
            raise self._refuse("other_tool", "the confirmToken was issued for another tool")
        if payload.get("a") != bound["a"] or payload.get("n") != bound["n"]:
            raise self._refuse("other_caller", "the confirmToken was issued to another caller")
        if payload.get("h") != bound["h"]:
            raise self._refuse("arguments_changed", "the arguments differ from the previewed ones; preview them again")
        if float(payload.get("e", 0)) < time.time():
            raise self._refuse("expired", "the confirmToken has expired; preview again")
        return dict(payload)

    async def invoke(self, input: BaseModel, ctx: ToolContext) -> Any:
        confirm = bool(getattr(input, "confirm", False))
        token = getattr(input, "confirm_token", None)
        args = input.model_dump(mode="json", exclude=set(_CONTROL_FIELDS))
        plain = self._input.model_validate(args)
        if not confirm:
            prepared = await _call(self._prepare, plain, ctx)
            shown = await _call(self._preview, prepared)
            expires = round(time.time() + self.ttl.total_seconds(), 3)
            confirm_token = self._sign({**self._bound(args, ctx), "e": expires, "j": secrets.token_hex(8)})
            return {
                "status": "preview",
                "preview": shown,
                "confirmToken": confirm_token,
                "expiresAt": datetime.fromtimestamp(expires, UTC).isoformat().replace("+00:00", "Z"),
                "next": "Show the preview to the user. Only if they agree, call this tool again with the same "
                "arguments plus confirm: true and this confirmToken.",
            }
        payload = self._verify(token, args, ctx)
        store = self.store or self._agent_store or _process_store
        expires_at = datetime.fromtimestamp(float(payload["e"]), UTC)
        token_id = hashlib.sha256(str(token).encode()).hexdigest()
        if not await store.consume(token_id, tool_name=self._spec.name, actor_ref=ctx.actor.id, expires_at=expires_at):
            raise self._refuse("used", "the confirmToken was already used; preview again for a new one")
        prepared = await _call(self._prepare, plain, ctx)
        done = await _call(self._commit, prepared)
        return {"status": "committed", "result": done}


_process_store = MemoryConfirmTokenStore()


def confirmed_tool(
    *,
    name: str,
    description: str,
    input: type[BaseModel],
    prepare: Callable[[Any, ToolContext], Any | Awaitable[Any]],
    preview: Callable[[Any], Any | Awaitable[Any]],
    commit: Callable[[Any], Any | Awaitable[Any]],
    secret: str | bytes,
    ttl: timedelta = _DEFAULT_TTL,
    store: ConfirmTokenStore | None = None,
    roles: tuple[str, ...] | None = None,
    enabled: EnabledFlag = True,
    can_use: CanUse | None = None,
) -> ConfirmedTool:
    """A two-step tool: preview + signed token, then commit. See the module docstring.

    `secret` is required (no default: a guessable key would let anyone mint tokens); use the same one
    on every worker. `store` overrides where used tokens are recorded (default: the agent's SQL store
    when it has one, else memory).
    """
    if not secret or (isinstance(secret, str | bytes) and len(secret) < 16):
        raise ConfigurationError(
            f'confirmed_tool "{name}": secret must be at least 16 characters (keep it secret)', option="secret"
        )
    if not (isinstance(input, type) and issubclass(input, BaseModel)):
        raise ConfigurationError(f'confirmed_tool "{name}": input must be a pydantic BaseModel class')
    clash = _CONTROL_FIELDS & set(input.model_fields)
    if clash:
        raise ConfigurationError(
            f'confirmed_tool "{name}": the input may not define {", ".join(sorted(clash))}', option="input"
        )
    if ttl <= timedelta(0):
        raise ConfigurationError(f'confirmed_tool "{name}": ttl must be positive')
    return ConfirmedTool(
        name=name,
        description=description,
        input=input,
        prepare=prepare,
        preview=preview,
        commit=commit,
        secret=secret,
        ttl=ttl,
        store=store,
        roles=roles,
        enabled=enabled,
        can_use=can_use,
    )
