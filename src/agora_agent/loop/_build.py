"""`constructor(cls)`: a function that builds what `cls(...)` builds, for the dataclasses a step makes by the dozen.

On CPython 3.11 calling a class with keyword arguments turns them into a dict (`type.__call__` has no vectorcall)
and `__init__` unpacks that dict again: about 70 ns per keyword on the bench VM, while a function called with the
same keywords matches them in place. A governed tool step passes some 150 keywords to constructors (frames,
records, the model step, the tool's context), so this is a tenth of its cost. `constructor` generates, from the
dataclass's fields, a function with `__init__`'s parameters (names, defaults, keyword-only markers) that makes the
instance without calling the class:

- a class without a `__setattr__` of its own: `object.__new__(cls)`, then one plain attribute store per field —
  what the generated `__init__` does;
- a frozen class with `__slots__` (its `__setattr__` raises): the fields are stored on a twin class with the same
  slots and no `__setattr__`, whose instance then becomes a `cls` (`__class__` assignment: same layout, nothing
  copied). A frozen `__init__` sets each slot through a descriptor call instead (`object.__setattr__` or
  `fast_init`'s `member.__set__`), several times what a plain slot store costs.

The result is an ordinary `cls` instance: same type, field values, equality, hash, repr, pickling; a frozen one
stays frozen. Classes it cannot mirror exactly (`__post_init__`, `InitVar`, a base class, a custom `__init__` or
`__setattr__`, a frozen class without slots) get `cls` itself back, so a call site never depends on the shortcut.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, ParamSpec, TypeVar

from agora_agent._frozen import init_parameters

__all__ = ["constructor"]

P = ParamSpec("P")
T = TypeVar("T")

_FACTORY: Any = object()  # the default of a `default_factory` parameter: the factory runs when it is seen
_INITVAR: Any = getattr(dataclasses, "_FIELD_INITVAR", None)
_FIELD: Any = getattr(dataclasses, "_FIELD", None)
_RESERVED = frozenset({"self", "_cls", "_new", "_twin", "_FACTORY"})  # the generated function's own names


def constructor(cls: Callable[P, T]) -> Callable[P, T]:
    """A function taking `cls`'s `__init__` arguments that returns the instance `cls(...)` would (or `cls`)."""
    build: Callable[P, T] | None = _generate(cls)
    return cls if build is None else build


def _generate(cls: Any) -> Any:
    if not isinstance(cls, type) or not dataclasses.is_dataclass(cls) or _INITVAR is None or _FIELD is None:
        return None
    params = cls.__dict__.get("__dataclass_params__")
    if params is None or not params.init or cls.__bases__ != (object,) or hasattr(cls, "__post_init__"):
        return None
    fields = list(cls.__dict__["__dataclass_fields__"].values())
    if any(getattr(f, "_field_type", None) is _INITVAR or f.name in _RESERVED for f in fields):
        return None
    slots = cls.__dict__.get("__slots__")
    env: dict[str, Any] = {"_cls": cls, "_new": object.__new__, "_FACTORY": _FACTORY}
    if params.frozen:
        if slots is None:
            return None
        env["_twin"] = type(f"_{cls.__name__}Fields", (), {"__slots__": slots})
        body = ["    self = _twin()"]
    elif cls.__setattr__ is object.__setattr__:
        body = ["    self = _new(_cls)"]
    else:
        return None
    fields = [f for f in fields if getattr(f, "_field_type", None) is _FIELD]  # a ClassVar is not a field
    args, values = init_parameters(fields, env)
    for _, f, value, prelude in values:
        if value is None:
            continue  # left unset, as by the generated __init__
        body += prelude
        body.append(f"    self.{f.name} = {value}")
    if params.frozen:
        body.append("    self.__class__ = _cls")
    source = f"def build({', '.join(args)}):\n" + "\n".join(body) + "\n    return self\n"
    exec(source, env)  # generated from the class's own fields, as dataclasses does
    build = env["build"]
    build.__qualname__ = build.__name__ = f"build_{cls.__name__}"
    build.__doc__ = f"`{cls.__qualname__}(...)`, without the class call."
    return build
