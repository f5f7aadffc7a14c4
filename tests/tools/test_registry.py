"""ToolRegistry: registration, the filter chain on offer and invoke, validation, lazy class tools (DESIGN §3)."""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import BaseModel

from agora_agent.actors import Actor
from agora_agent.errors import (
    ConfigurationError,
    ToolDisabledError,
    ToolError,
    ToolForbiddenError,
    ToolInputInvalidError,
    ToolNotFoundError,
)
from agora_agent.governance.policy import DefaultRolesPolicy
from agora_agent.tools.authoring import ActionTool, ReadTool, define_tool, tool
from agora_agent.tools.context import ToolContext
from agora_agent.tools.registry import CHAIN, AuthorizedCall, ToolRegistry, args_hash
from agora_agent.tools.spec import DescribeContext, ToolAvailability, ToolSpec

ALICE = Actor("alice", ("ops",))
BOB = Actor("bob", ("viewer",))
OPEN = DefaultRolesPolicy()


def ctx(actor: Actor = ALICE, **kw: Any) -> ToolContext:
    return ToolContext(actor=actor, **kw)


class Trace:
    """Records which filter asked about which tool, in order; each answer is configurable."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def enabled(self, value: bool) -> Callable[[], bool]:
        def fn() -> bool:
            self.calls.append("enabled")
            return value

        return fn

    def can_use(self, value: bool) -> Callable[[Actor], bool]:
        def fn(actor: Actor) -> bool:
            self.calls.append("can_use")
            return value

        return fn

    def describe(self, available: bool) -> Callable[[DescribeContext], ToolAvailability]:
        def fn(dctx: DescribeContext) -> ToolAvailability:
            self.calls.append("describe")
            return ToolAvailability(available=available)

        return fn

    def policy(self, value: bool) -> Any:
        trace = self

        class Policy:
            def can(self, actor: Actor, spec: ToolSpec) -> bool:
                trace.calls.append("policy")
                return value

        return Policy()


class Amount(BaseModel):
    amount: int
    currency: str


def make(
    name: str = "pay",
    *,
    trace: Trace | None = None,
    enabled: bool = True,
    can_use: bool = True,
    available: bool = True,
    **kw: Any,
) -> Any:
    async def execute(value: Amount, c: ToolContext) -> str:
        return f"{value.amount} {value.currency}"

    t = trace or Trace()
    return define_tool(
        name=name,
        description=f"The {name} tool.",
        input=Amount,
        execute=execute,
        enabled=t.enabled(enabled),
        can_use=t.can_use(can_use),
        describe=t.describe(available),
        **kw,
    )


# -- registration --------------------------------------------------------------------------------------


@tool
async def alpha(x: int) -> int:
    """Alpha."""
    return x


@tool
async def beta(x: int) -> int:
    """Beta."""
    return x


class Proto:
    """A bare Tool-protocol object."""

    spec = ToolSpec(name="proto", description="Proto.", kind="read", input_model=Amount)

    async def invoke(self, input: BaseModel, ctx: ToolContext) -> str:
        return "proto"


@pytest.mark.ref("TOOL-14")
def test_register_keeps_order_and_answers_lookups() -> None:
    reg = ToolRegistry()
    assert reg.register(beta) and reg.register(alpha) and reg.register(Proto())
    assert [s.name for s in reg.specs()] == ["beta", "alpha", "proto"]
    assert "alpha" in reg and "nope" not in reg and len(reg) == 3
    assert reg.get("alpha") is alpha.spec
    assert reg.get("nope") is None


@pytest.mark.ref("TOOL-14", "TOOL-15")
def test_duplicate_name_keeps_the_first_and_warns_naming_both(caplog: pytest.LogCaptureFixture) -> None:
    reg = ToolRegistry()

    @tool(name="alpha")
    async def impostor(x: int) -> int:
        """Impostor."""
        return -x

    assert reg.register(alpha) is True
    with caplog.at_level(logging.WARNING, logger="agora_agent.tools.registry"):
        assert reg.register(impostor) is False
    assert reg.get("alpha") is alpha.spec
    [record] = [r for r in caplog.records if r.levelno == logging.WARNING]
    assert "test_registry.alpha" in record.getMessage()
    assert "impostor" in record.getMessage()


def test_registering_the_same_object_twice_is_quiet(caplog: pytest.LogCaptureFixture) -> None:
    reg = ToolRegistry()
    reg.register(alpha)
    with caplog.at_level(logging.WARNING):
        assert reg.register(alpha) is False
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]


def test_register_refuses_non_tools() -> None:
    with pytest.raises(ConfigurationError) as refused:
        ToolRegistry().register(lambda: None)
    assert refused.value.code == "not_a_tool"


@pytest.mark.ref("TOOL-01")
async def test_agent_spec_is_offered_but_has_no_handler() -> None:
    reg = ToolRegistry()
    spec = ToolSpec(name="ask_billing", description="Ask billing.", kind="agent", input_model=Amount)
    assert reg.register_spec(spec)
    [definition] = await reg.offer(ALICE, policy=OPEN)
    assert definition.kind == "agent"
    call = await reg.authorize("ask_billing", {"amount": 1, "currency": "EUR"}, ctx=ctx(), policy=OPEN)
    with pytest.raises(ConfigurationError) as no_handler:
        await reg.execute(call, ctx())
    assert no_handler.value.code == "no_handler" and '"ask_billing"' in str(no_handler.value)


# -- offer --------------------------------------------------------------------------------------------


@pytest.mark.ref("TOOL-02", "TOOL-25", "TOOL-28")
async def test_offer_returns_definitions_in_registration_order() -> None:
    reg = ToolRegistry()
    reg.register(beta)
    reg.register(make("pay", kind="action"))
    reg.register(alpha)
    defs = await reg.offer(ALICE, policy=OPEN)
    assert [d.name for d in defs] == ["beta", "pay", "alpha"]
    pay = defs[1]
    assert pay.kind == "action" and pay.description == "The pay tool."
    assert pay.input_schema["required"] == ["amount", "currency"]
    # Schemas are generated once per spec and reused.
    assert (await reg.offer(ALICE, policy=OPEN))[1].input_schema is pay.input_schema


@pytest.mark.ref("TOOL-29")
@pytest.mark.parametrize(
    ("allowed", "enabled", "policy", "can_use", "available", "asked"),
    [
        (False, False, False, False, False, []),
        (True, False, False, False, False, ["enabled"]),
        (True, True, False, False, False, ["enabled", "policy"]),
        (True, True, True, False, False, ["enabled", "policy", "can_use"]),
        (True, True, True, True, False, ["enabled", "policy", "can_use", "describe"]),
    ],
)
async def test_offer_stops_at_the_first_refusing_filter_in_order(
    allowed: bool, enabled: bool, policy: bool, can_use: bool, available: bool, asked: list[str]
) -> None:
    trace = Trace()
    reg = ToolRegistry()
    reg.register(make(trace=trace, enabled=enabled, can_use=can_use, available=available))
    defs = await reg.offer(ALICE, policy=trace.policy(policy), allow_list=["pay"] if allowed else ["other"])
    assert defs == []
    assert trace.calls == asked


async def test_offer_with_every_filter_passing_asks_each_once_in_order() -> None:
    trace = Trace()
    reg = ToolRegistry()
    reg.register(make(trace=trace))
    assert [d.name for d in await reg.offer(ALICE, policy=trace.policy(True), allow_list=("pay",))] == ["pay"]
    assert trace.calls == ["enabled", "policy", "can_use", "describe"]


@pytest.mark.ref("TOOL-29")
async def test_describe_can_override_the_description_and_sees_the_call_context() -> None:
    seen: list[DescribeContext] = []

    async def describe(dctx: DescribeContext) -> ToolAvailability:
        seen.append(dctx)
        return ToolAvailability(description=f"Pay for thread {dctx.thread_id}")

    reg = ToolRegistry()
    reg.register(define_tool(name="pay", description="Pay.", input=Amount, execute=lambda v, c: 1, describe=describe))
    dctx = DescribeContext(actor=ALICE, thread_id="t1", agent="billing")
    [d] = await reg.offer(ALICE, policy=OPEN, describe_ctx=dctx)
    assert d.description == "Pay for thread t1"
    assert seen == [dctx]
    assert reg.get("pay") is not None and reg.get("pay").description == "Pay."  # type: ignore[union-attr]


async def test_async_predicates_are_awaited_on_offer() -> None:
    class AsyncPolicy:
        async def can(self, actor: Actor, spec: ToolSpec) -> bool:
            return spec.name != "beta"

    async def can_use(actor: Actor) -> bool:
        return actor.id == "alice"

    reg = ToolRegistry()
    reg.register(alpha)
    reg.register(beta)
    reg.register(define_tool(name="gamma", description="G.", input=Amount, execute=lambda v, c: 1, can_use=can_use))
    assert [d.name for d in await reg.offer(ALICE, policy=AsyncPolicy())] == ["alpha", "gamma"]
    assert [d.name for d in await reg.offer(BOB, policy=AsyncPolicy())] == ["alpha"]


@pytest.mark.ref("POL-05")
async def test_roles_policy_filters_the_offer() -> None:
    reg = ToolRegistry()
    reg.register(alpha)
    reg.register(make("pay", roles=["ops"]))
    assert [d.name for d in await reg.offer(ALICE, policy=OPEN)] == ["alpha", "pay"]
    assert [d.name for d in await reg.offer(BOB, policy=OPEN)] == ["alpha"]


async def test_a_raising_predicate_hides_the_tool_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    def broken(actor: Actor) -> bool:
        raise RuntimeError("directory down")

    async def broken_async(dctx: DescribeContext) -> None:
        raise RuntimeError("describe down")

    reg = ToolRegistry()
    reg.register(define_tool(name="a", description="A.", input=Amount, execute=lambda v, c: 1, can_use=broken))
    reg.register(define_tool(name="b", description="B.", input=Amount, execute=lambda v, c: 1, describe=broken_async))
    reg.register(alpha)
    with caplog.at_level(logging.ERROR, logger="agora_agent.tools.registry"):
        assert [d.name for d in await reg.offer(ALICE, policy=OPEN)] == ["alpha"]
    messages = [r.getMessage() for r in caplog.records]
    assert any('can_use of tool "a"' in m for m in messages)
    assert any('describe of tool "b"' in m for m in messages)
    with pytest.raises(ToolForbiddenError):
        await reg.authorize("a", {"amount": 1, "currency": "EUR"}, ctx=ctx(), policy=OPEN)


# -- authorize / invoke -------------------------------------------------------------------------------

GOOD = {"amount": 5, "currency": "EUR"}


@pytest.mark.ref("TOOL-20", "TOOL-32")
async def test_unknown_tool_is_not_found() -> None:
    with pytest.raises(ToolNotFoundError) as info:
        await ToolRegistry().authorize("ghost", {}, ctx=ctx(), policy=OPEN)
    assert (info.value.tool_name, info.value.stage) == ("ghost", None)  # before any stage: nothing by that name


@pytest.mark.ref("TOOL-29", "TOOL-27")
@pytest.mark.parametrize(
    ("setup", "error", "stage"),
    [
        # a disabled, forbidden tool outside the allow-list: the allow-list answers first
        ({"allowed": False, "enabled": False, "policy": False}, ToolNotFoundError, "allow-list"),
        # disabled beats forbidden
        ({"enabled": False, "policy": False, "can_use": False}, ToolDisabledError, "enabled"),
        # policy beats can_use and describe
        ({"policy": False, "can_use": False, "available": False}, ToolForbiddenError, "roles policy"),
        ({"can_use": False, "available": False}, ToolForbiddenError, "can_use"),
        # unavailable beats bad input
        ({"available": False, "args": {}}, ToolNotFoundError, "describe"),
        # authorization before shape (TOOL-26)
        ({"policy": False, "args": {}}, ToolForbiddenError, "roles policy"),
        ({"args": {"amount": "x"}}, ToolInputInvalidError, None),
    ],
)
async def test_authorize_raises_the_error_of_the_first_refusing_filter(
    setup: dict[str, Any], error: type[ToolError], stage: str | None
) -> None:
    trace = Trace()
    reg = ToolRegistry()
    reg.register(
        make(
            trace=trace,
            enabled=setup.get("enabled", True),
            can_use=setup.get("can_use", True),
            available=setup.get("available", True),
        )
    )
    with pytest.raises(error) as info:
        await reg.authorize(
            "pay",
            setup.get("args", GOOD),
            ctx=ctx(),
            policy=trace.policy(setup.get("policy", True)),
            allow_list=["pay"] if setup.get("allowed", True) else ["else"],
        )
    assert type(info.value) is error and (info.value.tool_name, info.value.stage) == ("pay", stage)
    assert 'tool "pay"' in str(info.value).lower()  # the message names the tool for the model and the log


@pytest.mark.ref("TOOL-29")
async def test_authorize_asks_every_filter_in_order_and_passes_the_call_context_to_describe() -> None:
    seen: list[DescribeContext] = []
    trace = Trace()

    def describe(dctx: DescribeContext) -> None:
        trace.calls.append("describe")
        seen.append(dctx)

    tool_ = define_tool(
        name="pay",
        description="Pay.",
        input=Amount,
        execute=lambda v, c: 1,
        enabled=trace.enabled(True),
        can_use=trace.can_use(True),
        describe=describe,
    )
    reg = ToolRegistry()
    reg.register(tool_)
    c = ctx(thread_id="t1", agent="billing", channel="mcp")
    await reg.authorize("pay", GOOD, ctx=c, policy=trace.policy(True), allow_list={"pay"})
    assert trace.calls == ["enabled", "policy", "can_use", "describe"]
    assert seen == [DescribeContext(actor=ALICE, thread_id="t1", agent="billing", channel="mcp")]


@pytest.mark.ref("TOOL-22")
async def test_every_input_issue_is_listed() -> None:
    reg = ToolRegistry()
    reg.register(make())
    with pytest.raises(ToolInputInvalidError) as info:
        await reg.authorize("pay", {"amount": "lots"}, ctx=ctx(), policy=OPEN)
    assert info.value.issues == [
        "amount: Input should be a valid integer, unable to parse string as an integer",
        "currency: Field required",
    ]
    assert str(info.value) == 'Invalid input for tool "pay": ' + "; ".join(info.value.issues)


async def test_non_object_arguments_are_an_input_issue() -> None:
    reg = ToolRegistry()
    reg.register(make())
    with pytest.raises(ToolInputInvalidError) as info:
        await reg.authorize("pay", [1, 2], ctx=ctx(), policy=OPEN)  # type: ignore[arg-type]
    assert info.value.issues == ["input: expected an object, got list"]


async def test_authorized_call_carries_validated_input_and_a_canonical_hash() -> None:
    reg = ToolRegistry()
    reg.register(make())
    call = await reg.authorize("pay", {"currency": "EUR", "amount": "5", "extra": 1}, ctx=ctx(), policy=OPEN)
    assert isinstance(call, AuthorizedCall)
    assert call.input == Amount(amount=5, currency="EUR")
    assert call.args == {"amount": 5, "currency": "EUR"}
    expected = hashlib.sha256(b'{"amount":5,"currency":"EUR"}').hexdigest()
    assert call.args_hash == expected == args_hash({"currency": "EUR", "amount": 5})
    assert await reg.execute(call, ctx()) == "5 EUR"


async def test_invoke_is_authorize_plus_execute_and_tool_errors_propagate_unchanged() -> None:
    boom = ValueError("card declined")

    async def execute(value: Amount, c: ToolContext) -> None:
        raise boom

    reg = ToolRegistry()
    reg.register(define_tool(name="pay", description="Pay.", input=Amount, execute=execute))
    reg.register(make("ok"))
    assert await reg.invoke("ok", GOOD, ctx(), policy=OPEN) == "5 EUR"
    with pytest.raises(ValueError) as info:
        await reg.invoke("pay", GOOD, ctx(), policy=OPEN)
    assert info.value is boom
    with pytest.raises(ToolForbiddenError):
        await reg.invoke("ok", GOOD, ctx(), policy=DefaultRolesPolicy(empty_roles="deny"))


async def test_async_policy_and_can_use_are_awaited_on_authorize() -> None:
    class AsyncPolicy:
        async def can(self, actor: Actor, spec: ToolSpec) -> bool:
            return actor.id == "alice"

    reg = ToolRegistry()
    reg.register(make())
    await reg.authorize("pay", GOOD, ctx=ctx(), policy=AsyncPolicy())
    with pytest.raises(ToolForbiddenError):
        await reg.authorize("pay", GOOD, ctx=ctx(BOB), policy=AsyncPolicy())


@pytest.mark.ref("TOOL-13")
async def test_tool_sees_the_idempotency_key_of_the_call() -> None:
    @tool(kind="action")
    async def charge(amount: int, ctx: ToolContext) -> str | None:
        """Charge."""
        return ctx.idempotency_key

    reg = ToolRegistry()
    reg.register(charge)
    assert await reg.invoke("charge", {"amount": 1}, ctx(run_id="r1", tool_call_id="c1"), policy=OPEN) == "r1:c1"


# -- class tools -------------------------------------------------------------------------------------


class Clock:
    """A dependency the factory injects."""

    def __init__(self) -> None:
        self.now = "12:00"


class Now(ReadTool):
    """What time is it."""

    name = "now"

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    async def execute(self, input: Any, ctx: ToolContext) -> str:
        return self.clock.now


class Gated(ActionTool):
    """Only when the clock says so."""

    name = "gated"
    roles = ("ops",)

    def __init__(self, clock: Clock) -> None:
        self.clock = clock

    def is_enabled(self) -> bool:
        return self.clock.now != "closed"

    async def execute(self, input: Any, ctx: ToolContext) -> str:
        return "done"


@pytest.mark.ref("TOOL-18")
async def test_class_tool_is_built_through_the_factory_once_on_first_invoke() -> None:
    built: list[type] = []
    clock = Clock()

    def factory(cls: type) -> Any:
        built.append(cls)
        return cls(clock)

    reg = ToolRegistry(factory)
    assert reg.register(Now)
    assert built == []
    assert [d.name for d in await reg.offer(ALICE, policy=OPEN)] == ["now"]
    assert built == []  # plain class: offering needs no instance
    assert await reg.invoke("now", {}, ctx(), policy=OPEN) == "12:00"
    assert await reg.invoke("now", {}, ctx(), policy=OPEN) == "12:00"
    assert built == [Now]


@pytest.mark.ref("TOOL-18")
async def test_class_with_hooks_is_built_on_first_offer_and_the_hook_is_live() -> None:
    built: list[type] = []
    clock = Clock()

    def factory(cls: type) -> Any:
        built.append(cls)
        return cls(clock)

    reg = ToolRegistry(factory)
    reg.register(Gated)
    assert built == []
    assert [d.name for d in await reg.offer(ALICE, policy=OPEN)] == ["gated"]
    assert built == [Gated]
    clock.now = "closed"
    assert await reg.offer(ALICE, policy=OPEN) == []
    with pytest.raises(ToolDisabledError):
        await reg.invoke("gated", {}, ctx(), policy=OPEN)
    assert built == [Gated]


async def test_class_instance_registers_with_its_hooks() -> None:
    clock = Clock()
    reg = ToolRegistry()
    reg.register(Gated(clock))
    clock.now = "closed"
    assert await reg.offer(ALICE, policy=OPEN) == []


async def test_factory_failure_is_a_configuration_error_naming_the_class() -> None:
    reg = ToolRegistry()  # default factory cls() cannot build Now (it needs a clock)
    reg.register(Now)
    with pytest.raises(ConfigurationError) as failed:
        await reg.invoke("now", {}, ctx(), policy=OPEN)
    assert failed.value.code == "tool_factory_failed" and "test_registry.Now" in str(failed.value)


# -- start-up warnings --------------------------------------------------------------------------------


def test_warn_unguarded_actions_logs_one_line_per_action_without_roles(caplog: pytest.LogCaptureFixture) -> None:
    reg = ToolRegistry()
    reg.register(make("open_action", kind="action"))
    reg.register(make("empty_roles", kind="action", roles=()))
    reg.register(make("guarded", kind="action", roles=["ops"]))
    reg.register(make("reader"))
    with caplog.at_level(logging.WARNING, logger="agora_agent.tools.registry"):
        assert reg.warn_unguarded_actions() == ["open_action", "empty_roles"]
    lines = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert len(lines) == 2
    assert '"open_action"' in lines[0] and '"empty_roles"' in lines[1]


# -- the chain as data ------------------------------------------------------------------------------------


def test_the_chain_is_one_ordered_list_of_stages() -> None:
    assert [stage.name for stage in CHAIN] == ["allow-list", "enabled", "roles policy", "can_use", "describe"]


STAGE_ERRORS = [ToolNotFoundError, ToolDisabledError, ToolForbiddenError, ToolForbiddenError, ToolNotFoundError]


@pytest.mark.parametrize("refusing", range(len(CHAIN)))
async def test_offer_and_authorize_stop_at_the_same_stage(refusing: int) -> None:
    """Only stage `refusing` says no: offer hides the tool and authorize raises that stage's error, both
    having asked exactly the stages before it."""
    answers = [index != refusing for index in range(len(CHAIN))]
    allowed, enabled, policy, can_use, available = answers

    def build() -> tuple[Trace, ToolRegistry]:
        trace = Trace()
        reg = ToolRegistry()
        reg.register(make(trace=trace, enabled=enabled, can_use=can_use, available=available))
        return trace, reg

    allow_list = ["pay"] if allowed else ["other"]
    offer_trace, reg = build()
    assert await reg.offer(ALICE, policy=offer_trace.policy(policy), allow_list=allow_list) == []
    invoke_trace, reg = build()
    with pytest.raises((ToolNotFoundError, ToolDisabledError, ToolForbiddenError)) as info:
        await reg.authorize("pay", GOOD, ctx=ctx(), policy=invoke_trace.policy(policy), allow_list=allow_list)
    assert type(info.value) is STAGE_ERRORS[refusing] and info.value.stage == CHAIN[refusing].name
    assert offer_trace.calls == invoke_trace.calls
