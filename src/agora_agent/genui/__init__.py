"""Generative UI: components with typed props, result presentation, catalog tools and loading states.

    from agora_agent.genui import create_component, table, chart, genui, ComponentRegistry

A tool presents its result with `present(output, ctx)` (returning `table(...)`, `chart(...)` or your own
component's presentation); the server streams only the component's name and validated JSON data, and
persists it with the thread so a reload shows it again. The client draws it (the chat page ships
renderers for the builtins and lets an app register its own).
"""

from agora_agent.genui.builtins import BUILTIN_COMPONENTS, Chart, ChartProps, DataTable, DataTableProps, chart, table
from agora_agent.genui.catalog import genui
from agora_agent.genui.components import Component, ComponentPropsError, Presentation, create_component
from agora_agent.genui.present import PresentationErrorHandler, PresentationErrorInfo, PresentFn, run_present
from agora_agent.genui.registry import ComponentRegistry, ComponentSource, registry_for
from agora_agent.genui.session import UiSession

__all__ = [
    "BUILTIN_COMPONENTS",
    "Chart",
    "ChartProps",
    "Component",
    "ComponentPropsError",
    "ComponentRegistry",
    "ComponentSource",
    "DataTable",
    "DataTableProps",
    "PresentFn",
    "Presentation",
    "PresentationErrorHandler",
    "PresentationErrorInfo",
    "UiSession",
    "chart",
    "create_component",
    "genui",
    "registry_for",
    "run_present",
    "table",
]
