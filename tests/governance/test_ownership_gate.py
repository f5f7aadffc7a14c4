"""Ownership of threads/runs and the governance gate (REFERENCE OWN-01..03, GGATE-01)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from starlette.requests import Request

from agora_agent.actors import Actor
from agora_agent.governance.gate import Caller, GateDecision, GovernanceScope, Grant, evaluate_governance_gate, scope_of
from agora_agent.governance.ownership import evaluate_ownership

ALICE = Actor("alice", ("ADMIN",))


ACME = GovernanceScope(tenants={"acme"})


@pytest.mark.ref("OWN-01", "OWN-03")
@pytest.mark.parametrize(
    ("actor_id", "owner", "tenant", "grant", "expected"),
    [
        ("alice", None, None, False, "not_found"),
        ("alice", None, None, True, "not_found"),  # unknown stays not found even for a global admin
        ("alice", "alice", None, False, "owner"),
        ("alice", "alice", None, True, "owner"),
        ("alice", "bob", None, True, "privileged"),
        ("alice", "bob", None, False, "forbidden"),  # no gate = own-only, even for admins
        ("alice", "", None, False, "forbidden"),
        ("alice", "bob", "acme", ACME, "privileged"),  # a tenant admin inside the tenant
        ("alice", "bob", "globex", ACME, "forbidden"),  # ... and outside it
        ("alice", "bob", None, ACME, "forbidden"),  # rows without a tenant are outside every scope
        ("alice", "bob", "acme", GovernanceScope(), "forbidden"),
    ],
)
def test_ownership_table(actor_id: str, owner: str | None, tenant: str | None, grant: Grant, expected: str) -> None:
    decision = evaluate_ownership(actor_id, owner, grant, tenant_ref=tenant)
    assert decision.verdict == expected
    assert decision.ok is (expected in ("owner", "privileged"))


def request() -> Request:
    return Request({"type": "http", "method": "GET", "path": "/agent/governance/runs", "headers": []})


def sync_true(actor: Actor, req: Request | None) -> bool:
    return True


def sync_false(actor: Actor, req: Request | None) -> bool:
    return False


async def async_admin(actor: Actor, req: Request | None) -> bool:
    return "ADMIN" in actor.roles


def falsy_value(actor: Actor, req: Request | None) -> Any:
    return 0


def raises(actor: Actor, req: Request | None) -> bool:
    raise PermissionError("directory says no")


def raises_empty(actor: Actor, req: Request | None) -> bool:
    raise RuntimeError()


async def async_raises(actor: Actor, req: Request | None) -> bool:
    raise LookupError("authz unreachable")


def tenant_admin(actor: Actor, req: Request | None) -> GovernanceScope:
    return GovernanceScope(tenants={actor.tenant_ref})


@pytest.mark.ref("GGATE-01")
@pytest.mark.parametrize(
    ("authorize", "expected"),
    [
        (None, GateDecision(False)),  # no predicate: no privilege exists
        (sync_true, GateDecision(True, True)),
        (async_admin, GateDecision(True, True)),
        (tenant_admin, GateDecision(True, GovernanceScope(tenants={"acme"}))),
        (sync_false, GateDecision(False)),
        (falsy_value, GateDecision(False)),
        (raises, GateDecision(False, reason="directory says no")),
        (async_raises, GateDecision(False, reason="authz unreachable")),
        (raises_empty, GateDecision(False)),
    ],
)
async def test_governance_gate_table(authorize: Any, expected: GateDecision) -> None:
    assert await evaluate_governance_gate(Actor("alice", ("ADMIN",), "acme"), request(), authorize) == expected


def test_a_scope_drops_empty_tenants_and_covers_only_its_own() -> None:
    scope = GovernanceScope(tenants=["acme", None, ""])
    assert scope.tenants == frozenset({"acme"})
    assert scope.covers("acme") and not scope.covers("globex") and not scope.covers(None)
    assert scope_of(True) is None and scope_of(scope) is scope and scope_of(False) == GovernanceScope()


async def test_a_caller_asks_the_gate_once() -> None:
    seen: list[Actor] = []

    def authorize(actor: Actor, req: Request | None) -> bool:
        seen.append(actor)
        return True

    caller = Caller(ALICE, request())
    assert (await caller.decision(authorize)).grant is True
    assert (await caller.decision(authorize)).grant is True
    assert seen == [ALICE]
    explicit = Caller(ALICE, grant=GovernanceScope(tenants={"acme"}))
    assert (await explicit.decision(authorize)).grant == GovernanceScope(tenants={"acme"})
    assert seen == [ALICE]  # an explicit grant never asks


@pytest.mark.ref("GGATE-01")
async def test_gate_sees_the_actor_and_request_and_logs_failures(caplog: pytest.LogCaptureFixture) -> None:
    seen: list[tuple[Actor, Request | None]] = []

    def authorize(actor: Actor, req: Request | None) -> bool:
        seen.append((actor, req))
        return False

    req = request()
    assert not (await evaluate_governance_gate(Actor("bob"), req, authorize)).ok
    assert seen == [(Actor("bob"), req)]
    assert (await evaluate_governance_gate(Actor("bob", ("ADMIN",)), None, async_admin)).ok
    with caplog.at_level(logging.WARNING, logger="agora_agent.governance.gate"):
        await evaluate_governance_gate(ALICE, req, raises)
    assert any("directory says no" in r.getMessage() for r in caplog.records)


async def test_gate_lets_cancellation_through() -> None:
    async def cancelled(actor: Actor, req: Request | None) -> bool:
        raise asyncio.CancelledError

    with pytest.raises(asyncio.CancelledError):
        await evaluate_governance_gate(ALICE, None, cancelled)
