"""Roles policies: open default, closed variant, ability delegation, the personal_agent rule (POL-01..06)."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pydantic import BaseModel

from agora_agent.actors import Actor
from agora_agent.errors import ConfigurationError
from agora_agent.governance.policy import (
    PERSONAL_AGENT_ROLE,
    AbilityPolicy,
    ClosedRolesPolicy,
    DefaultRolesPolicy,
    RolesPolicy,
)
from agora_agent.tools.spec import ToolSpec


class NoInput(BaseModel):
    pass


def spec(roles: tuple[str, ...] | None = None, ability: str | None = None, name: str = "t") -> ToolSpec:
    return ToolSpec(name=name, description="T.", kind="read", input_model=NoInput, roles=roles, ability=ability)


ADMIN = Actor("root", ("ADMIN",))
OPS = Actor("olga", ("ops",))
NOBODY = Actor("nobody")
PERSONAL = Actor("bot", (PERSONAL_AGENT_ROLE, "scope:poppy:read", "ops"))


def test_policies_satisfy_the_protocol() -> None:
    for p in (DefaultRolesPolicy(), ClosedRolesPolicy(), AbilityPolicy(lambda a, ab, s: True)):
        assert isinstance(p, RolesPolicy)


@pytest.mark.ref("POL-05")
@pytest.mark.parametrize(
    ("roles", "actor", "expected"),
    [
        (None, NOBODY, True),  # open by default: no roles = no restriction
        ((), NOBODY, True),
        (("ops",), OPS, True),
        (("ops",), ADMIN, False),
        (("ops", "ADMIN"), ADMIN, True),
        (("ops",), NOBODY, False),
    ],
)
def test_default_policy_is_open(roles: tuple[str, ...] | None, actor: Actor, expected: bool) -> None:
    assert DefaultRolesPolicy().can(actor, spec(roles)) is expected


@pytest.mark.ref("POL-05")
@pytest.mark.parametrize(
    ("roles", "actor", "expected"),
    [
        (None, NOBODY, False),
        ((), ADMIN, False),
        (("ops",), OPS, True),
        (("ops",), NOBODY, False),
    ],
)
def test_empty_roles_deny_closes_tools_without_roles(roles: Any, actor: Actor, expected: bool) -> None:
    assert DefaultRolesPolicy(empty_roles="deny").can(actor, spec(roles)) is expected


@pytest.mark.ref("POL-01", "POL-03")
def test_default_roles_apply_to_tools_without_roles() -> None:
    policy = DefaultRolesPolicy(default_roles=["support"])
    assert policy.can(Actor("s", ("support",)), spec(None)) is True
    assert policy.can(OPS, spec(None)) is False
    assert policy.can(OPS, spec(("ops",))) is True  # explicit roles replace the default
    # explicit () in the open policy: nothing allowed -> empty -> open
    assert policy.can(OPS, spec(())) is True


@pytest.mark.ref("POL-01", "POL-02")
@pytest.mark.parametrize(
    ("roles", "actor", "expected"),
    [
        (None, ADMIN, True),  # no roles -> ADMIN only
        (None, OPS, False),
        ((), ADMIN, False),  # explicit empty -> nobody
        (("ops",), OPS, True),
        (("ops",), ADMIN, False),
    ],
)
def test_closed_policy_mirrors_the_reference(roles: Any, actor: Actor, expected: bool) -> None:
    assert ClosedRolesPolicy().can(actor, spec(roles)) is expected


def test_closed_policy_default_roles_are_configurable() -> None:
    assert ClosedRolesPolicy(default_roles=("ops",)).can(OPS, spec(None)) is True


def test_bad_empty_roles_value_is_a_configuration_error() -> None:
    with pytest.raises(ConfigurationError) as bad:
        DefaultRolesPolicy(empty_roles="open")  # type: ignore[arg-type]
    assert bad.value.option == "empty_roles"


@pytest.mark.ref("POL-06")
@pytest.mark.parametrize("policy", [DefaultRolesPolicy(), DefaultRolesPolicy(default_roles=("ops",))])
def test_personal_agent_reaches_only_tools_naming_its_roles(policy: DefaultRolesPolicy) -> None:
    assert policy.can(PERSONAL, spec(None)) is False  # open tool, still out of reach
    assert policy.can(PERSONAL, spec(())) is False
    assert policy.can(PERSONAL, spec(("ADMIN",))) is False
    assert policy.can(PERSONAL, spec((PERSONAL_AGENT_ROLE,))) is True
    assert policy.can(PERSONAL, spec(("scope:poppy:read",))) is True
    assert policy.can(PERSONAL, spec(("scope:poppy:write",))) is False
    # the same open tool stays open to everyone else
    assert policy.can(Actor("x", ("ops",)), spec(None)) is True


@pytest.mark.ref("POL-06")
def test_personal_agent_rule_applies_to_the_closed_policy() -> None:
    closed = ClosedRolesPolicy(default_roles=("ops",))
    assert closed.can(PERSONAL, spec(None)) is False  # default roles include "ops", but not explicit
    assert closed.can(PERSONAL, spec(("ops",))) is True


@pytest.mark.ref("POL-04")
async def test_ability_policy_asks_the_check_with_the_ability() -> None:
    asked: list[tuple[str, str, str]] = []

    def check(actor: Actor, ability: str, s: ToolSpec) -> bool:
        asked.append((actor.id, ability, s.name))
        return ability == "orders.read"

    policy = AbilityPolicy(check)
    assert policy.can(OPS, spec(ability="orders.read", name="list")) is True
    assert policy.can(OPS, spec(ability="orders.write", name="refund")) is False
    assert asked == [("olga", "orders.read", "list"), ("olga", "orders.write", "refund")]


@pytest.mark.ref("POL-04")
async def test_ability_policy_awaits_async_checks() -> None:
    async def check(actor: Actor, ability: str, s: ToolSpec) -> bool:
        return actor.id == "olga"

    verdict = AbilityPolicy(check).can(OPS, spec(ability="x"))
    assert not isinstance(verdict, bool)
    assert await verdict is True
    assert await AbilityPolicy(check).can(NOBODY, spec(ability="x")) is False  # type: ignore[misc]


@pytest.mark.ref("POL-04")
def test_tool_without_ability_is_refused_or_goes_to_the_fallback() -> None:
    def check(actor: Actor, ability: str, s: ToolSpec) -> bool:
        raise AssertionError("not asked for tools without ability")

    assert AbilityPolicy(check).can(ADMIN, spec()) is False
    with_fallback = AbilityPolicy(check, fallback=DefaultRolesPolicy())
    assert with_fallback.can(NOBODY, spec()) is True
    assert with_fallback.can(NOBODY, spec(("ops",))) is False


@pytest.mark.ref("POL-04")
async def test_a_raising_ability_check_refuses_and_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    def sync_boom(actor: Actor, ability: str, s: ToolSpec) -> bool:
        raise RuntimeError("authz down")

    async def async_boom(actor: Actor, ability: str, s: ToolSpec) -> bool:
        raise RuntimeError("authz down")

    with caplog.at_level(logging.ERROR, logger="agora_agent.governance.policy"):
        assert AbilityPolicy(sync_boom).can(OPS, spec(ability="a", name="sync_tool")) is False
        assert await AbilityPolicy(async_boom).can(OPS, spec(ability="a", name="async_tool")) is False  # type: ignore[misc]
    messages = " ".join(r.getMessage() for r in caplog.records)
    assert '"sync_tool"' in messages and '"async_tool"' in messages


@pytest.mark.ref("POL-06")
def test_ability_policy_keeps_the_personal_agent_rule() -> None:
    policy = AbilityPolicy(lambda a, ab, s: True)
    assert policy.can(PERSONAL, spec(ability="x")) is False
    assert policy.can(PERSONAL, spec(roles=("scope:poppy:read",), ability="x")) is True
