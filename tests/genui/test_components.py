"""Components, the registry, builtins and UI sessions (loading states, validation, persistence rules)."""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel

from agora_agent.errors import ConfigurationError
from agora_agent.genui import (
    Chart,
    ComponentPropsError,
    ComponentRegistry,
    DataTable,
    Presentation,
    UiSession,
    chart,
    create_component,
    table,
)


class WeatherProps(BaseModel):
    city: str
    celsius: float


Weather = create_component("Weather", props=WeatherProps, description="A forecast card.")


class Recorder:
    def __init__(self) -> None:
        self.frames: list[tuple[str, dict[str, Any], str | None]] = []

    async def __call__(self, name: str, data: dict[str, Any], ui_id: str | None) -> None:
        self.frames.append((name, data, ui_id))


def test_builtins_validate_and_normalise() -> None:
    p = table([{"id": 1, "total": 9.5}], columns=[("id", "Order"), "total"], title="Orders")
    assert p == Presentation(
        "DataTable",
        {
            "title": "Orders",
            "columns": [{"key": "id", "label": "Order"}, {"key": "total", "label": "total"}],
            "rows": [{"id": 1, "total": 9.5}],
        },
    )
    c = chart(labels=["a", "b"], series={"revenue": [1, 2.5]}, type="line")
    assert c.props == {"type": "line", "labels": ["a", "b"], "series": [{"name": "revenue", "values": [1.0, 2.5]}]}
    assert {DataTable.name, Chart.name} == {"DataTable", "Chart"}


def test_invalid_props_list_every_issue() -> None:
    with pytest.raises(ComponentPropsError) as err:
        chart(labels=["a", "b"], series={"x": [1.0]})
    assert err.value.component == "Chart"
    assert "1 values for 2 labels" in err.value.issues[0]
    with pytest.raises(ComponentPropsError) as err2:
        Weather(city=3)  # type: ignore[arg-type]
    assert len(err2.value.issues) == 2  # city wrong type AND celsius missing


def test_registry_includes_builtins_and_refuses_duplicates() -> None:
    registry = ComponentRegistry([Weather])
    assert "DataTable" in registry and "Weather" in registry
    with pytest.raises(ConfigurationError):
        registry.register(Weather)
    with pytest.raises(ComponentPropsError):
        registry.validate("Nope", {})
    assert "Weather" not in ComponentRegistry(builtins=True) and "DataTable" not in ComponentRegistry(builtins=False)


def test_create_component_rejects_bad_definitions() -> None:
    with pytest.raises(ConfigurationError):
        create_component("has space", props=WeatherProps)
    with pytest.raises(ConfigurationError):
        create_component("X", props=dict)  # type: ignore[arg-type]


async def test_session_validates_before_writing() -> None:
    out = Recorder()
    session = UiSession(write=out, registry=ComponentRegistry([Weather]))
    with pytest.raises(ComponentPropsError):
        await session.push("Weather", {"city": "Oslo"})
    with pytest.raises(ComponentPropsError):
        await session.push("Unregistered", {})
    assert out.frames == []


async def test_loading_state_replaced_by_data_under_one_id() -> None:
    out = Recorder()
    session = UiSession(write=out, registry=ComponentRegistry())
    ui_id = await session.push("DataTable", {"state": "loading"})
    assert await session.push("DataTable", {"rows": [{"a": 1}]}, id=ui_id) == ui_id
    assert [f[2] for f in out.frames] == [ui_id, ui_id]
    kept = await session.finish()
    assert kept == [{"id": ui_id, "name": "DataTable", "data": {"rows": [{"a": 1}]}}]


async def test_failed_tool_closes_loading_states_and_keeps_nothing() -> None:
    out = Recorder()
    session = UiSession(write=out, registry=ComponentRegistry())
    ui_id = await session.push("Chart", {"state": "loading"})
    await session.abort("the warehouse API timed out")
    assert out.frames[-1] == ("Chart", {"state": "error", "message": "the warehouse API timed out"}, ui_id)
    assert await session.finish() == []


async def test_open_loading_state_ends_empty_on_success() -> None:
    out = Recorder()
    session = UiSession(write=out, registry=ComponentRegistry())
    ui_id = await session.push("Chart", {"state": "loading"})
    kept = await session.finish()
    assert kept == [{"id": ui_id, "name": "Chart", "data": {"state": "empty"}}]
    assert out.frames[-1] == ("Chart", {"state": "empty"}, ui_id)


async def test_capabilities_and_text_channels_drop_pushes() -> None:
    out = Recorder()
    session = UiSession(write=out, registry=ComponentRegistry([Weather]), capabilities=frozenset({"DataTable"}))
    await session.push("Weather", {"city": "Oslo", "celsius": 4})
    await session.push("DataTable", {"rows": []})
    assert [f[0] for f in out.frames] == ["DataTable"]
    sms = UiSession(write=out, registry=ComponentRegistry(), channel="sms")
    await sms.push("DataTable", {"rows": []})
    assert len(out.frames) == 1


async def test_emit_component_is_the_unvalidated_mirror_but_kept_and_dropped_like_the_rest() -> None:
    out = Recorder()
    session = UiSession(write=out, registry=ComponentRegistry())
    await session.push_unchecked("LegacyWidget", {"anything": True})
    await session.push_unchecked("Chart", {"points": [1, 2]})  # the reference's emitComponent takes any data
    assert [f[0] for f in out.frames] == ["LegacyWidget", "Chart"]
    assert [c["name"] for c in await session.finish()] == ["LegacyWidget", "Chart"]
    failed = UiSession(write=out, registry=ComponentRegistry())
    await failed.push_unchecked("LegacyWidget", {})
    await failed.abort("boom")
    assert await failed.finish() == []
