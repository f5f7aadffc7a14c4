"""Roles policies: who may see and call which tool (REFERENCE POL-*, DESIGN §3)."""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Protocol, runtime_checkable

from agora_agent.actors import Actor
from agora_agent.tools.spec import ToolSpec

__all__ = ["RolesPolicy"]


@runtime_checkable
class RolesPolicy(Protocol):
    """Decides whether an actor may use a tool. The same answer gates offering AND invoking."""

    def can(self, actor: Actor, spec: ToolSpec) -> bool | Awaitable[bool]: ...
