"""Roles policies: who may see and call which tool.

The registry asks the same policy when it offers tools to the model and again when a call arrives, so a
tool the actor may not call is never even shown.

- `DefaultRolesPolicy()` — open by default: a tool without roles is usable by everyone
  (`empty_roles="deny"` closes it).
- `ClosedRolesPolicy()` — the reference's closed semantics: no roles means `default_roles` (ADMIN),
  explicit `roles=()` means nobody.
- `AbilityPolicy(check)` — delegate to your authorization service per tool `ability`.

Every policy here applies the `personal_agent` rule: an actor holding that role reaches only
tools that explicitly name one of its roles.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable
from typing import Literal

from agora_agent.actors import Actor
from agora_agent.errors import ConfigurationError
from agora_agent.tools.spec import RolesPolicy, ToolSpec

__all__ = [
    "PERSONAL_AGENT_ROLE",
    "AbilityCheck",
    "AbilityPolicy",
    "ClosedRolesPolicy",
    "DefaultRolesPolicy",
    "EmptyRoles",
]

logger = logging.getLogger(__name__)

PERSONAL_AGENT_ROLE = "personal_agent"
EmptyRoles = Literal["allow", "deny"]
AbilityCheck = Callable[[Actor, str, ToolSpec], "bool | Awaitable[bool]"]


def personal_agent_allows(actor: Actor, spec: ToolSpec) -> bool:
    """A `personal_agent` actor reaches only tools whose explicit roles include one of its roles."""
    return spec.roles is not None and not set(spec.roles).isdisjoint(actor.roles)


class DefaultRolesPolicy:
    """Role intersection with an open default.

    allowed = `spec.roles` if set, else `default_roles`; an empty allowed set means everyone when
    `empty_roles="allow"` (the default) and nobody when `"deny"`; otherwise the actor needs one allowed role.
    """

    def __init__(self, default_roles: Iterable[str] = (), empty_roles: EmptyRoles = "allow") -> None:
        if empty_roles not in ("allow", "deny"):
            raise ConfigurationError(
                f'empty_roles must be "allow" or "deny", got {empty_roles!r}', option="empty_roles"
            )
        if isinstance(default_roles, str):
            default_roles = (default_roles,)
        self.default_roles = tuple(default_roles)
        self.empty_roles: EmptyRoles = empty_roles

    @property
    def pure(self) -> bool:
        """`can` answers synchronously from the actor's roles and the tool's spec alone (a subclass that
        overrides `can` is not assumed to): the registry reuses its verdicts within a run."""
        return type(self).can is DefaultRolesPolicy.can

    def can(self, actor: Actor, spec: ToolSpec) -> bool:
        if PERSONAL_AGENT_ROLE in actor.roles:
            return personal_agent_allows(actor, spec)
        allowed = spec.roles if spec.roles is not None else self.default_roles
        if not allowed:
            return self.empty_roles == "allow"
        return not set(allowed).isdisjoint(actor.roles)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(default_roles={self.default_roles!r}, empty_roles={self.empty_roles!r})"


class ClosedRolesPolicy(DefaultRolesPolicy):
    """The reference's closed semantics: no roles -> `default_roles` (ADMIN); `roles=()` -> nobody."""

    def __init__(self, default_roles: Iterable[str] = ("ADMIN",)) -> None:
        super().__init__(default_roles, empty_roles="deny")

    def __repr__(self) -> str:
        return f"ClosedRolesPolicy(default_roles={self.default_roles!r})"


class AbilityPolicy:
    """Ask `check(actor, ability, spec)` (sync or async) for tools that declare an `ability`.

    A tool without `ability` goes to `fallback` (e.g. a `DefaultRolesPolicy`), or is refused without one.
    A `check` that raises refuses (the error is logged): authorization fails closed.
    """

    def __init__(self, check: AbilityCheck, *, fallback: RolesPolicy | None = None) -> None:
        self._check = check
        self.fallback = fallback

    def can(self, actor: Actor, spec: ToolSpec) -> bool | Awaitable[bool]:
        if spec.ability is None:
            return self.fallback.can(actor, spec) if self.fallback is not None else False
        if PERSONAL_AGENT_ROLE in actor.roles and not personal_agent_allows(actor, spec):
            return False
        try:
            verdict = self._check(actor, spec.ability, spec)
        except Exception:
            self._log_failure(actor, spec)
            return False
        if inspect.isawaitable(verdict):
            return self._settle(verdict, actor, spec)
        return bool(verdict)

    async def _settle(self, verdict: Awaitable[bool], actor: Actor, spec: ToolSpec) -> bool:
        try:
            return bool(await verdict)
        except Exception:
            self._log_failure(actor, spec)
            return False

    @staticmethod
    def _log_failure(actor: Actor, spec: ToolSpec) -> None:
        logger.exception(
            'ability check %r for tool "%s" raised for actor %r; refusing the tool', spec.ability, spec.name, actor.id
        )
