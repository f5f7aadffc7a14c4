"""`ToolSpec`: the governance-relevant description of a tool, the `Tool` protocol the registry runs, and the
`RolesPolicy` protocol the registry asks (its implementations live in `governance/policy.py`)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from pydantic import BaseModel

from agora_agent.actors import Actor

if TYPE_CHECKING:
    from agora_agent.tools.context import ToolContext

__all__ = ["DescribeContext", "RolesPolicy", "Tool", "ToolAvailability", "ToolKind", "ToolSpec"]

ToolKind = Literal["read", "action", "agent"]


@dataclass(frozen=True, kw_only=True, slots=True)
class DescribeContext:
    """What `describe()` may look at to scope a tool to the current call."""

    actor: Actor
    thread_id: str | None = None
    agent: str | None = None
    channel: str = "chat"


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolAvailability:
    """What `describe()` returns: hide the tool (`available=False`) or override its description."""

    available: bool = True
    description: str | None = None


EnabledFlag = bool | Callable[[], bool]
CanUse = Callable[[Actor], bool | Awaitable[bool]]
Describe = Callable[[DescribeContext], "ToolAvailability | None | Awaitable[ToolAvailability | None]"]


@dataclass(frozen=True, kw_only=True)
class ToolSpec:
    """Name, kind, input model and every governance knob of a tool.

    - `roles`: None = the roles policy's default; () = explicitly no roles.
    - `enabled`: a bool, or a callable re-read on every offer and invoke.
    - `can_use(actor)`: an extra per-actor predicate (sync or async).
    - `describe(ctx)`: may hide the tool for this call or change its description.
    - `approver_roles`: approving needs one of these roles, and — four eyes — the requester may not approve
      their own call even when they hold one (rejecting it stays allowed);
    - `self_approval`: with `approver_roles`, let a requester who holds one of the roles approve their own call.
    - `approval_ttl`: how long an approval may stay pending before it expires.
    """

    name: str
    description: str
    kind: ToolKind
    input_model: type[BaseModel]
    roles: tuple[str, ...] | None = None
    ability: str | None = None
    enabled: EnabledFlag = True
    can_use: CanUse | None = None
    describe: Describe | None = None
    approver_roles: tuple[str, ...] | None = None
    self_approval: bool = False
    approval_ttl: timedelta | None = None
    target_agent: str | None = None

    def is_enabled(self) -> bool:
        return self.enabled() if callable(self.enabled) else bool(self.enabled)

    def json_schema(self) -> dict[str, Any]:
        return self.input_model.model_json_schema()


@runtime_checkable
class Tool(Protocol):
    """Something the registry can offer and run."""

    @property
    def spec(self) -> ToolSpec: ...

    async def invoke(self, input: BaseModel, ctx: ToolContext) -> Any: ...


@runtime_checkable
class RolesPolicy(Protocol):
    """Decides whether an actor may use a tool. The same answer gates offering AND invoking.

    A policy may also say `pure = True` (an attribute or property): its `can` answers synchronously from the
    actor and the spec alone, so one run reuses each verdict instead of asking again (`ChainMemo`)."""

    def can(self, actor: Actor, spec: ToolSpec) -> bool | Awaitable[bool]: ...
