"""`fast_init` and `constructor`: cheaper construction of the dataclasses a governed step builds by the dozen.

`fast_init(cls)` — a cheaper `__init__` for a frozen dataclass.

A frozen dataclass's generated `__init__` sets every field with `object.__setattr__(self, name, value)`, the
generic attribute path (about twice what the rest of the call costs); a tool step builds some twenty such
values (frames, messages, the model step, its reservation). `fast_init` generates the same `__init__` —
same parameters, defaults, keyword-only markers, annotations and qualified name, the same `__post_init__`
call — that sets a slot through its own descriptor (`member.__set__(self, value)`) and a dict-based
instance through its `__dict__`. Nothing else of the class changes: it stays frozen (assigning still raises
`FrozenInstanceError`), and equality, hashing, `repr`, `replace`, pickling and copying are untouched.

Classes it cannot mirror exactly (an `InitVar`, a field excluded from `__init__` without a default) keep the
generated `__init__`.

`constructor(cls)` — a function that builds what `cls(...)` builds, without calling the class.

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
import types
from collections.abc import Callable, Iterable
from typing import Any, ParamSpec, TypeVar

__all__ = ["constructor", "fast_init", "init_parameters"]

C = TypeVar("C", bound=type)
P = ParamSpec("P")
T = TypeVar("T")

# The marker the generated `__init__` shows for a `default_factory` field (`<factory>` in a signature).
_FACTORY: Any = getattr(dataclasses, "_HAS_DEFAULT_FACTORY", None) or object()
_INITVAR: Any = getattr(dataclasses, "_FIELD_INITVAR", None)  # without it, InitVars cannot be told: keep every init
_FIELD: Any = getattr(dataclasses, "_FIELD", None)
_RESERVED = frozenset({"self", "_cls", "_new", "_twin", "_FACTORY"})  # names of the function `constructor` generates


class _Slot:
    __slots__ = ("value",)


_MEMBER = type(_Slot.__dict__["value"])  # the descriptor of a slot
_DESCRIPTORS = (property, _MEMBER, types.GetSetDescriptorType)


def init_parameters(
    fields: Iterable[dataclasses.Field[Any]], env: dict[str, Any]
) -> tuple[list[str], list[tuple[int, dataclasses.Field[Any], str | None, list[str]]]]:
    """What a function generated like a dataclass's `__init__` needs from its `fields`: the parameter list (names,
    defaults put in `env` as `_default_<i>` / `_factory_<i>`, a factory's parameter defaulting to `env["_FACTORY"]`,
    `*` before the keyword-only ones) and, per field, `(i, field, value, prelude)`: the expression of its value
    (None: the generated `__init__` leaves it unset) and the lines to run before storing it (a default factory)."""
    positional: list[str] = []
    keyword: list[str] = []
    values: list[tuple[int, dataclasses.Field[Any], str | None, list[str]]] = []
    for i, f in enumerate(fields):
        default = ""
        if f.default is not dataclasses.MISSING:
            env[f"_default_{i}"] = f.default
            default = f"=_default_{i}"
        elif f.default_factory is not dataclasses.MISSING:
            env[f"_factory_{i}"] = f.default_factory
            default = "=_FACTORY"
        value: str | None = f.name
        prelude: list[str] = []
        if not f.init:
            value = f"_default_{i}" if f.default is not dataclasses.MISSING else None
            if f.default_factory is not dataclasses.MISSING:
                value = f"_factory_{i}()"
        else:
            (keyword if f.kw_only else positional).append(f"{f.name}{default}")
            if default == "=_FACTORY":
                prelude.append(f"    if {f.name} is _FACTORY:\n        {f.name} = _factory_{i}()")
        values.append((i, f, value, prelude))
    return [*positional, *(["*", *keyword] if keyword else [])], values


def fast_init(cls: C) -> C:
    """Give the frozen dataclass `cls` an `__init__` that sets its fields without `object.__setattr__`."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or _INITVAR is None:
        return cls
    if any(getattr(f, "_field_type", None) is _INITVAR for f in getattr(cls, "__dataclass_fields__", {}).values()):
        return cls  # an InitVar: its value goes to __post_init__, not to a field
    env: dict[str, Any] = {"_FACTORY": _FACTORY}
    body: list[str] = ["    _d = self.__dict__"]  # dropped below when every field is a slot
    in_dict = False
    params, values = init_parameters(dataclasses.fields(cls), env)
    for i, f, value, prelude in values:
        if value is None:
            return cls  # left unset by the generated __init__ too: keep that one
        body += prelude
        owner = next((k for k in cls.__mro__ if f.name in k.__dict__), None)
        descriptor: Any = owner.__dict__[f.name] if owner is not None else None
        if type(descriptor) is _MEMBER:
            env[f"_set_{i}"] = descriptor.__set__
            body.append(f"    _set_{i}(self, {value})")
        elif owner is None or owner is object or not isinstance(descriptor, _DESCRIPTORS):
            in_dict = True  # a plain class attribute (the default) or nothing: the value lives in __dict__
            body.append(f"    _d[{f.name!r}] = {value}")
        else:
            return cls  # a property or another descriptor: keep the generated init
    if not in_dict:
        body.pop(0)
    if hasattr(cls, "__post_init__"):
        body.append("    self.__post_init__()")
    source = f"def __init__({', '.join(['self', *params])}):\n" + ("\n".join(body) or "    pass") + "\n"
    exec(source, env)  # generated from the class's own fields, as dataclasses does
    init = env["__init__"]
    original = cls.__dict__.get("__init__")
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    init.__annotations__ = dict(getattr(original, "__annotations__", {}))
    init.__doc__ = getattr(original, "__doc__", None)
    cls.__init__ = init  # type: ignore[misc]
    return cls


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
