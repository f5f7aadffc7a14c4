"""Reading a tool function's signature: its input model, and how to call it back (FastAPI-style).

The single pydantic-model parameter is the input model; otherwise one is built from the typed parameters
with `pydantic.create_model` (defaults and `Annotated[..., Field(...)]` kept). A parameter annotated
`ToolContext` (any name) is injected, never part of the input.
"""

from __future__ import annotations

import inspect
import re
import types
import typing
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, create_model

from agora_agent.errors import ConfigurationError
from agora_agent.tools.context import ToolContext

__all__ = ["CallShape", "call_shape", "qualname"]


def qualname(obj: Any) -> str:
    """`module.QualName` of a function or class, for error messages and duplicate warnings."""
    return f"{getattr(obj, '__module__', '?')}.{getattr(obj, '__qualname__', repr(obj))}"


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _is_ctx(annotation: Any) -> bool:
    """`ToolContext`, a subclass, `Annotated[ToolContext, ...]` or `ToolContext | None`."""
    origin = typing.get_origin(annotation)
    if origin is typing.Annotated:
        return _is_ctx(typing.get_args(annotation)[0])
    if origin in (typing.Union, types.UnionType):
        return any(_is_ctx(a) for a in typing.get_args(annotation))
    return origin is None and isinstance(annotation, type) and issubclass(annotation, ToolContext)


@dataclass(frozen=True, slots=True)
class CallShape:
    """How to turn a validated input model (and the ctx) back into the function's arguments."""

    input_model: type[BaseModel]
    model_param: str | None  # the single BaseModel parameter, passed whole
    fields: tuple[str, ...]  # plain parameters, passed as keywords
    ctx_param: str | None
    stored: bool = False  # the input model's fields are `fields`, in order: its instances' __dict__ holds the keywords

    def kwargs(self, input: BaseModel, ctx: ToolContext) -> dict[str, Any]:
        if self.model_param is not None:
            kw: dict[str, Any] = {self.model_param: input}
        elif self.stored and type(input) is self.input_model:
            kw = input.__dict__.copy()  # the field values as validated (nested models stay models), in one copy
        else:
            # getattr keeps nested models as models; model_dump would flatten them to dicts.
            kw = {f: getattr(input, f) for f in self.fields}
        if self.ctx_param is not None:
            kw[self.ctx_param] = ctx
        return kw


def _pascal(name: str) -> str:
    return "".join(part[:1].upper() + part[1:] for part in re.split(r"[_\-]+", name) if part) or "Tool"


def call_shape(fn: Callable[..., Any], tool_name: str) -> CallShape:
    """Read `fn`'s signature; raises `ConfigurationError` (naming `fn`) for *args/**kwargs, positional-only
    parameters, unresolvable annotations or parameters pydantic cannot model."""
    owner = qualname(fn)
    try:
        hints = typing.get_type_hints(fn, include_extras=True)
    except Exception as exc:  # NameError for a forward reference that does not resolve, mostly
        raise ConfigurationError(f"cannot read the type hints of tool function {owner}: {exc}") from exc
    params = list(inspect.signature(fn).parameters.values())
    ctx_param: str | None = None
    plain: list[inspect.Parameter] = []
    for p in params:
        if p.kind in (p.VAR_POSITIONAL, p.VAR_KEYWORD, p.POSITIONAL_ONLY):
            raise ConfigurationError(
                f"tool function {owner} has parameter {p.name!r} of kind {p.kind.description}: "
                "tool inputs are named, so use ordinary or keyword-only parameters",
                code="unnamed_parameter",
            )
        annotation = hints.get(p.name, Any)
        if _is_ctx(annotation):
            ctx_param = p.name
        else:
            plain.append(p)
    if len(plain) == 1 and _is_model(hints.get(plain[0].name)):
        return CallShape(hints[plain[0].name], plain[0].name, (), ctx_param)
    definitions: dict[str, Any] = {}
    for p in plain:
        default = ... if p.default is inspect.Parameter.empty else p.default
        definitions[p.name] = (hints.get(p.name, Any), default)
    try:
        model = create_model(f"{_pascal(tool_name)}Input", __module__=fn.__module__, **definitions)
    except Exception as exc:
        raise ConfigurationError(f"cannot build the input model of tool function {owner}: {exc}") from exc
    return CallShape(model, None, tuple(definitions), ctx_param, stored=tuple(model.model_fields) == tuple(definitions))
