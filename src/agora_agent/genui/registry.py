"""The registry of components an app (or a tenant) may push: a frame is written only after its props
validated against the registered component.

    Weather = create_component("Weather", props=WeatherProps, description="A forecast card")
    registry = ComponentRegistry([Weather])          # the builtins DataTable and Chart are included
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel

from agora_agent.actors import Actor
from agora_agent.errors import ConfigurationError
from agora_agent.genui.builtins import BUILTIN_COMPONENTS
from agora_agent.genui.components import Component, ComponentPropsError

__all__ = ["ComponentRegistry", "ComponentSource", "registry_for"]


@dataclass
class ComponentRegistry:
    """The components an app (or a tenant) may push. Unknown names and invalid props never reach a client.

    Built with the builtins (`DataTable`, `Chart`) unless `builtins=False`.
    """

    components: Iterable[Component] = ()
    builtins: bool = True
    _by_name: dict[str, Component] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        for component in [*(BUILTIN_COMPONENTS if self.builtins else ()), *self.components]:
            self.register(component, replace=component.name in {b.name for b in BUILTIN_COMPONENTS})

    def register(self, component: Component, *, replace: bool = False) -> None:
        """Add a component; a second one under the same name is a `ConfigurationError` (builtins may be replaced)."""
        if component.name in self._by_name and not replace:
            raise ConfigurationError(f"component {component.name!r} is registered twice")
        self._by_name[component.name] = component

    def get(self, name: str) -> Component | None:
        return self._by_name.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Any:
        return iter(self._by_name.values())

    def validate(self, name: str, data: Mapping[str, Any] | BaseModel) -> dict[str, Any]:
        """Validate `data` as the props of the registered component `name`."""
        component = self._by_name.get(name)
        if component is None:
            known = ", ".join(sorted(self._by_name)) or "none"
            raise ComponentPropsError(name, [f"no component {name!r} is registered (known: {known})"])
        return component.validate(data)


ComponentSource = ComponentRegistry | Callable[[Actor], "ComponentRegistry | None"]
"""`AgentConfig.components`: one registry for the app, or a function of the caller (one per tenant, say)."""


def registry_for(source: ComponentSource | None, actor: Actor) -> ComponentRegistry | None:
    """The registry `actor`'s tool calls push into: `source` itself, or what `source(actor)` returns.

    A function returning None means the builtins only. It runs at a tool call's first push, so keep it
    a lookup (build the registries once, at start-up); what it raises fails that push like invalid props.
    """
    if source is None or isinstance(source, ComponentRegistry):
        return source
    chosen = source(actor)
    if chosen is None:
        return _builtins_only()
    if not isinstance(chosen, ComponentRegistry):
        raise ConfigurationError(
            f"AgentConfig.components returned {type(chosen).__name__} for actor {actor.id!r};"
            " expected a ComponentRegistry"
        )
    return chosen


_BUILTINS: list[ComponentRegistry] = []


def _builtins_only() -> ComponentRegistry:
    if not _BUILTINS:  # built on first use, not at import
        _BUILTINS.append(ComponentRegistry())
    return _BUILTINS[0]
