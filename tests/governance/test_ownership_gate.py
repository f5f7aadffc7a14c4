"""Ownership of threads/runs and the governance gate (REFERENCE OWN-01..03, GGATE-01)."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest
from starlette.requests import Request

from agora_agent.actors import Actor
from agora_agent.governance.gate import GateDecision, evaluate_governance_gate
from agora_agent.governance.ownership import OwnershipDecision, evaluate_ownership

ALICE = Actor("alice", ("ADMIN",))


@pytest.mark.ref("OWN-01", "OWN-03")
@pytest.mark.parametrize(
    ("actor_id", "owner", "privileged", "expected"),
    [
        ("alice", None, False, OwnershipDecision(False, 404, "not found")),
        ("alice", None, True, OwnershipDecision(False, 404, "not found")),  # unknown stays 404 even for the privileged
        ("alice", "alice", False, OwnershipDecision(True, 200)),
        ("alice", "alice", True, OwnershipDecision(True, 200)),
        ("alice", "bob", True, OwnershipDecision(True, 200)),
        ("alice", "bob", False, OwnershipDecision(False, 403, "forbidden")),  # no gate = own-only, even for admins
        ("alice", "", False, OwnershipDecision(False, 403, "forbidden")),
    ],
)
def test_ownership_table(actor_id: str, owner: str | None, privileged: bool, expected: OwnershipDecision) -> None:
    assert evaluate_ownership(actor_id, owner, privileged) == expected


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


@pytest.mark.ref("GGATE-01")
@pytest.mark.parametrize(
    ("authorize", "debug", "expected"),
    [
        (None, False, GateDecision(True, 200)),
        (sync_true, False, GateDecision(True, 200)),
        (async_admin, False, GateDecision(True, 200)),
        (sync_false, False, GateDecision(False, 403, "forbidden")),
        (falsy_value, False, GateDecision(False, 403, "forbidden")),
        (raises, False, GateDecision(False, 403, "forbidden")),
        (raises, True, GateDecision(False, 403, "directory says no")),
        (async_raises, True, GateDecision(False, 403, "authz unreachable")),
        (async_raises, False, GateDecision(False, 403, "forbidden")),
        (raises_empty, True, GateDecision(False, 403, "forbidden")),
    ],
)
async def test_governance_gate_table(authorize: Any, debug: bool, expected: GateDecision) -> None:
    assert await evaluate_governance_gate(ALICE, request(), authorize, debug=debug) == expected


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
