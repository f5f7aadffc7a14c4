"""Actor directories: turn actor refs into display labels for governance views.

The read side only: the HTTP layer calls `resolve_display` once per page with the distinct refs it
is about to show, and adds `actorLabel` to the rows whose ref came back. A directory that raises
leaves the rows unlabelled; it never fails the request.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Protocol, runtime_checkable

__all__ = ["ActorDirectory", "MemoryActorDirectory"]


@runtime_checkable
class ActorDirectory(Protocol):
    """`resolve_display(refs) -> {ref: label}`; unknown refs are simply absent from the result."""

    async def resolve_display(self, refs: Sequence[str]) -> dict[str, str]: ...


class MemoryActorDirectory:
    """A fixed `{ref: label}` mapping (tests, demos, small apps)."""

    def __init__(self, labels: Mapping[str, str] | Iterable[tuple[str, str]] = ()) -> None:
        self.labels: dict[str, str] = dict(labels)
        self.calls: list[list[str]] = []  # what was asked, so tests can check batching

    async def resolve_display(self, refs: Sequence[str]) -> dict[str, str]:
        self.calls.append(list(refs))
        return {ref: self.labels[ref] for ref in refs if ref in self.labels}
