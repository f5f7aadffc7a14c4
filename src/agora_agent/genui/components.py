"""Components with typed props and presentations of them (the registry that validates both is `genui.registry`).

A component is a name and a Pydantic props model; the server only ever sends the name and validated
JSON data, the page (or any client) owns the drawing. A presentation is validated when it is made.

    Weather = create_component("Weather", props=WeatherProps, description="A forecast card")
    presentation = Weather(city="Oslo", celsius=4)   # validated now
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError

from agora_agent.errors import ConfigurationError, InvalidRequestError

__all__ = ["Component", "ComponentPropsError", "Presentation", "create_component"]


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
