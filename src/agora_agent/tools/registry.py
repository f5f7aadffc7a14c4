"""The tool registry: what the model is offered, and whether a call may run.

One filter chain, in one order, on offer AND on invoke — written once, as `CHAIN`:

    allow-list -> enabled -> roles policy -> can_use(actor) -> describe()

`offer()` drops a tool at the first stage that refuses it; `authorize()` walks the same stages and
raises the refusing stage's error, then validates the arguments:

    unknown / outside the allow-list / describe() unavailable -> ToolNotFoundError
    enabled is false                                          -> ToolDisabledError
    roles policy or can_use refuses                           -> ToolForbiddenError
    arguments invalid (every issue listed)                    -> ToolInputInvalidError

A predicate that raises refuses (fail closed) and is logged with the tool's name.

Within one run the loop walks the chain through a `ChainMemo`: a tool whose every stage is a
constant or a pure function of the actor and the spec — enabled a plain bool, no `can_use`, no `describe()`,
a roles policy that declares itself `pure` — has the same verdict for the whole run, so it is walked once
and remembered. Any other tool (a callable enabled flag, a `can_use`, a `describe()`, an ability service) is
walked on every offer and on every call, as without a memo; argument validation always runs per call.
"""

from __future__ import annotations

import asyncio
import functools
import hashlib
import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Collection, Mapping
from dataclasses import dataclass, replace
from typing import Any, TypeGuard, TypeVar

from pydantic import BaseModel, ValidationError

from agora_agent._frozen import fast_init
from agora_agent.actors import Actor
from agora_agent.errors import (
    ConfigurationError,
    ToolDisabledError,
    ToolError,
    ToolForbiddenError,
    ToolInputInvalidError,
    ToolNotFoundError,
)
from agora_agent.messages import ToolDefinition
from agora_agent.tools.authoring import BaseTool, FunctionTool
from agora_agent.tools.context import ToolContext
from agora_agent.tools.spec import DescribeContext, RolesPolicy, Tool, ToolAvailability, ToolSpec

__all__ = [
    "CHAIN",
    "AuthorizedCall",
    "ChainMemo",
    "FilterStage",
    "StageQuestion",
    "ToolFactory",
    "ToolRegistry",
    "args_hash",
]

logger = logging.getLogger(__name__)

ToolFactory = Callable[[type[BaseTool]], BaseTool]
T = TypeVar("T")


def args_hash(args: Mapping[str, Any]) -> str:
    """SHA-256 (hex) of the canonical JSON of `args` (sorted keys, no spaces): binds an approval to its arguments."""
    canonical = json.dumps(args, sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


@fast_init
@dataclass(frozen=True)  # no slots: `args_hash` is cached in the instance dict
class AuthorizedCall:
    """A call that passed every filter: the validated input, its JSON form and the hash of that form."""

    spec: ToolSpec
    input: BaseModel
    args: dict[str, Any]

    @functools.cached_property
    def args_hash(self) -> str:
        """sha256 of the canonical JSON of `args`; computed on first use (only approvals need it)."""
        return args_hash(self.args)


class _Entry:
    """One registered name: its spec, a cached JSON schema, and how to get something runnable."""

    __slots__ = ("_cls", "_factory", "_instance", "_schema", "definition", "origin", "spec", "tool")

    def constant(self) -> bool:
        """True when no stage of this tool asks anything but the spec, the actor and the roles policy: enabled
        is a plain bool, and there is neither `can_use` nor `describe()`."""
        spec = self.spec
        return type(spec.enabled) is bool and spec.can_use is None and spec.describe is None

    def __init__(self, spec: ToolSpec, origin: str, tool: Tool | None = None) -> None:
        self.spec = spec
        self.origin = origin
        self.tool = tool
        self._cls: type[BaseTool] | None = None
        self._factory: ToolFactory | None = None
        self._instance: BaseTool | None = None
        self._schema: dict[str, Any] | None = None
        self.definition: ToolDefinition | None = None

    @classmethod
    def for_class(cls, tool_cls: type[BaseTool], factory: ToolFactory) -> _Entry:
        entry = cls(tool_cls.tool_spec(), f"{tool_cls.__module__}.{tool_cls.__qualname__}")
        entry._cls, entry._factory = tool_cls, factory
        # Hooks run on an instance: bind lazy forwarders so the instance is built only when first asked.
        entry.spec = replace(
            entry.spec,
            enabled=(lambda: entry.instance().is_enabled()) if tool_cls.overrides("is_enabled") else True,
            can_use=(lambda actor: entry.instance().can_use(actor)) if tool_cls.overrides("can_use") else None,
            describe=(lambda ctx: entry.instance().describe(ctx)) if tool_cls.overrides("describe") else None,
        )
        return entry

    def instance(self) -> BaseTool:
        """Build the class tool through the factory once, then reuse it."""
        if self._instance is None:
            assert self._cls is not None and self._factory is not None
            try:
                built = self._factory(self._cls)
            except Exception as exc:
                raise ConfigurationError(
                    f'tool factory failed to build {self.origin} for tool "{self.spec.name}": {exc}',
                    code="tool_factory_failed",
                ) from exc
            if not isinstance(built, self._cls):
                raise ConfigurationError(
                    f"tool factory returned {type(built).__name__} for {self.origin}; it must return an instance of it"
                )
            self._instance = built
        return self._instance

    def runnable(self) -> Tool:
        if self.tool is not None:
            return self.tool
        if self._cls is not None:
            return self.instance()
        raise ConfigurationError(
            f'tool "{self.spec.name}" (kind {self.spec.kind}) has no handler: the agent loop runs it, not the registry',
            code="no_handler",
        )

    def schema(self) -> dict[str, Any]:
        if self._schema is None:
            self._schema = self.spec.json_schema()
        return self._schema

    def to_definition(self, description: str | None) -> ToolDefinition:
        if description is not None:
            return ToolDefinition(
                name=self.spec.name, description=description, input_schema=self.schema(), kind=self.spec.kind
            )
        if self.definition is None:
            self.definition = ToolDefinition(
                name=self.spec.name, description=self.spec.description, input_schema=self.schema(), kind=self.spec.kind
            )
        return self.definition


def _pending(value: Any) -> TypeGuard[Awaitable[Any]]:
    """`inspect.isawaitable`, with a fast exit for the usual plain answers (the ABC check dominates offer's cost)."""
    kind = type(value)
    if kind is bool or value is None or kind is ToolAvailability:
        return False
    return inspect.isawaitable(value)


def _refusing(what: str, spec: ToolSpec, value: T | Awaitable[T], refusal: T) -> T | Awaitable[T]:
    """Wrap an awaitable verdict so that raising becomes `refusal` (fail closed) and is logged."""
    if not _pending(value):
        return value
    verdict: Awaitable[T] = value

    async def settle() -> T:
        try:
            return await verdict
        except Exception:
            logger.exception('%s of tool "%s" raised; treating it as a refusal', what, spec.name)
            return refusal

    return settle()


def _ask(what: str, spec: ToolSpec, fn: Callable[..., Any], *args: Any, refusal: Any = False) -> Any:
    """Call one predicate; a raise (now or when awaited) becomes `refusal`."""
    try:
        return _refusing(what, spec, fn(*args), refusal)
    except Exception:
        logger.exception('%s of tool "%s" raised; treating it as a refusal', what, spec.name)
        return refusal


async def _settle_all(values: list[Any]) -> list[Any]:
    """Resolve a batch of verdicts: sync ones as they are, awaitable ones concurrently."""
    pending = [i for i, v in enumerate(values) if _pending(v)]
    if pending:
        for i, result in zip(pending, await asyncio.gather(*(values[i] for i in pending)), strict=True):
            values[i] = result
    return values


def _available(verdict: Any) -> tuple[bool, str | None]:
    """Read a describe() answer: None/True = available; False or available=False = hidden."""
    if verdict is None or verdict is True:
        return True, None
    if isinstance(verdict, ToolAvailability):
        return verdict.available, verdict.description
    return bool(verdict), None


def _is_enabled(spec: ToolSpec) -> bool:
    try:
        return spec.is_enabled()
    except Exception:
        logger.exception('enabled flag of tool "%s" raised; treating the tool as disabled', spec.name)
        return False


def _verdict(value: Any) -> tuple[bool, str | None]:
    """Read a yes/no answer (allow-list, enabled, roles policy, can_use)."""
    return bool(value), None


@dataclass(frozen=True, slots=True)
class StageQuestion:
    """What every stage may look at for one actor: the roles policy, the allow-list, the describe() context."""

    actor: Actor
    policy: RolesPolicy
    allowed: Collection[str] | None
    describe_ctx: DescribeContext


@dataclass(frozen=True, slots=True)
class FilterStage:
    """One stage of the chain.

    `ask(spec, question)` returns the stage's answer, sync or awaitable (a raise already turned into a refusal);
    `read(answer)` says whether the tool passes and, for describe(), the description it offers; `refusal(name)`
    is the error `authorize()` raises when this stage is the first to refuse (its `stage` set to `name`).
    """

    name: str
    ask: Callable[[ToolSpec, StageQuestion], Any]
    refusal: Callable[[str], ToolError]
    read: Callable[[Any], tuple[bool, str | None]] = _verdict


def _in_allow_list(spec: ToolSpec, q: StageQuestion) -> bool:
    return q.allowed is None or spec.name in q.allowed


def _enabled(spec: ToolSpec, q: StageQuestion) -> bool:
    return _is_enabled(spec)


def _roles_policy(spec: ToolSpec, q: StageQuestion) -> Any:
    return _ask("roles policy", spec, q.policy.can, q.actor, spec)


def _can_use(spec: ToolSpec, q: StageQuestion) -> Any:
    return True if spec.can_use is None else _ask("can_use", spec, spec.can_use, q.actor)


def _describe(spec: ToolSpec, q: StageQuestion) -> Any:
    return None if spec.describe is None else _ask("describe", spec, spec.describe, q.describe_ctx)


CHAIN: tuple[FilterStage, ...] = (
    FilterStage(
        "allow-list", _in_allow_list, lambda name: ToolNotFoundError(name, "it is not in this agent's tool list")
    ),
    FilterStage("enabled", _enabled, ToolDisabledError),
    FilterStage("roles policy", _roles_policy, ToolForbiddenError),
    FilterStage("can_use", _can_use, lambda name: ToolForbiddenError(name, "refused by the tool's can_use check")),
    FilterStage(
        "describe", _describe, lambda name: ToolNotFoundError(name, "it is unavailable for this call"), _available
    ),
)
"""The filter chain, in order; `offer()` and `authorize()` both walk exactly these stages."""


def _pure(policy: RolesPolicy) -> bool:
    """A roles policy whose `can` answers synchronously from the actor and the spec alone says `pure = True`."""
    return getattr(policy, "pure", False) is True


class ChainMemo:
    """The verdicts of `CHAIN` that cannot change for one (registry, actor, roles policy, allow-list): one run.

    Built by `ToolRegistry.memo`; `offer()` and `authorize()` given it reuse the verdict of every constant tool
    (see the module docstring) and walk the chain afresh for the others. A memo handed a different actor,
    policy or allow-list than it was built for is ignored, and a registration since it was built resets it.
    """

    __slots__ = ("_offered", "_verdicts", "_version", "actor", "allow_list", "policy", "question", "registry")

    def __init__(
        self,
        registry: ToolRegistry,
        actor: Actor,
        policy: RolesPolicy,
        allow_list: Collection[str] | None,
        describe_ctx: DescribeContext,
    ) -> None:
        self.registry = registry
        self.actor = actor
        self.policy = policy
        self.allow_list = allow_list
        self.question = StageQuestion(actor, policy, _as_set(allow_list), describe_ctx)
        self._version = registry._version
        self._verdicts: dict[str, int] = {}  # name -> index of the first refusing stage, -1 when none refuses
        self._offered: list[ToolDefinition] | None = None

    def fits(self, registry: ToolRegistry, actor: Actor, policy: RolesPolicy, allow_list: object) -> bool:
        """Whether this memo answers for these arguments (and is reset first if the registry changed)."""
        if registry is not self.registry or policy is not self.policy or allow_list is not self.allow_list:
            return False
        if actor is not self.actor and actor != self.actor:
            return False
        if self._version != registry._version:
            self._version, self._verdicts, self._offered = registry._version, {}, None
        return True

    def verdict(self, entry: _Entry) -> int | None:
        """The index of the stage refusing a constant tool (-1: none refuses); None when the tool is not constant
        (its chain must be walked each time)."""
        known = self._verdicts.get(entry.spec.name)
        if known is not None:
            return known
        if not (entry.constant() and _pure(self.policy)):
            return None
        refused = -1
        for index, stage in enumerate(CHAIN):  # every stage of a constant tool answers synchronously
            passes, _ = stage.read(stage.ask(entry.spec, self.question))
            if not passes:
                refused = index
                break
        self._verdicts[entry.spec.name] = refused
        return refused


def _issues(exc: ValidationError) -> list[str]:
    out = []
    for err in exc.errors(include_url=False):
        loc = ".".join(str(p) for p in err["loc"]) or "input"
        out.append(f"{loc}: {err['msg']}")
    return out


class ToolRegistry:
    """Name-keyed tools in registration order; the first registration of a name wins.

    `factory` builds class tools (`BaseTool` subclasses) on first need; the default is `cls()`.
    """

    def __init__(self, factory: ToolFactory | None = None) -> None:
        self._factory: ToolFactory = factory or (lambda cls: cls())
        self._entries: dict[str, _Entry] = {}
        self._version = 0  # bumped by every registration: a `ChainMemo` built before it starts over

    # -- registration -------------------------------------------------------------------------------

    def register(self, obj: object) -> bool:
        """Add a `FunctionTool`, a `Tool`, a `BaseTool` subclass (built lazily) or a `BaseTool` instance.

        Returns False (and logs a WARNING naming both) when the name is already taken; the first stays.
        Raises `ConfigurationError` for anything that is not a tool.
        """
        if isinstance(obj, type) and issubclass(obj, BaseTool):
            return self._add(_Entry.for_class(obj, self._factory), obj)
        if isinstance(obj, FunctionTool):
            return self._add(_Entry(obj.spec, obj.origin, obj), obj)
        if isinstance(obj, Tool):
            origin = f"{type(obj).__module__}.{type(obj).__qualname__}"
            return self._add(_Entry(obj.spec, origin, obj), obj)
        raise ConfigurationError(
            f"cannot register {obj!r} as a tool: use @tool, define_tool, a BaseTool subclass, "
            "or an object with .spec and async .invoke(input, ctx)",
            code="not_a_tool",
        )

    def register_spec(self, spec: ToolSpec) -> bool:
        """Add a spec without a handler (delegation, kind "agent"): offered and authorized, but run by the loop."""
        return self._add(_Entry(spec, f"spec {spec.name!r} ({spec.kind})"), spec)

    def _add(self, entry: _Entry, source: object) -> bool:
        name = entry.spec.name
        existing = self._entries.get(name)
        if existing is None:
            self._entries[name] = entry
            self._version += 1
            return True
        if existing.tool is source or existing._cls is source:
            logger.debug('tool "%s" registered twice from %s; ignoring the repeat', name, entry.origin)
        else:
            logger.warning(
                'tool name "%s" from %s is already registered by %s; keeping the first (rename one of them)',
                name,
                entry.origin,
                existing.origin,
            )
        return False

    def get(self, name: str) -> ToolSpec | None:
        """The spec registered under `name`, or None."""
        entry = self._entries.get(name)
        return entry.spec if entry is not None else None

    def specs(self) -> list[ToolSpec]:
        """Every spec, in registration order."""
        return [e.spec for e in self._entries.values()]

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __len__(self) -> int:
        return len(self._entries)

    def warn_unguarded_actions(self) -> list[str]:
        """Log one WARNING per `action` tool that declares no roles (anyone may request it); return their names."""
        names = [e.spec.name for e in self._entries.values() if e.spec.kind == "action" and not e.spec.roles]
        for name in names:
            logger.warning(
                'action tool "%s" declares no roles: under an open roles policy every actor may request it; '
                "set roles=[...] on the tool (or use ClosedRolesPolicy / empty_roles='deny')",
                name,
            )
        return names

    # -- offer ---------------------------------------------------------------------------------------

    async def offer(
        self,
        actor: Actor,
        *,
        policy: RolesPolicy,
        allow_list: Collection[str] | None = None,
        describe_ctx: DescribeContext | None = None,
        memo: ChainMemo | None = None,
    ) -> list[ToolDefinition]:
        """The tools this actor may be offered now, in registration order, after the whole filter chain.

        Async predicates of one stage run concurrently. The `input_schema` dicts are shared and cached:
        copy before changing one. With a `memo` (see `memo()`) the verdicts of constant tools are reused;
        then the returned list may be the memo's own: do not change it.
        """
        if memo is not None and memo.fits(self, actor, policy, allow_list):
            offered = memo._offered
            return offered if offered is not None else await self._offer_memo(memo, describe_ctx)
        question = StageQuestion(actor, policy, _as_set(allow_list), describe_ctx or DescribeContext(actor=actor))
        return await _walk(list(self._entries.values()), question)

    def offered_now(
        self, actor: Actor, *, policy: RolesPolicy, allow_list: Collection[str] | None, memo: ChainMemo
    ) -> list[ToolDefinition] | None:
        """`offer`'s answer when the run's `memo` holds it already (a run's every step after the first), without an
        await; None: ask `offer`."""
        offered = memo._offered
        if offered is not None and memo.fits(self, actor, policy, allow_list):
            return memo._offered  # None again if the registry changed (`fits` resets the memo)
        return None

    def memo(
        self,
        actor: Actor,
        *,
        policy: RolesPolicy,
        allow_list: Collection[str] | None = None,
        describe_ctx: DescribeContext | None = None,
    ) -> ChainMemo:
        """A memo of the chain's constant verdicts for one run of `actor` (pass the same `policy` and
        `allow_list` objects to `offer` and `authorize`)."""
        return ChainMemo(self, actor, policy, allow_list, describe_ctx or DescribeContext(actor=actor))

    async def _offer_memo(self, memo: ChainMemo, describe_ctx: DescribeContext | None) -> list[ToolDefinition]:
        if memo._offered is not None:
            return memo._offered
        entries = list(self._entries.values())
        verdicts = [memo.verdict(e) for e in entries]
        walked: list[ToolDefinition] = []
        if None in verdicts:  # some tools are walked on every offer
            question = memo.question
            if describe_ctx is not None and describe_ctx != question.describe_ctx:
                question = StageQuestion(question.actor, question.policy, question.allowed, describe_ctx)
            walked = await _walk([e for e, v in zip(entries, verdicts, strict=True) if v is None], question)
        by_name = {d.name: d for d in walked}
        offered = []
        for entry, verdict in zip(entries, verdicts, strict=True):
            if verdict is None:
                definition = by_name.get(entry.spec.name)
                if definition is not None:
                    offered.append(definition)
            elif verdict < 0:
                offered.append(entry.to_definition(None))
        if None not in verdicts:
            memo._offered = offered
        return offered

    # -- invoke --------------------------------------------------------------------------------------

    async def authorize(
        self,
        name: str,
        args: Mapping[str, Any],
        *,
        ctx: ToolContext,
        policy: RolesPolicy,
        allow_list: Collection[str] | None = None,
        memo: ChainMemo | None = None,
    ) -> AuthorizedCall:
        """Walk `CHAIN` for one call, then validate `args`; raises the error of the first refusing stage.

        With a `memo` built for the same actor, policy and allow-list, a constant tool's verdict is the memo's."""
        entry = self._entries.get(name)
        if entry is None:
            raise ToolNotFoundError(name)
        spec = entry.spec
        actor = ctx.actor
        verdict = memo.verdict(entry) if memo is not None and memo.fits(self, actor, policy, allow_list) else None
        if verdict is None:
            dctx = DescribeContext(actor=actor, thread_id=ctx.thread_id, agent=ctx.agent, channel=ctx.channel)
            verdict = await _first_refusal(spec, StageQuestion(actor, policy, _as_set(allow_list), dctx))
        if verdict >= 0:
            stage = CHAIN[verdict]
            refusal = stage.refusal(name)
            refusal.stage = stage.name
            raise refusal
        if not isinstance(args, Mapping):
            raise ToolInputInvalidError(name, [f"input: expected an object, got {type(args).__name__}"])
        try:
            # pydantic's core validator and serializer directly: what model_validate / model_dump(mode="json")
            # call, without their Python-level wrappers (a tool step pays both)
            model = spec.input_model
            value = model.__pydantic_validator__.validate_python(args)
        except ValidationError as exc:
            raise ToolInputInvalidError(name, _issues(exc)) from None
        dumped = model.__pydantic_serializer__.to_python(value, mode="json")
        return AuthorizedCall(spec=spec, input=value, args=dumped)

    def runnable(self, name: str) -> object | None:
        """The registered tool object for `name` (built on first use), or None; e.g. to reach its `present`."""
        entry = self._entries.get(name)
        return entry.runnable() if entry is not None else None

    def execute(self, call: AuthorizedCall, ctx: ToolContext) -> Awaitable[Any]:
        """Run an authorized call once (no retry): await the answer; the tool's exceptions propagate unchanged.

        Returns the tool's own awaitable (no coroutine of the registry's around it)."""
        entry = self._entries.get(call.spec.name)
        if entry is None:
            return _raise(ToolNotFoundError(call.spec.name))
        tool = entry.runnable()
        if type(tool) is FunctionTool:
            return tool._invoke(call.input, ctx)  # what FunctionTool.invoke awaits, one layer less
        return tool.invoke(call.input, ctx)

    async def invoke(
        self,
        name: str,
        args: Mapping[str, Any],
        ctx: ToolContext,
        *,
        policy: RolesPolicy,
        allow_list: Collection[str] | None = None,
    ) -> Any:
        """`authorize` then `execute`: the one-call path for direct use (MCP, tests)."""
        call = await self.authorize(name, args, ctx=ctx, policy=policy, allow_list=allow_list)
        return await self.execute(call, ctx)


def _as_set(allow_list: Collection[str] | None) -> Collection[str] | None:
    if allow_list is None or isinstance(allow_list, set | frozenset | dict):
        return allow_list
    return frozenset(allow_list)


async def _raise(error: Exception) -> Any:
    raise error


async def _resolve(value: Any) -> Any:
    return await value if _pending(value) else value


async def _first_refusal(spec: ToolSpec, question: StageQuestion) -> int:
    """The index in `CHAIN` of the first stage refusing the tool, -1 when every stage lets it through."""
    for index, stage in enumerate(CHAIN):
        passes, _ = stage.read(await _resolve(stage.ask(spec, question)))
        if not passes:
            return index
    return -1


async def _walk(live: list[_Entry], question: StageQuestion) -> list[ToolDefinition]:
    """The definitions of the entries every stage of `CHAIN` lets through, in order (one stage at a time)."""
    descriptions: dict[str, str] = {}
    for stage in CHAIN:
        answers = await _settle_all([stage.ask(e.spec, question) for e in live])
        kept = []
        for entry, answer in zip(live, answers, strict=True):
            passes, description = stage.read(answer)
            if passes:
                kept.append(entry)
                if description is not None:
                    descriptions[entry.spec.name] = description
        live = kept
    return [e.to_definition(descriptions.get(e.spec.name)) for e in live]
