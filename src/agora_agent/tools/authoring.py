"""Writing tools: the `@tool` decorator, `define_tool`, and the class form `BaseTool`/`ReadTool`/`ActionTool`.

All three produce something the `ToolRegistry` accepts. The function forms return a `FunctionTool` (a `Tool`:
`.spec` + `async invoke(input, ctx)`); the class form is registered as a class (built lazily through the
registry's factory, so it can take dependencies) or as an instance.

    @tool(kind="action", roles=["ops"])
    async def refund_order(order_id: int, reason: str, ctx: ToolContext) -> dict[str, Any]:
        '''Refund one order of the calling customer.'''

Sync functions are fine: they run in a worker thread so they never block the event loop.
"""

from __future__ import annotations

import functools
import inspect
import re
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import replace
from datetime import timedelta
from typing import Any, ClassVar, Literal, overload

from pydantic import BaseModel

from agora_agent.actors import Actor
from agora_agent.errors import ConfigurationError
from agora_agent.tools import threads
from agora_agent.tools.context import ToolContext
from agora_agent.tools.signature import call_shape, qualname
from agora_agent.tools.spec import CanUse, Describe, DescribeContext, EnabledFlag, ToolAvailability, ToolSpec

__all__ = ["ActionTool", "AuthoredKind", "BaseTool", "FunctionTool", "ReadTool", "define_tool", "tool"]

AuthoredKind = Literal["read", "action"]
PresentArg = Callable[[Any, ToolContext], Any] | None
"""`present(output, ctx)`: the tool's result as UI (`table(...)`, `chart(...)`, a list, or None)."""
RolesArg = Iterable[str] | None
TtlArg = timedelta | float | None

# The strictest rule among model APIs (OpenAI, Anthropic): a name outside it is refused by the provider mid-run.
_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


def _roles(value: RolesArg, field: str, owner: str) -> tuple[str, ...] | None:
    if value is None:
        return None
    items = (value,) if isinstance(value, str) else tuple(value)
    if not all(isinstance(r, str) and r for r in items):
        raise ConfigurationError(f"{field} of {owner} must be non-empty strings, got {items!r}", option=field)
    return items


def _ttl(value: TtlArg, owner: str) -> timedelta | None:
    if value is None:
        return None
    ttl = value if isinstance(value, timedelta) else timedelta(seconds=float(value))
    if ttl <= timedelta(0):
        raise ConfigurationError(f"approval_ttl of {owner} must be positive, got {value!r}", option="approval_ttl")
    return ttl


def build_spec(
    *,
    owner: str,
    name: str,
    description: str | None,
    kind: str,
    input_model: Any,
    roles: RolesArg = None,
    ability: str | None = None,
    enabled: EnabledFlag = True,
    can_use: CanUse | None = None,
    describe: Describe | None = None,
    approver_roles: RolesArg = None,
    self_approval: bool = False,
    approval_ttl: TtlArg = None,
) -> ToolSpec:
    """Validate authoring options and build the `ToolSpec`; `owner` names the function or class in errors."""
    if not isinstance(name, str) or not _NAME_RE.match(name):
        raise ConfigurationError(
            f"tool name {name!r} of {owner} is invalid: use 1-64 letters, digits, '_' or '-' "
            "(model APIs refuse others)",
            option="name",
        )
    if kind not in ("read", "action"):
        raise ConfigurationError(
            f'tool "{name}" ({owner}) has kind {kind!r}: write "read" or "action" ("agent" tools come from delegation)',
            option="kind",
        )
    if not (isinstance(input_model, type) and issubclass(input_model, BaseModel)):
        raise ConfigurationError(
            f'tool "{name}" ({owner}) needs a pydantic BaseModel input, got {input_model!r}', option="input"
        )
    if not description or not description.strip():
        raise ConfigurationError(
            f'tool "{name}" ({owner}) has no description: the model chooses tools by it; '
            "write a docstring or pass description=...",
            option="description",
        )
    return ToolSpec(
        name=name,
        description=description.strip(),
        kind=kind,  # type: ignore[arg-type]  # narrowed by the check above
        input_model=input_model,
        roles=_roles(roles, "roles", owner),
        ability=ability,
        enabled=enabled,
        can_use=can_use,
        describe=describe,
        approver_roles=_roles(approver_roles, "approver_roles", owner),
        self_approval=bool(self_approval),
        approval_ttl=_ttl(approval_ttl, owner),
    )


async def _run(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Await an async callable; run a sync one in a worker thread so it never blocks the event loop."""
    if inspect.iscoroutinefunction(fn):
        return await fn(*args, **kwargs)
    return await _run_in_thread(fn, kwargs, *args)


async def _run_in_thread(fn: Callable[..., Any], kwargs: dict[str, Any], *args: Any) -> Any:
    """Run a sync callable in a worker thread; a coroutine it returns is awaited here."""
    result = await threads.run_sync(fn, *args, **kwargs)
    if inspect.isawaitable(result):  # a sync wrapper that returned a coroutine
        result = await result
    return result


class FunctionTool:
    """A tool made from a function (`@tool`, `define_tool`). Satisfies the `Tool` protocol.

    Calling the object calls the original function unchanged, so unit tests can use it directly.
    """

    def __init__(
        self,
        spec: ToolSpec,
        fn: Callable[..., Any],
        invoke: Callable[[BaseModel, ToolContext], Awaitable[Any]],
        present: PresentArg = None,
    ) -> None:
        self.spec = spec
        self.origin = qualname(fn)
        self._fn = fn
        self._invoke = invoke
        self.present = present
        functools.update_wrapper(self, fn)  # copies __name__/__doc__ so the object reads like the function

    async def invoke(self, input: BaseModel, ctx: ToolContext) -> Any:
        """Run the tool with an already validated input model. Exceptions of the tool propagate unchanged."""
        return await self._invoke(input, ctx)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._fn(*args, **kwargs)

    def __repr__(self) -> str:
        return f"<FunctionTool {self.spec.name!r} kind={self.spec.kind} from {self.origin}>"


def _function_tool(
    fn: Callable[..., Any],
    *,
    name: str | None,
    description: str | None,
    kind: str,
    roles: RolesArg,
    ability: str | None,
    enabled: EnabledFlag,
    can_use: CanUse | None,
    describe: Describe | None,
    approver_roles: RolesArg,
    self_approval: bool,
    approval_ttl: TtlArg,
    blocking: bool = True,
    present: PresentArg = None,
) -> FunctionTool:
    if not callable(fn):
        raise ConfigurationError(f"@tool decorates a function, got {fn!r}")
    tool_name = name or str(getattr(fn, "__name__", ""))
    shape = call_shape(fn, tool_name)
    spec = build_spec(
        owner=qualname(fn),
        name=tool_name,
        description=description or inspect.getdoc(fn),
        kind=kind,
        input_model=shape.input_model,
        roles=roles,
        ability=ability,
        enabled=enabled,
        can_use=can_use,
        describe=describe,
        approver_roles=approver_roles,
        self_approval=self_approval,
        approval_ttl=approval_ttl,
    )

    if inspect.iscoroutinefunction(fn):  # decided once here, not on every call

        async def invoke(input: BaseModel, ctx: ToolContext) -> Any:
            return await fn(**shape.kwargs(input, ctx))

    elif blocking:

        async def invoke(input: BaseModel, ctx: ToolContext) -> Any:
            return await _run_in_thread(fn, shape.kwargs(input, ctx))

    else:

        async def invoke(input: BaseModel, ctx: ToolContext) -> Any:
            result = fn(**shape.kwargs(input, ctx))  # declared non-blocking: on the loop, no thread hop
            return (await result) if inspect.isawaitable(result) else result

    return FunctionTool(spec, fn, invoke, present)


@overload
def tool(fn: Callable[..., Any], /) -> FunctionTool: ...


@overload
def tool(
    *,
    name: str | None = None,
    description: str | None = None,
    kind: AuthoredKind = "read",
    roles: RolesArg = None,
    ability: str | None = None,
    enabled: EnabledFlag = True,
    can_use: CanUse | None = None,
    describe: Describe | None = None,
    approver_roles: RolesArg = None,
    self_approval: bool = False,
    approval_ttl: TtlArg = None,
    blocking: bool = True,
    present: PresentArg = None,
) -> Callable[[Callable[..., Any]], FunctionTool]: ...


def tool(
    fn: Callable[..., Any] | None = None,
    /,
    *,
    name: str | None = None,
    description: str | None = None,
    kind: AuthoredKind = "read",
    roles: RolesArg = None,
    ability: str | None = None,
    enabled: EnabledFlag = True,
    can_use: CanUse | None = None,
    describe: Describe | None = None,
    approver_roles: RolesArg = None,
    self_approval: bool = False,
    approval_ttl: TtlArg = None,
    blocking: bool = True,
    present: PresentArg = None,
) -> FunctionTool | Callable[[Callable[..., Any]], FunctionTool]:
    """Turn a function (async or sync) into a tool; use bare (`@tool`) or with options (`@tool(kind="action")`).

    The input model is the function's single pydantic-model parameter, or else is built from its typed
    parameters (defaults and `Annotated[..., Field(description=...)]` honoured). A parameter annotated
    `ToolContext` receives the call context. The description is the docstring unless given.
    A sync function runs in a worker thread so it never blocks the event loop; `blocking=False` declares
    that it never blocks (pure computation of microseconds) and calls it on the loop, saving the thread
    hop (~0.1 ms idle, milliseconds on a loaded host) — never for I/O or anything slow.
    `present(output, ctx)` turns a successful result into UI components (the model still gets `output`).
    `approver_roles` makes approval need one of those roles and someone other than the requester (four
    eyes); `self_approval=True` lets a requester who holds one of the roles approve their own call.
    Raises `ConfigurationError` (naming the function) for a missing description, a bad name or kind.
    """
    options: dict[str, Any] = {
        "name": name,
        "description": description,
        "kind": kind,
        "roles": roles,
        "ability": ability,
        "enabled": enabled,
        "can_use": can_use,
        "describe": describe,
        "approver_roles": approver_roles,
        "self_approval": self_approval,
        "approval_ttl": approval_ttl,
        "blocking": blocking,
        "present": present,
    }
    if fn is not None:
        return _function_tool(fn, **options)
    return lambda f: _function_tool(f, **options)


def define_tool(
    *,
    name: str,
    description: str,
    input: type[BaseModel],
    execute: Callable[[Any, ToolContext], Any],
    kind: AuthoredKind = "read",
    roles: RolesArg = None,
    ability: str | None = None,
    enabled: EnabledFlag = True,
    can_use: CanUse | None = None,
    describe: Describe | None = None,
    approver_roles: RolesArg = None,
    self_approval: bool = False,
    approval_ttl: TtlArg = None,
    present: PresentArg = None,
) -> FunctionTool:
    """Build a tool from explicit parts: `execute(input_model, ctx)` may be sync (run in a thread) or async.

    `present(output, ctx)` optionally turns a successful result into UI components.
    """
    spec = build_spec(
        owner=f"define_tool(name={name!r})",
        name=name,
        description=description,
        kind=kind,
        input_model=input,
        roles=roles,
        ability=ability,
        enabled=enabled,
        can_use=can_use,
        describe=describe,
        approver_roles=approver_roles,
        self_approval=self_approval,
        approval_ttl=approval_ttl,
    )

    async def invoke(value: BaseModel, ctx: ToolContext) -> Any:
        return await _run(execute, value, ctx)

    return FunctionTool(spec, execute, invoke, present)


class _NoInput(BaseModel):
    """A tool that takes no arguments."""


class BaseTool(ABC):
    """The class form: metadata as class attributes, the work in `execute`.

    Required: `name`, `kind` (or subclass `ReadTool`/`ActionTool`), `execute`. Optional: `description`
    (default: the class docstring), `Input` (default: no arguments), `roles`, `ability`, `approver_roles`,
    `self_approval`, `approval_ttl`, the per-call hooks `is_enabled()`, `can_use(actor)`, `describe(ctx)`, and
    `present(self, output, ctx)` to show a successful result as UI components.
    Register the class to have it built lazily by the registry's factory (dependency injection),
    or register an instance.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    kind: ClassVar[AuthoredKind]
    Input: ClassVar[type[BaseModel]] = _NoInput
    roles: ClassVar[RolesArg] = None
    ability: ClassVar[str | None] = None
    approver_roles: ClassVar[RolesArg] = None
    self_approval: ClassVar[bool] = False
    approval_ttl: ClassVar[TtlArg] = None

    @abstractmethod
    async def execute(self, input: Any, ctx: ToolContext) -> Any:
        """Do the work with the validated `Input` instance; the result is serialised for the model."""

    def is_enabled(self) -> bool:
        """Re-read on every offer and invoke; False hides the tool and refuses calls (`ToolDisabledError`)."""
        return True

    def can_use(self, actor: Actor) -> bool | Awaitable[bool]:
        """An extra per-actor check after the roles policy; False refuses (`ToolForbiddenError`)."""
        return True

    def describe(self, ctx: DescribeContext) -> ToolAvailability | None | Awaitable[ToolAvailability | None]:
        """Hide the tool for this call (`available=False`) or change its description; None keeps it as is."""
        return None

    @classmethod
    def overrides(cls, method: str) -> bool:
        """Whether this class replaces one of the per-call hooks (then the registry must build an instance)."""
        return getattr(cls, method) is not getattr(BaseTool, method)

    @classmethod
    def tool_spec(cls) -> ToolSpec:
        """The spec from class attributes alone, without building an instance (hooks not bound)."""
        owner = qualname(cls)
        if inspect.isabstract(cls):
            raise ConfigurationError(
                f"tool class {owner} is abstract: implement `async def execute(self, input, ctx)`", code="abstract_tool"
            )
        doc = inspect.cleandoc(cls.__doc__) if cls.__doc__ else None
        return build_spec(
            owner=owner,
            name=getattr(cls, "name", ""),
            description=getattr(cls, "description", None) or doc,
            kind=getattr(cls, "kind", "(missing: set kind or subclass ReadTool/ActionTool)"),
            input_model=cls.Input,
            roles=cls.roles,
            ability=cls.ability,
            approver_roles=cls.approver_roles,
            self_approval=cls.self_approval,
            approval_ttl=cls.approval_ttl,
        )

    def bound_spec(self) -> ToolSpec:
        """The spec with this instance's overridden hooks bound into it."""
        cls = type(self)
        return replace(
            cls.tool_spec(),
            enabled=self.is_enabled if cls.overrides("is_enabled") else True,
            can_use=self.can_use if cls.overrides("can_use") else None,
            describe=self.describe if cls.overrides("describe") else None,
        )

    @property
    def spec(self) -> ToolSpec:
        """`bound_spec()`, built once per instance (so an instance satisfies the `Tool` protocol)."""
        cached: ToolSpec | None = self.__dict__.get("_agora_spec")
        if cached is None:
            cached = self.__dict__["_agora_spec"] = self.bound_spec()
        return cached

    async def invoke(self, input: BaseModel, ctx: ToolContext) -> Any:
        """Run `execute` (a sync `execute` runs in a worker thread)."""
        return await _run(self.execute, input=input, ctx=ctx)


class ReadTool(BaseTool, ABC):
    """A class tool that only reads: executed without approval."""

    kind: ClassVar[AuthoredKind] = "read"


class ActionTool(BaseTool, ABC):
    """A class tool with side effects: every call waits for a human approval."""

    kind: ClassVar[AuthoredKind] = "action"
