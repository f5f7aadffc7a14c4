"""Authoring forms: @tool, define_tool, BaseTool/ReadTool/ActionTool (REFERENCE TOOL-03..13)."""

from __future__ import annotations

import threading
from datetime import timedelta
from typing import Annotated, Any

import pytest
from pydantic import BaseModel, Field, ValidationError

from agora_agent.actors import Actor
from agora_agent.errors import ConfigurationError
from agora_agent.tools.authoring import ActionTool, BaseTool, FunctionTool, ReadTool, define_tool, tool
from agora_agent.tools.context import ToolContext
from agora_agent.tools.spec import DescribeContext, Tool, ToolAvailability

ALICE = Actor("alice", ("ops",))


def ctx(**kw: Any) -> ToolContext:
    return ToolContext(actor=ALICE, **kw)


class OrderQuery(BaseModel):
    order_id: int
    verbose: bool = False


@tool
async def lookup_order(
    order_id: int, note: Annotated[str, Field(description="why you ask")] = "none"
) -> dict[str, Any]:
    """Look up one order.

    Returns its status.
    """
    return {"order_id": order_id, "note": note}


@pytest.mark.ref("TOOL-03", "TOOL-04")
async def test_bare_decorator_builds_spec_from_signature_and_docstring() -> None:
    assert isinstance(lookup_order, FunctionTool)
    assert isinstance(lookup_order, Tool)
    spec = lookup_order.spec
    assert spec.name == "lookup_order"
    assert spec.description == "Look up one order.\n\nReturns its status."
    assert spec.kind == "read"
    assert spec.roles is None
    schema = spec.json_schema()
    assert schema["required"] == ["order_id"]
    assert schema["properties"]["note"]["description"] == "why you ask"
    assert schema["properties"]["note"]["default"] == "none"
    value = spec.input_model.model_validate({"order_id": "7"})
    assert await lookup_order.invoke(value, ctx()) == {"order_id": 7, "note": "none"}


@pytest.mark.ref("TOOL-04")
async def test_function_tool_call_forwards_to_the_function() -> None:
    assert await lookup_order(3, note="x") == {"order_id": 3, "note": "x"}


@pytest.mark.ref("TOOL-05")
def test_decorator_options_are_normalised() -> None:
    @tool(
        name="refund",
        description="Refund an order.",
        kind="action",
        roles=["ops", "billing"],
        ability="orders.refund",
        approver_roles="supervisor",
        approval_ttl=90,
    )
    async def whatever(order_id: int) -> None:
        return None

    spec = whatever.spec
    assert spec.name == "refund"
    assert spec.description == "Refund an order."
    assert spec.kind == "action"
    assert spec.roles == ("ops", "billing")
    assert spec.ability == "orders.refund"
    assert spec.approver_roles == ("supervisor",)
    assert spec.approval_ttl == timedelta(seconds=90)


@pytest.mark.ref("TOOL-11", "TOOL-12")
async def test_ctx_is_injected_under_any_name_and_kept_out_of_the_input() -> None:
    seen: list[ToolContext] = []

    @tool
    async def who_am_i(greeting: str, call: ToolContext) -> str:
        """Greet the caller."""
        seen.append(call)
        return f"{greeting} {call.actor.id}"

    assert set(who_am_i.spec.json_schema()["properties"]) == {"greeting"}
    c = ctx(run_id="r1", tool_call_id="t1")
    assert await who_am_i.invoke(who_am_i.spec.input_model(greeting="hi"), c) == "hi alice"
    assert seen == [c]


@pytest.mark.ref("TOOL-11")
async def test_optional_ctx_annotation_is_injected() -> None:
    @tool
    async def peek(ctx: ToolContext | None = None) -> str | None:
        """Peek."""
        return ctx.run_id if ctx else None

    assert peek.spec.json_schema()["properties"] == {}
    assert await peek.invoke(peek.spec.input_model(), ctx(run_id="r9")) == "r9"


@pytest.mark.ref("TOOL-03")
async def test_single_model_parameter_is_the_input_model() -> None:
    @tool
    async def by_model(query: OrderQuery, ctx: ToolContext) -> OrderQuery:
        """Echo the query."""
        return query

    assert by_model.spec.input_model is OrderQuery
    q = OrderQuery(order_id=1)
    assert await by_model.invoke(q, ctx()) is q


@pytest.mark.ref("TOOL-04")
async def test_sync_tool_runs_in_a_worker_thread() -> None:
    loop_thread = threading.get_ident()

    @tool
    def blocking(n: int) -> int:
        """Blocking work."""
        return threading.get_ident()

    worker = await blocking.invoke(blocking.spec.input_model(n=1), ctx())
    assert worker != loop_thread


@pytest.mark.ref("TOOL-03")
async def test_nested_models_reach_the_function_as_models() -> None:
    @tool
    async def bulk(orders: list[OrderQuery], ctx: ToolContext) -> list[int]:
        """Many orders."""
        assert all(isinstance(o, OrderQuery) for o in orders)
        return [o.order_id for o in orders]

    value = bulk.spec.input_model.model_validate({"orders": [{"order_id": 1}, {"order_id": 2}]})
    assert await bulk.invoke(value, ctx()) == [1, 2]


def test_missing_description_names_the_function() -> None:
    def undocumented(x: int) -> int:
        return x

    with pytest.raises(ConfigurationError) as info:
        tool(undocumented)
    assert info.value.option == "description"
    assert "undocumented" in str(info.value) and "docstring" in str(info.value)  # names the function and the fix


@pytest.mark.parametrize(
    ("options", "option"),
    [
        ({"kind": "agent"}, "kind"),
        ({"kind": "write"}, "kind"),
        ({"name": "has space"}, "name"),
        ({"approval_ttl": 0}, "approval_ttl"),
        ({"roles": ["ok", ""]}, "roles"),
    ],
)
def test_invalid_options_raise_configuration_error(options: dict[str, Any], option: str) -> None:
    def f(x: int) -> int:
        """Doc."""
        return x

    with pytest.raises(ConfigurationError) as bad:
        tool(**options)(f)
    assert bad.value.option == option


def test_var_args_are_refused() -> None:
    def f(*items: int) -> int:
        """Doc."""
        return 0

    with pytest.raises(ConfigurationError) as refused:
        tool(f)
    assert refused.value.code == "unnamed_parameter" and "'items'" in str(refused.value)


@pytest.mark.ref("TOOL-08", "TOOL-10")
@pytest.mark.parametrize("is_async", [True, False])
async def test_define_tool_runs_sync_and_async_execute(is_async: bool) -> None:
    threads: list[int] = []

    def sync_exec(value: OrderQuery, c: ToolContext) -> int:
        threads.append(threading.get_ident())
        return value.order_id * 2

    async def async_exec(value: OrderQuery, c: ToolContext) -> int:
        threads.append(threading.get_ident())
        return value.order_id * 2

    t = define_tool(
        name="double",
        description="Double an id.",
        input=OrderQuery,
        execute=async_exec if is_async else sync_exec,
        kind="action",
        roles=["ops"],
    )
    assert t.spec.kind == "action" and t.spec.roles == ("ops",) and t.spec.input_model is OrderQuery
    assert await t.invoke(OrderQuery(order_id=4), ctx()) == 8
    assert (threads[0] == threading.get_ident()) is is_async


class Search(ReadTool):
    """Search the catalogue."""

    name = "search"
    Input = OrderQuery
    roles = ["ops"]

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix

    async def execute(self, input: OrderQuery, ctx: ToolContext) -> str:
        return f"{self.prefix}{input.order_id}"


class Ship(ActionTool):
    name = "ship"
    description = "Ship an order."
    approval_ttl = timedelta(minutes=5)

    def can_use(self, actor: Actor) -> bool:
        return actor.id == "alice"

    def describe(self, ctx: DescribeContext) -> ToolAvailability:
        return ToolAvailability(description=f"Ship for {ctx.actor.id}")

    def execute(self, input: BaseModel, ctx: ToolContext) -> str:  # type: ignore[override]  # sync on purpose
        return threading.current_thread().name


@pytest.mark.ref("TOOL-06", "TOOL-07", "TOOL-09")
def test_class_spec_is_built_without_an_instance() -> None:
    spec = Search.tool_spec()  # Search() would need an argument
    assert spec.name == "search"
    assert spec.kind == "read"
    assert spec.description == "Search the catalogue."
    assert spec.roles == ("ops",)
    assert spec.input_model is OrderQuery
    ship = Ship.tool_spec()
    assert ship.kind == "action"
    assert ship.approval_ttl == timedelta(minutes=5)
    assert ship.json_schema()["properties"] == {}  # no Input = no arguments
    assert ship.can_use is None  # hooks are bound only on an instance


@pytest.mark.ref("TOOL-06")
async def test_class_instance_is_a_tool_with_bound_hooks() -> None:
    ship = Ship()
    assert isinstance(ship, Tool)
    assert ship.spec.can_use is not None and ship.spec.can_use(ALICE) is True
    assert ship.spec.can_use(Actor("bob")) is False
    assert ship.spec.describe is not None
    assert ship.spec.describe(DescribeContext(actor=ALICE)) == ToolAvailability(description="Ship for alice")
    assert ship.spec.is_enabled() is True
    # A sync execute still never blocks the loop.
    assert await ship.invoke(ship.spec.input_model(), ctx()) != threading.current_thread().name
    assert await Search("#").invoke(OrderQuery(order_id=5), ctx()) == "#5"


@pytest.mark.ref("TOOL-09")
def test_class_errors_name_the_class() -> None:
    class NoKind(BaseTool):
        """Doc."""

        name = "nokind"

        async def execute(self, input: Any, ctx: ToolContext) -> None:
            return None

    class Abstract(ReadTool):
        name = "abstract"

    class NoDoc(ReadTool):
        name = "nodoc"

        async def execute(self, input: Any, ctx: ToolContext) -> None:
            return None

    with pytest.raises(ConfigurationError) as no_kind:
        NoKind.tool_spec()
    assert no_kind.value.option == "kind" and "NoKind" in str(no_kind.value)
    with pytest.raises(ConfigurationError) as abstract:
        Abstract.tool_spec()
    assert abstract.value.code == "abstract_tool" and "Abstract" in str(abstract.value)
    with pytest.raises(ConfigurationError) as no_doc:
        NoDoc.tool_spec()
    assert no_doc.value.option == "description" and "NoDoc" in str(no_doc.value)


@pytest.mark.ref("TOOL-13")
def test_idempotency_key_is_run_and_call_id() -> None:
    assert ctx(run_id="run_1", tool_call_id="call_2").idempotency_key == "run_1:call_2"
    assert ctx(run_id="run_1").idempotency_key is None
    assert ctx().idempotency_key is None


def test_input_model_rejects_wrong_types() -> None:
    with pytest.raises(ValidationError):
        lookup_order.spec.input_model.model_validate({"order_id": "seven"})
