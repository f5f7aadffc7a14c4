"""Components with typed props, presentations of them, and the registry that validates both.

A component is a name and a Pydantic props model; the server only ever sends the name and validated
JSON data, the page (or any client) owns the drawing. A registry is one per app (or per tenant): a
frame is written only after its props validated against the registered component.

    Weather = create_component("Weather", props=WeatherProps, description="A forecast card")
    registry = ComponentRegistry([Weather])          # the builtins DataTable and Chart are included
    presentation = Weather(city="Oslo", celsius=4)   # validated now
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ValidationError

from agora_agent.actors import Actor
from agora_agent.errors import ConfigurationError, InvalidRequestError

__all__ = [
    "Component",
    "ComponentPropsError",
    "ComponentRegistry",
    "ComponentSource",
    "Presentation",
    "create_component",
    "registry_for",
]


class ComponentPropsError(InvalidRequestError):
    """A component's props failed validation (every issue listed); nothing was sent to the client."""

    def __init__(self, component: str, issues: list[str]) -> None:
        self.component = component
        self.issues = issues
        super().__init__(f"component {component!r} got invalid props: " + "; ".join(issues))


def _issues(error: ValidationError) -> list[str]:
    return [f"{'.'.join(str(p) for p in e['loc']) or '(root)'}: {e['msg']}" for e in error.errors()]


@dataclass(frozen=True, slots=True)
class Presentation:
    """One component to draw: its name and its props as JSON (already validated and normalised).

    `id` ties loading states together: a later presentation with the same id replaces the earlier one.
    """

    component: str
    props: dict[str, Any]
    id: str | None = None


@dataclass(frozen=True, kw_only=True)
class Component:
    """A named UI component with a props model; call it with props to get a `Presentation`.

    - `props`: validates what a tool (or the model, through catalog tools) passes.
    - `output_props`: validates the normalised JSON that is streamed and persisted (default: `props`).
    - `internal`: not offered to the model by catalog tools (e.g. loading placeholders only tools push).
    """

    name: str
    props: type[BaseModel]
    output_props: type[BaseModel] | None = None
    description: str = ""
    internal: bool = False

    def validate(self, data: Mapping[str, Any] | BaseModel) -> dict[str, Any]:
        """Props → the JSON that goes on the wire; raises `ComponentPropsError` listing every issue."""
        try:
            model = data if isinstance(data, self.props) else self.props.model_validate(data)
            # A placeholder ({"state": "loading"}) carries only what was given, not the data's defaults.
            placeholder = getattr(model, "state", None) is not None
            out = model.model_dump(mode="json", exclude_none=True, exclude_unset=placeholder)
            if self.output_props is not None:
                out = self.output_props.model_validate(out).model_dump(mode="json", exclude_none=True)
        except ValidationError as exc:
            raise ComponentPropsError(self.name, _issues(exc)) from None
        return out

    def __call__(self, *, id: str | None = None, **props: Any) -> Presentation:
        return Presentation(self.name, self.validate(props), id)


def create_component(
    name: str,
    *,
    props: type[BaseModel],
    output_props: type[BaseModel] | None = None,
    description: str = "",
    internal: bool = False,
) -> Component:
    """Declare a component: `name` is what the client registers its renderer under."""
    if not name or not name.replace("_", "").replace("-", "").isalnum():
        raise ConfigurationError(f"component name {name!r} must be letters, digits, '_' or '-'")
    if not (isinstance(props, type) and issubclass(props, BaseModel)):
        raise ConfigurationError(f"component {name!r} needs a pydantic BaseModel for props, got {props!r}")
    return Component(name=name, props=props, output_props=output_props, description=description, internal=internal)


@dataclass
class ComponentRegistry:
    """The components an app (or a tenant) may push. Unknown names and invalid props never reach a client.

    Built with the builtins (`DataTable`, `Chart`) unless `builtins=False`.
    """

    components: Iterable[Component] = ()
    builtins: bool = True
    _by_name: dict[str, Component] = field(init=False, default_factory=dict)

    def __post_init__(self) -> None:
        from agora_agent.genui.builtins import BUILTIN_COMPONENTS

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
    if not _BUILTINS:  # built on first use: the builtins module imports this one
        _BUILTINS.append(ComponentRegistry())
    return _BUILTINS[0]
