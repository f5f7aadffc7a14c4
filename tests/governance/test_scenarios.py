"""One table of governance cases, run twice: through `AgentService` (a Python caller) and over HTTP.

The world: two tenants. In acme, alice's refund waits for approval, and so do mia's and sam's store
credits (`approver_roles=["manager"]`; sam's tool allows `self_approval`); in globex, bob's refund.
The gate makes `admin` a global admin and `tenant-admin` an admin of their own tenant:

    governance_authorize = GovernanceScope(tenants={actor.tenant_ref}) for "tenant-admin", True for "admin"

Each case runs in a fresh world. The expected outcome is a typed error through the service and the
matching status over HTTP: OK (2xx), FORBIDDEN (ForbiddenError / 403), NOT_FOUND (NotFoundError / 404);
for the list views, whether the target's row is PRESENT or ABSENT.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import httpx2
import pytest

from agora_agent import (
    Actor,
    AgentConfig,
    AgentService,
    Caller,
    ForbiddenError,
    GovernanceScope,
    ModelPrice,
    NotFoundError,
    tool,
)
from agora_agent.actors import HeaderActorResolver
from agora_agent.governance.console import inspect_run
from agora_agent.governance.gate import scope_of
from agora_agent.governance.price_changes import set_price
from agora_agent.governance.queries import RunQuery
from agora_agent.messages import ModelRequest
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest, wait_for_tool_status
from agora_agent.web import create_app
from tests.web.conftest import serve

OK, FORBIDDEN, NOT_FOUND, PRESENT, ABSENT = "ok", "forbidden", "not found", "present", "absent"

ALICE = Actor("alice", ("support",), "acme")
MIA = Actor("mia", ("support", "manager"), "acme")
SAM = Actor("sam", ("support", "manager"), "acme")
BOB = Actor("bob", ("support",), "globex")
TINA = Actor("tina", ("tenant-admin", "manager"), "acme")
GARY = Actor("gary", ("tenant-admin", "manager"), "globex")
ROOT = Actor("root", ("admin", "manager"))


def authorize(actor: Actor, request: Any) -> bool | GovernanceScope:
    if "tenant-admin" in actor.roles:
        return GovernanceScope(tenants={actor.tenant_ref})
    return "admin" in actor.roles


@tool(kind="action", roles=["support"])
def refund(order_id: int) -> str:
    """Refund an order."""
    return f"refunded {order_id}"


@tool(kind="action", roles=["support"], approver_roles=["manager"])
def credit(amount: int) -> str:
    """Issue store credit."""
    return f"credited {amount}"


@tool(kind="action", roles=["support"], approver_roles=["manager"], self_approval=True)
def small_credit(amount: int) -> str:
    """Issue a small store credit."""
    return f"credited {amount}"


def script(request: ModelRequest, turn: int) -> ScriptedTurn:
    if turn:
        return ScriptedTurn(text="Done.")
    text = next(m.content for m in reversed(request.messages) if m.role == "user")
    name = text.split()[0]  # "refund …", "credit …", "small_credit …"
    arguments = {"order_id": 1} if name == "refund" else {"amount": 5}
    return ScriptedTurn(tool_calls=[ToolCallRequest(name, arguments)])


def config() -> AgentConfig:
    return AgentConfig(
        model=FakeModel(script),
        tools=[refund, credit, small_credit],
        governance_authorize=authorize,
        actor_resolver=HeaderActorResolver(),
    )


@dataclass(frozen=True)
class Parked:
    run: str
    thread: str
    call: str


World = dict[str, Parked]  # requester id -> their parked run


async def build(service: AgentService) -> World:
    world: World = {}
    for actor, message in ((ALICE, "refund order 1"), (MIA, "credit 5"), (SAM, "small_credit 5"), (BOB, "refund 1")):
        started = await service.chat(actor, message)
        frame = await wait_for_tool_status(service, started.run_id, caller=actor)
        world[actor.id] = Parked(started.run_id, started.thread_id, frame.tool_call_id)
    return world


# -- the table -------------------------------------------------------------------------------------

CASES: list[tuple[Actor, str, str | None, str]] = [
    # threads and runs of others: ownership, widened only by the grant, inside its tenants
    (BOB, "get_thread", "alice", FORBIDDEN),
    (TINA, "get_thread", "alice", OK),
    (TINA, "get_thread", "bob", FORBIDDEN),
    (GARY, "get_thread", "alice", FORBIDDEN),
    (ROOT, "get_thread", "bob", OK),
    (TINA, "rename_thread", "alice", OK),
    (TINA, "rename_thread", "bob", FORBIDDEN),
    (TINA, "stream", "alice", OK),
    (TINA, "stream", "bob", FORBIDDEN),
    (GARY, "stream", "alice", FORBIDDEN),
    (TINA, "cancel", "bob", FORBIDDEN),
    (ROOT, "cancel", "bob", OK),
    (TINA, "get_thread", "nobody", NOT_FOUND),
    # decisions
    (TINA, "approve", "alice", OK),
    (TINA, "approve", "bob", FORBIDDEN),
    (GARY, "approve", "alice", FORBIDDEN),
    (TINA, "reject", "bob", FORBIDDEN),
    (ROOT, "approve", "bob", OK),
    # four eyes
    (MIA, "approve", "mia", FORBIDDEN),  # holds the approver role, but it is her own call
    (MIA, "reject", "mia", OK),  # rejecting one's own stays allowed
    (TINA, "approve", "mia", OK),  # a second person with the role, covered by the grant
    (ALICE, "approve", "mia", FORBIDDEN),  # neither hers nor an admin
    (SAM, "approve", "sam", OK),  # the tool allows self_approval
    (GARY, "approve", "mia", FORBIDDEN),  # the role, but another tenant
    # governance views
    (TINA, "inspect", "alice", OK),
    (TINA, "inspect", "bob", NOT_FOUND),
    (ROOT, "inspect", "bob", OK),
    (ALICE, "inspect", "alice", FORBIDDEN),  # not an admin at all: the gate refuses
    (TINA, "governance_thread", "bob", NOT_FOUND),
    (GARY, "governance_thread", "bob", OK),
    (TINA, "inbox", "alice", PRESENT),
    (TINA, "inbox", "bob", ABSENT),
    (GARY, "inbox", "alice", ABSENT),
    (ROOT, "inbox", "bob", PRESENT),
    (TINA, "runs_list", "bob", ABSENT),
    (TINA, "runs_list", "alice", PRESENT),
    (ROOT, "runs_list", "bob", PRESENT),
    # prices are every tenant's: a global grant only
    (TINA, "set_price", None, FORBIDDEN),
    (ROOT, "set_price", None, OK),
]


def _ids(case: tuple[Actor, str, str | None, str]) -> str:
    who, op, target, expected = case
    return f"{who.id}-{op}-{target}-{expected}".replace(" ", "_")


# -- through the service ---------------------------------------------------------------------------


async def _drain(service: AgentService, caller: Caller, run_id: str) -> None:
    events = await service.subscribe(caller, run_id)
    await events.aclose()  # type: ignore[attr-defined]


def _queries(service: AgentService) -> Any:
    assert service.governance_queries is not None
    return service.governance_queries


async def _scope(service: AgentService, caller: Caller) -> GovernanceScope | None:
    return scope_of(await service.governance_grant(caller))


async def _by_service(service: AgentService, caller: Caller, op: str, p: Parked) -> Any:
    """What a Python caller does for `op`; returns the rows of a list view."""
    if op == "get_thread":
        return await service.get_thread(caller, p.thread)
    if op == "rename_thread":
        return await service.rename_thread(caller, p.thread, "renamed")
    if op == "stream":
        return await _drain(service, caller, p.run)
    if op == "cancel":
        return await service.cancel(caller, p.run)
    if op == "approve":
        return await service.approve(caller, p.run, p.call)
    if op == "reject":
        return await service.reject(caller, p.run, p.call, reason="no")
    if op == "inspect":
        scope = await _scope(service, caller)
        found = await inspect_run(service.store, _queries(service), p.run, scope=scope)
        if found is None:
            raise NotFoundError("run not found")
        return found
    if op == "governance_thread":
        detail = await _queries(service).thread_detail(p.thread, scope=await _scope(service, caller))
        if detail is None:
            raise NotFoundError("thread not found")
        return detail
    if op == "inbox":
        return [a.run_id for a in await service.pending_approvals(caller)]
    if op == "runs_list":
        page = await _queries(service).list_runs(RunQuery(), scope=await _scope(service, caller))
        return [r.run_id for r in page.runs]
    if op == "set_price":
        await service.global_grant(caller)
        assert service.pricing is not None
        return await set_price(
            service.pricing,
            service.audit,
            ModelPrice(model_id="m", input_price_per_1m=1, output_price_per_1m=2),
            actor_ref=caller.actor.id,
        )
    raise AssertionError(op)


NOBODY = Parked("zz-run", "zz-thread", "zz-call")


@pytest.mark.parametrize("case", CASES, ids=_ids)
async def test_through_the_service(case: tuple[Actor, str, str | None, str]) -> None:
    who, op, target, expected = case
    async with AgentService.from_config(config()) as service:
        world = await build(service)
        parked = world.get(target or "", NOBODY)
        caller = Caller(who)
        if expected in (PRESENT, ABSENT):
            rows = await _by_service(service, caller, op, parked)
            assert (parked.run in rows) is (expected == PRESENT)
        elif expected == FORBIDDEN:
            with pytest.raises(ForbiddenError):
                await _by_service(service, caller, op, parked)
        elif expected == NOT_FOUND:
            with pytest.raises(NotFoundError):
                await _by_service(service, caller, op, parked)
        else:
            await _by_service(service, caller, op, parked)


# -- over HTTP -------------------------------------------------------------------------------------


def _headers(actor: Actor) -> dict[str, str]:
    headers = {"x-actor-id": actor.id, "x-actor-role": ",".join(actor.roles)}
    if actor.tenant_ref:
        headers["x-tenant-ref"] = actor.tenant_ref
    return headers


Request = Callable[[httpx2.AsyncClient, Parked, dict[str, str]], Awaitable[httpx2.Response]]


def _http(op: str, p: Parked) -> tuple[str, str, dict[str, Any]]:
    """(method, path under /agent, request kwargs) of `op`."""
    decision = {"runId": p.run, "toolCallId": p.call}
    return {
        "get_thread": ("GET", f"/threads/{p.thread}", {}),
        "rename_thread": ("PATCH", f"/threads/{p.thread}", {"json": {"title": "renamed"}}),
        "stream": ("GET", f"/chat/{p.run}/stream", {}),
        "cancel": ("POST", f"/chat/{p.run}/cancel", {}),
        "approve": ("POST", "/tool-call/approve", {"json": decision}),
        "reject": ("POST", "/tool-call/reject", {"json": {**decision, "reason": "no"}}),
        "inspect": ("GET", f"/governance/runs/{p.run}/inspect", {}),
        "governance_thread": ("GET", f"/governance/threads/{p.thread}", {}),
        "inbox": ("GET", "/governance/approvals/pending", {}),
        "runs_list": ("GET", "/governance/runs", {}),
        "set_price": (
            "POST",
            "/governance/pricing",
            {"json": {"modelId": "m", "inputPricePer1m": 1, "outputPricePer1m": 2}},
        ),
    }[op]


@asynccontextmanager
async def _served() -> AsyncIterator[tuple[httpx2.AsyncClient, World]]:
    app = create_app(config())
    async with serve(app) as url, httpx2.AsyncClient(base_url=url + "/agent") as http:
        assert (await http.get("/threads", headers=_headers(ALICE))).status_code == 200  # served: lifespan done
        yield http, await build(app.state.agent_service)


@pytest.mark.parametrize("case", CASES, ids=_ids)
async def test_over_http(case: tuple[Actor, str, str | None, str]) -> None:
    who, op, target, expected = case
    async with _served() as (http, world):
        parked = world.get(target or "", NOBODY)
        method, path, kwargs = _http(op, parked)
        async with http.stream(method, path, headers=_headers(who), **kwargs) as response:
            streaming = response.headers.get("content-type", "").startswith("text/event-stream")
            body = None if streaming else (await response.aread(), response.json())[1]
        status = response.status_code
        if expected in (PRESENT, ABSENT):
            assert status == 200, body
            runs = body["runs"] if isinstance(body, dict) else body
            assert (parked.run in [r["runId"] for r in runs]) is (expected == PRESENT)
        else:
            want = {OK: 200, FORBIDDEN: 403, NOT_FOUND: 404}[expected]
            assert status == want, (status, body)
            if status >= 400:
                assert isinstance(body, dict) and isinstance(body.get("error"), str)
