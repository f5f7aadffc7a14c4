"""Finding tools in a Python package.

`discover_tools("myapp.agent_tools")` imports the package and every submodule below it, in sorted order,
and returns the tools they define: `@tool`/`define_tool` objects, other `Tool`-protocol objects, and
concrete `BaseTool` subclasses defined in that module. A module that fails to import is logged at ERROR
and skipped; the others still count. Register the result in order: on a name clash the first one wins.
"""

from __future__ import annotations

import importlib
import inspect
import logging
import pkgutil
from types import ModuleType

from agora_agent.errors import ConfigurationError
from agora_agent.tools.authoring import ActionTool, BaseTool, FunctionTool, ReadTool
from agora_agent.tools.spec import Tool

__all__ = ["discover_tools", "tools_in_module"]

logger = logging.getLogger(__name__)

_BASES: frozenset[type] = frozenset({BaseTool, ReadTool, ActionTool})


def _is_tool(value: object, module: ModuleType) -> bool:
    if isinstance(value, type):
        return (
            issubclass(value, BaseTool)
            and value not in _BASES
            and value.__module__ == module.__name__
            and not inspect.isabstract(value)
        )
    # isinstance(…, Tool) only checks attribute presence; a class object with those attributes is not a tool.
    return isinstance(value, FunctionTool | Tool)


def tools_in_module(module: ModuleType) -> list[object]:
    """The tool objects and concrete tool classes a module defines, in definition order."""
    return [value for value in vars(module).values() if _is_tool(value, module)]


def _import_root(package: str) -> ModuleType:
    try:
        return importlib.import_module(package)
    except ModuleNotFoundError as exc:
        if exc.name is not None and (package == exc.name or package.startswith(exc.name + ".")):
            raise ConfigurationError(
                f"tools package {package!r} was not found: check AgentConfig(tools_package=...) and that it is "
                "importable (installed, or on sys.path)",
                code="package_not_found",
            ) from exc
        raise ConfigurationError(f"tools package {package!r} failed to import: {exc}", code="import_failed") from exc
    except Exception as exc:
        raise ConfigurationError(f"tools package {package!r} failed to import: {exc!r}", code="import_failed") from exc


def discover_tools(package: str) -> list[object]:
    """Import `package` and all its submodules (sorted by name) and collect their tools, each object once.

    Raises `ConfigurationError` when the package itself cannot be imported. A failing submodule is logged
    (ERROR, with its name and the error) and skipped.
    """
    root = _import_root(package)
    modules: list[ModuleType] = [root]
    path = getattr(root, "__path__", None)
    if path is not None:
        # walk_packages imports subpackages to recurse into them; a failing one is reported by our own import below.
        names = sorted(info.name for info in pkgutil.walk_packages(path, root.__name__ + ".", onerror=lambda _: None))
        for name in names:
            try:
                modules.append(importlib.import_module(name))
            except Exception as exc:
                logger.error("failed to import tool module %s, skipping it: %r", name, exc, exc_info=exc)
    found: list[object] = []
    seen: set[int] = set()
    for module in modules:
        for value in tools_in_module(module):
            if id(value) not in seen:
                seen.add(id(value))
                found.append(value)
    return found
