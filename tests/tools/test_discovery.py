"""Tool discovery from a package (REFERENCE TOOL-14, TOOL-15, TOOL-17)."""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from agora_agent.actors import Actor
from agora_agent.errors import ConfigurationError
from agora_agent.governance.policy import DefaultRolesPolicy
from agora_agent.tools.authoring import FunctionTool
from agora_agent.tools.context import ToolContext
from agora_agent.tools.discovery import discover_tools
from agora_agent.tools.registry import ToolRegistry


@pytest.fixture(autouse=True)
def fixture_package(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.syspath_prepend(str(Path(__file__).parent))
    yield
    for name in [m for m in sys.modules if m == "fixture_tools" or m.startswith("fixture_tools.")]:
        del sys.modules[name]


def names(objs: list[object]) -> list[str]:
    out = []
    for obj in objs:
        spec = obj.tool_spec() if isinstance(obj, type) else obj.spec  # type: ignore[attr-defined]
        out.append(f"{spec.name}@{getattr(obj, '__module__', type(obj).__module__).rsplit('.', 1)[-1]}")
    return out


@pytest.mark.ref("TOOL-17")
def test_discovers_every_module_sorted_skipping_the_broken_ones(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="agora_agent.tools.discovery"):
        found = discover_tools("fixture_tools")
    assert names(found) == [
        "lookup_order@a_orders",
        "ship_order@a_orders",
        "lookup_order@c_dupes",
        "ping@d_nested",
        "echo@d_nested",
    ]
    errors = [r.getMessage() for r in caplog.records if r.levelno == logging.ERROR]
    assert len(errors) == 2
    assert "fixture_tools.b_broken" in errors[0] and "b_broken exploded at import time" in errors[0]
    assert "fixture_tools.broken_pkg" in errors[1] and "agora_agent_module_that_does_not_exist" in errors[1]


@pytest.mark.ref("TOOL-17")
def test_each_object_is_collected_once_and_abstract_bases_never() -> None:
    found = discover_tools("fixture_tools")
    assert len({id(o) for o in found}) == len(found)
    from fixture_tools.a_orders import AuditedTool, ShipOrder, lookup_order

    assert found.count(lookup_order) == 1 and found.count(ShipOrder) == 1
    assert AuditedTool not in found


@pytest.mark.ref("TOOL-14", "TOOL-15")
async def test_registering_discovered_tools_keeps_the_first_duplicate(caplog: pytest.LogCaptureFixture) -> None:
    registry = ToolRegistry()
    with caplog.at_level(logging.WARNING, logger="agora_agent.tools.registry"):
        added = [registry.register(obj) for obj in discover_tools("fixture_tools")]
    assert added == [True, True, False, True, True]
    assert [s.name for s in registry.specs()] == ["lookup_order", "ship_order", "ping", "echo"]
    warning = next(r.getMessage() for r in caplog.records if r.levelno == logging.WARNING)
    assert "a_orders.lookup_order" in warning and "c_dupes.lookup_order_v2" in warning
    ctx = ToolContext(actor=Actor("u", ("ops",)))
    policy = DefaultRolesPolicy()
    assert await registry.invoke("lookup_order", {"order_id": 1}, ctx, policy=policy) == {
        "order_id": 1,
        "source": "a_orders",
    }
    assert await registry.invoke("ship_order", {"order_id": 2}, ctx, policy=policy) == "shipped 2"
    assert await registry.invoke("ping", {}, ctx, policy=policy) == "pong"


def test_a_single_module_can_be_the_tools_package() -> None:
    found = discover_tools("fixture_tools.sub.d_nested")
    assert [o.spec.name for o in found if isinstance(o, FunctionTool)] == ["ping"]
    assert len(found) == 2


def test_missing_package_is_a_configuration_error_naming_it() -> None:
    for package in ("no_such_tools_pkg", "fixture_tools.nope"):
        with pytest.raises(ConfigurationError) as missing:
            discover_tools(package)
        assert missing.value.code == "package_not_found" and repr(package) in str(missing.value)


def test_a_failing_root_package_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError) as broken:
        discover_tools("fixture_tools.broken_pkg")
    assert broken.value.code == "import_failed" and "'fixture_tools.broken_pkg'" in str(broken.value)
