"""Public names a package loads on first use (PEP 562), so importing the package stays cheap."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_exports"]


def lazy_exports(package: str, sources: Mapping[str, str], namespace: dict[str, Any]) -> Callable[[str], Any]:
    """The package's module `__getattr__`: each name of `sources` (name -> the module defining it) is imported
    when first asked for and kept in `namespace` (the package's `globals()`), so later lookups cost nothing.
    Type checkers see the names through the package's `if TYPE_CHECKING:` imports."""

    def __getattr__(name: str) -> Any:
        source = sources.get(name)
        if source is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(source), name)
        namespace[name] = value
        return value

    return __getattr__
