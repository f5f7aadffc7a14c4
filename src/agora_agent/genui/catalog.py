"""Catalog tools: let the model draw registered components itself.

    tools = [*my_tools, *genui(catalog=registry)]                      # one `ui__render` tool (tree mode)
    tools = [*my_tools, *genui(catalog=registry, mode="per-component")] # `ui__show_datatable`, `ui__show_chart`, …

In tree mode the model sends `nodes`: components with props and optional `children`, drawn depth-first
in order. `component_tools=["Chart"]` adds a flat `ui__chart` tool whose input is that component's props.
Every push is validated against the registry; invalid props come back to the model as a tool error
listing each issue, so it can correct itself. Catalog tools are read tools: they pass the filter chain
like any other tool (allow-lists, roles, `enabled`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from pydantic import BaseModel, Field, create_model

from agora_agent.errors import ConfigurationError, ToolExecutionError
from agora_agent.genui.components import Component, ComponentPropsError
from agora_agent.genui.registry import ComponentRegistry
from agora_agent.tools.authoring import FunctionTool, define_tool
from agora_agent.tools.context import ToolContext

__all__ = ["genui"]


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9_]", "_", name.lower())


def _schema_line(component: Component) -> str:
    schema = component.props.model_json_schema()
    fields = ", ".join(sorted(schema.get("properties", {})))
    about = f" — {component.description.strip().splitlines()[0]}" if component.description.strip() else ""
    return f"- {component.name}{about}. Props: {fields or '(none)'}."


async def _push(ctx: ToolContext, tool_name: str, component: str, props: dict[str, Any]) -> str:
    try:
        return await ctx.emit_ui(component, props)
    except ComponentPropsError as exc:
        raise ToolExecutionError(tool_name, str(exc)) from None


def _tree_tool(components: Sequence[Component], name: str) -> FunctionTool:
    names = tuple(c.name for c in components)

    class UiNode(BaseModel):
        component: Literal[names] = Field(description="Which component to draw.")  # type: ignore[valid-type]
        props: dict[str, Any] = Field(default_factory=dict, description="The component's props (see the list).")
        children: list[UiNode] = Field(default_factory=list, description="Components drawn after this one.")

    class RenderInput(BaseModel):
        nodes: list[UiNode] = Field(min_length=1, max_length=20, description="The components to draw, in order.")

    async def render(value: RenderInput, ctx: ToolContext) -> dict[str, Any]:
        drawn: list[str] = []

        async def walk(nodes: list[UiNode]) -> None:
            for node in nodes:
                await _push(ctx, name, node.component, node.props)
                drawn.append(node.component)
                await walk(node.children)

        await walk(value.nodes)
        return {"rendered": drawn}

    listing = "\n".join(_schema_line(c) for c in components)
    return define_tool(
        name=name,
        description=f"Show the user rich UI instead of (or beside) text. Components:\n{listing}",
        input=RenderInput,
        execute=render,
    )


def _component_tool(component: Component, name: str) -> FunctionTool:
    props_model: type[BaseModel] = create_model(  # same fields, a tool-facing name and docstring
        f"{component.name}Input", __base__=component.props, __doc__=component.description or None
    )

    async def show(value: BaseModel, ctx: ToolContext) -> dict[str, Any]:
        await _push(ctx, name, component.name, value.model_dump(mode="json", exclude_none=True))
        return {"shown": component.name}

    description = component.description.strip() or f"Show a {component.name} component to the user."
    schema = json.dumps(component.props.model_json_schema().get("properties", {}))[:2000]
    return define_tool(name=name, description=f"{description}\nProps schema: {schema}", input=props_model, execute=show)


def genui(
    *,
    catalog: ComponentRegistry | Iterable[Component] | None = None,
    mode: Literal["tree", "per-component"] = "tree",
    prefix: str = "ui__",
    component_tools: Sequence[str] = (),
) -> list[FunctionTool]:
    """The catalog tools for `catalog` (default: the builtins). Internal components are never offered.

    Raises `ConfigurationError` for an unknown name in `component_tools` or an empty catalog.
    """
    registry = catalog if isinstance(catalog, ComponentRegistry) else ComponentRegistry(list(catalog or ()))
    offered = [c for c in registry if not c.internal]
    if not offered:
        raise ConfigurationError("genui(catalog=…) has no component the model may draw (all internal or none)")
    by_name = {c.name: c for c in offered}
    for extra in component_tools:
        if extra not in by_name:
            raise ConfigurationError(f"component_tools names {extra!r}, which is not in the catalog")
    if mode == "per-component":
        return [_component_tool(c, f"{prefix}show_{_slug(c.name)}") for c in offered]
    if mode != "tree":
        raise ConfigurationError(f'genui mode must be "tree" or "per-component", got {mode!r}')
    flat = [_component_tool(by_name[n], f"{prefix}{_slug(n)}") for n in component_tools]
    return [_tree_tool(offered, f"{prefix}render"), *flat]
