"""Generative UI inside real runs: present(), loading states, failures, capabilities, catalog tools, persistence."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio.from_thread
import pytest
from pydantic import BaseModel

from agora_agent import Actor, AgentConfig, AgentService, ReadTool, ToolContext, define_tool, tool
from agora_agent.genui import ComponentRegistry, Presentation, chart, create_component, genui, table
from agora_agent.genui.present import PresentationErrorInfo
from agora_agent.streaming.frames import ComponentFrame
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest, collect_frames, sequence_script
from agora_agent.testing.helpers import OBSERVER

ALICE = Actor("alice", roles=("support",), tenant_ref="acme")


def calls(*requests: ToolCallRequest, text: str = "Here.") -> Callable[..., ScriptedTurn]:
    return sequence_script(ScriptedTurn(text="Looking. ", tool_calls=requests), ScriptedTurn(text=text))


@pytest.fixture
async def make() -> AsyncIterator[Callable[..., Any]]:
    made: list[AgentService] = []

    async def factory(script: Any, **kwargs: Any) -> AgentService:
        service = AgentService.from_config(AgentConfig(model=FakeModel(script), **kwargs))
        await service.start()
        made.append(service)
        return service

    yield factory
    for s in made:
        await s.close()


async def run_once(service: AgentService, text: str = "go", **chat: Any) -> tuple[list[ComponentFrame], Any]:
    started = await service.chat(ALICE, text, **chat)
    frames = await collect_frames(service, started.run_id)
    await service.wait_for_run(OBSERVER, started.run_id)
    detail = await service.get_thread(OBSERVER, started.thread_id)
    return [f for f in frames.frames if isinstance(f, ComponentFrame)], detail


ORDERS = [{"id": 1001, "total": 149.0}, {"id": 1002, "total": 89.5}]


def present_orders(output: dict[str, Any], ctx: ToolContext) -> list[Presentation]:
    rows = output["orders"]
    return [
        table(rows, columns=[("id", "Order"), ("total", "Total")], title="Orders"),
        chart(labels=[r["id"] for r in rows], series={"total": [r["total"] for r in rows]}),
    ]


@tool(present=present_orders)
async def list_orders(ctx: ToolContext) -> dict[str, Any]:
    """List the caller's orders."""
    return {"orders": ORDERS}


async def test_present_pushes_components_while_the_model_gets_the_domain_result(make: Any) -> None:
    seen: list[str] = []

    def script(request: Any, turn: int) -> ScriptedTurn:
        if turn == 0:
            return ScriptedTurn(text="Looking. ", tool_calls=[ToolCallRequest("list_orders", {})])
        seen.append(request.messages[-1].tool_results[0].content)
        return ScriptedTurn(text="Two orders.")

    service = await make(script, tools=[list_orders])
    components, detail = await run_once(service)
    assert [c.name for c in components] == ["DataTable", "Chart"]
    assert components[0].data["columns"] == [{"key": "id", "label": "Order"}, {"key": "total", "label": "Total"}]
    assert all(c.id for c in components)
    assert "1001" in seen[0] and "DataTable" not in seen[0]  # the model reads the orders, not the UI
    stored = detail.tool_calls[0].components
    assert [(c["id"], c["name"]) for c in stored] == [(c.id, c.name) for c in components]  # a reload draws them


class ShowWeather(ReadTool):
    """Show the weather (class tool with a present method)."""

    name = "show_weather"

    async def execute(self, input: Any, ctx: ToolContext) -> dict[str, Any]:
        return {"city": "Oslo", "celsius": 4}

    def present(self, output: dict[str, Any], ctx: ToolContext) -> Presentation:
        return Weather(city=output["city"], celsius=output["celsius"])


class WeatherProps(BaseModel):
    city: str
    celsius: float


Weather = create_component("Weather", props=WeatherProps)


async def test_class_tool_present_with_an_app_component(make: Any) -> None:
    service = await make(
        calls(ToolCallRequest("show_weather", {})), tools=[ShowWeather], components=ComponentRegistry([Weather])
    )
    components, _ = await run_once(service)
    assert [(c.name, c.data) for c in components] == [("Weather", {"city": "Oslo", "celsius": 4.0})]


async def test_a_presentation_error_never_fails_or_retries_the_call(make: Any) -> None:
    executed: list[int] = []
    reported: list[tuple[str, PresentationErrorInfo]] = []

    def broken(output: Any, ctx: ToolContext) -> Presentation:
        raise RuntimeError("renderer bug")

    @tool(kind="read", present=broken)
    async def write_once(ctx: ToolContext) -> str:
        """Write something once."""
        executed.append(1)
        return "written"

    service = await make(
        calls(ToolCallRequest("write_once", {})),
        tools=[write_once],
        on_presentation_error=lambda error, info: reported.append((str(error), info)),
    )
    components, detail = await run_once(service)
    assert executed == [1] and components == []
    assert detail.tool_calls[0].status == "executed" and detail.tool_calls[0].output == "written"
    assert reported[0][0] == "renderer bug" and reported[0][1].tool_name == "write_once"


async def test_invalid_presentation_props_go_to_the_error_handler(make: Any) -> None:
    reported: list[str] = []

    def bad(output: Any, ctx: ToolContext) -> Presentation:
        return Presentation("Chart", {"labels": ["a"], "series": [{"name": "x", "values": [1, 2]}]})

    class NoInput(BaseModel):
        pass

    tool_ = define_tool(name="t", description="A tool.", input=NoInput, execute=lambda v, c: "ok", present=bad)
    service = await make(
        calls(ToolCallRequest("t", {})), tools=[tool_], on_presentation_error=lambda e, i: reported.append(str(e))
    )
    components, _ = await run_once(service)
    assert components == [] and "2 values for 1 labels" in reported[0]


async def test_loading_state_resolves_under_the_same_id(make: Any) -> None:
    @tool
    async def slow_report(ctx: ToolContext) -> str:
        """A slow report."""
        ui_id = await ctx.emit_ui("DataTable", {"state": "loading"})
        await asyncio.sleep(0)
        await ctx.emit_ui("DataTable", {"rows": [{"a": 1}]}, id=ui_id)
        return "ok"

    service = await make(calls(ToolCallRequest("slow_report", {})), tools=[slow_report])
    components, detail = await run_once(service)
    assert [c.data for c in components] == [{"state": "loading"}, {"rows": [{"a": 1}]}]
    assert components[0].id == components[1].id
    assert detail.tool_calls[0].components == [
        {"id": components[0].id, "name": "DataTable", "data": {"rows": [{"a": 1}]}}
    ]


async def test_a_tool_that_raises_leaves_no_half_drawn_component(make: Any) -> None:
    @tool
    async def flaky(ctx: ToolContext) -> str:
        """Fails after showing a skeleton."""
        await ctx.emit_ui("Chart", {"state": "loading"})
        raise ValueError("warehouse offline")

    service = await make(calls(ToolCallRequest("flaky", {})), tools=[flaky], tool_transient_retry=False)
    components, detail = await run_once(service)
    assert [c.data["state"] for c in components] == ["loading", "error"]
    assert components[0].id == components[1].id and "warehouse offline" in components[1].data["message"]
    assert detail.tool_calls[0].status == "failed" and detail.tool_calls[0].components is None


async def test_ui_capabilities_reach_ctx_and_filter_pushes(make: Any) -> None:
    seen: list[Any] = []

    @tool(present=present_orders)
    async def orders_with_caps(ctx: ToolContext) -> dict[str, Any]:
        """Orders."""
        seen.append(ctx.ui_capabilities)
        return {"orders": ORDERS}

    service = await make(calls(ToolCallRequest("orders_with_caps", {})), tools=[orders_with_caps])
    components, _ = await run_once(service, ui_capabilities=["DataTable"])
    assert seen == [frozenset({"DataTable"})]
    assert [c.name for c in components] == ["DataTable"]  # this client cannot draw a Chart


async def test_emit_ui_validates_before_a_frame_is_written(make: Any) -> None:
    @tool
    async def bad_push(ctx: ToolContext) -> str:
        """Pushes invalid props."""
        await ctx.emit_ui("Chart", {"type": "pie3d"})
        return "unreachable"

    service = await make(calls(ToolCallRequest("bad_push", {})), tools=[bad_push], tool_transient_retry=False)
    components, detail = await run_once(service)
    assert components == []
    assert detail.tool_calls[0].status == "failed" and "invalid props" in (detail.tool_calls[0].error or "")


async def test_sync_tool_emits_through_the_worker_thread(make: Any) -> None:
    @tool
    def sync_chart(ctx: ToolContext) -> str:
        """A sync tool drawing a chart."""
        anyio.from_thread.run(ctx.emit_ui, "Chart", {"labels": ["a"], "series": [{"name": "n", "values": [1]}]})
        return "ok"

    service = await make(calls(ToolCallRequest("sync_chart", {})), tools=[sync_chart])
    components, _ = await run_once(service)
    assert [c.name for c in components] == ["Chart"]


@pytest.mark.parametrize("mode", ["tree", "per-component"])
async def test_catalog_tools_let_the_model_draw(make: Any, mode: str) -> None:
    tools = genui(mode=mode)
    name = "ui__render" if mode == "tree" else "ui__show_datatable"
    args: dict[str, Any] = (
        {
            "nodes": [
                {
                    "component": "DataTable",
                    "props": {"rows": [{"x": 1}]},
                    "children": [
                        {"component": "Chart", "props": {"labels": ["x"], "series": [{"name": "n", "values": [1]}]}}
                    ],
                }
            ]
        }
        if mode == "tree"
        else {"rows": [{"x": 1}]}
    )
    service = await make(calls(ToolCallRequest(name, args)), tools=tools)
    components, detail = await run_once(service)
    expected = ["DataTable", "Chart"] if mode == "tree" else ["DataTable"]
    assert [c.name for c in components] == expected
    assert detail.tool_calls[0].status == "executed"


async def test_catalog_tool_errors_come_back_to_the_model(make: Any) -> None:
    results: list[str] = []

    def script(request: Any, turn: int) -> ScriptedTurn:
        if turn == 0:
            bad = {
                "nodes": [
                    {"component": "Chart", "props": {"labels": ["a", "b"], "series": [{"name": "n", "values": [1]}]}}
                ]
            }
            return ScriptedTurn(tool_calls=[ToolCallRequest("ui__render", bad)])
        results.append(request.messages[-1].tool_results[0].content)
        return ScriptedTurn(text="fixed")

    service = await make(script, tools=genui())
    components, _ = await run_once(service)
    assert components == [] and "1 values for 2 labels" in results[0]


def test_catalog_describes_each_component_and_hides_internal_ones() -> None:
    internal = create_component("Spinner", props=WeatherProps, internal=True)
    [render] = genui(catalog=ComponentRegistry([internal]))
    assert "DataTable" in render.spec.description and "Spinner" not in render.spec.description
    schema = render.spec.json_schema()
    assert "Spinner" not in str(schema) and "DataTable" in str(schema)
    flat = genui(component_tools=["Chart"])
    assert [t.spec.name for t in flat] == ["ui__render", "ui__chart"]


class PointsProps(BaseModel):
    points: int


LOYALTY = create_component("LoyaltyCard", props=PointsProps, description="acme's loyalty points")


def present_points(output: dict[str, Any], ctx: ToolContext) -> Presentation:
    return LOYALTY(points=output["points"])


@tool(present=present_points)
async def my_points(ctx: ToolContext) -> dict[str, Any]:
    """The caller's loyalty points."""
    return {"points": 120}


async def test_a_per_tenant_registry_lets_only_that_tenant_draw_its_component(make: Any) -> None:
    acme = ComponentRegistry([LOYALTY])
    asked: list[str] = []
    errors: list[PresentationErrorInfo] = []

    def components(actor: Actor) -> ComponentRegistry | None:
        asked.append(actor.id)
        return acme if actor.tenant_ref == "acme" else None  # everyone else: the builtins only

    service = await make(
        calls(ToolCallRequest("my_points", {})),
        tools=[my_points],
        components=components,
        on_presentation_error=lambda error, info: errors.append(info),
    )
    drawn, detail = await run_once(service)
    assert [c.name for c in drawn] == ["LoyaltyCard"] and drawn[0].data == {"points": 120}
    assert [c["name"] for c in detail.tool_calls[0].components] == ["LoyaltyCard"]  # kept with the thread

    bob = Actor("bob", roles=("support",), tenant_ref="globex")
    started = await service.chat(bob, "go")
    frames = await collect_frames(service, started.run_id)
    run = await service.wait_for_run(bob, started.run_id)
    assert run.status == "completed"  # a presentation the tenant cannot draw never fails the call
    assert not [f for f in frames.frames if isinstance(f, ComponentFrame)]
    assert [e.tool_name for e in errors] == ["my_points"]
    assert asked == ["alice", "bob"]


async def test_a_registry_function_returning_something_else_is_a_presentation_error(make: Any) -> None:
    errors: list[Exception] = []
    service = await make(
        calls(ToolCallRequest("my_points", {})),
        tools=[my_points],
        components=lambda actor: "acme",
        on_presentation_error=lambda error, info: errors.append(error),
    )
    drawn, _ = await run_once(service)
    assert drawn == []
    from agora_agent.errors import ConfigurationError

    assert len(errors) == 1 and isinstance(errors[0], ConfigurationError)
