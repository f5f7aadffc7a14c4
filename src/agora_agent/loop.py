"""`run_agent_loop`: one governed turn — model → tools → approval → model … (REFERENCE ARCH-LOOP-01..18).

The loop is framework-agnostic: it talks to small protocols (model, store, registry, policy, quota,
pricing) and to a `LoopHooks` object, the only difference between running in-process and running
durably. Every side effect goes through `hooks.step(name, fn)` with the stable names of DUR-04, so a
durable replay never repeats one.

Where DESIGN §3 decides differently from the reference, this loop follows DESIGN:
- the run row is written by the runner before `start()` returns (a client can stream or approve at once);
- quota is reserved before each model call and settled after (`quota:reserve:<i>` / `quota:settle:<i>`);
- an action the actor may not invoke fails before it parks; the approval row is bound to the hash of
  the validated arguments and the requester, and execution re-checks both;
- tool calls move `started → executed|failed`, carry an idempotency key and `execution_ms`, and their
  results are persisted and replayed in history.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from typing import Any, Literal, Protocol, TypeVar

from agora_agent.actors import Actor
from agora_agent.agents import AgentDefinition, Persona, derive_title, effective_allow_list, resolve_system_prompt
from agora_agent.errors import ToolError
from agora_agent.governance.policy import RolesPolicy
from agora_agent.governance.pricing import ModelPrice, PricingStore, estimate_cost
from agora_agent.governance.quota import QuotaStore, Reservation, period_key
from agora_agent.messages import (
    Attachment,
    ModelMessage,
    ModelRequest,
    ModelTurn,
    ToolCall,
    ToolDefinition,
    ToolResult,
)
from agora_agent.models.base import ModelProvider
from agora_agent.stores.base import AgentStore, ApprovalRecord, ToolCallPatch, ToolCallRecord, UsageRecord
from agora_agent.streaming.frames import ComponentFrame, TextFrame, ToolFrame, ToolFrameStatus
from agora_agent.streaming.sink import SinkWriter
from agora_agent.tools.context import ToolContext
from agora_agent.tools.registry import AuthorizedCall, ToolRegistry
from agora_agent.tools.retry import TransientRetry, run_with_retry
from agora_agent.tools.spec import DescribeContext

__all__ = [
    "ApprovalDecision",
    "LoopDeps",
    "LoopHooks",
    "LoopResult",
    "PendingApproval",
    "RunInput",
    "run_agent_loop",
]

logger = logging.getLogger("agora_agent.loop")
T = TypeVar("T")
Redactor = Callable[[str, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True, kw_only=True, slots=True)
class RunInput:
    """One run's input. `day` (UTC `YYYY-MM-DD`) is stamped once by the caller (QUOTA-06)."""

    run_id: str
    thread_id: str
    actor: Actor
    user_text: str
    day: str
    agent_name: str = "default"
    persona_id: str | None = None
    page_context: Mapping[str, Any] | None = None
    attachments: tuple[Attachment, ...] = ()
    parent_run_id: str | None = None
    depth: int = 0


@dataclass(kw_only=True)
class LoopDeps:
    """What the loop runs against, built per agent by the service."""

    model: ModelProvider
    store: AgentStore
    registry: ToolRegistry
    policy: RolesPolicy
    agent: AgentDefinition
    quota: QuotaStore | None = None
    pricing: PricingStore | None = None
    retry: TransientRetry | None = None
    max_steps: int = 8
    redactor: Redactor | None = None
    max_delegation_depth: int = 3


@dataclass(frozen=True, kw_only=True, slots=True)
class PendingApproval:
    """An approval the loop waits for."""

    run_id: str
    tool_call_id: str
    tool_name: str
    deadline: datetime | None


@dataclass(frozen=True, kw_only=True, slots=True)
class ApprovalDecision:
    status: Literal["approved", "rejected", "expired"]
    decided_by: str | None = None
    reason: str | None = None


class LoopHooks(Protocol):
    """The seam between the loop and its runner (ARCH-12)."""

    async def step(self, name: str, fn: Callable[[], Awaitable[T]]) -> T: ...

    async def await_approval(self, pending: PendingApproval) -> ApprovalDecision: ...

    async def open_sink(self) -> SinkWriter: ...

    async def run_agent(self, agent_name: str, task: str) -> str: ...


@dataclass(kw_only=True)
class LoopResult:
    text: str
    steps: int
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None


@dataclass(kw_only=True)
class _RunState:
    deps: LoopDeps
    run: RunInput
    hooks: LoopHooks
    writer: SinkWriter
    persona: Persona | None
    allow_list: frozenset[str] | None
    prices: dict[str, ModelPrice] = field(default_factory=dict)


def _now() -> datetime:
    return datetime.now(UTC)


def serialize_output(output: Any) -> str:
    """Tool output as the model sees it: strings as-is, everything else as JSON (TOOL-04)."""
    if isinstance(output, str):
        return output
    return json.dumps(output, default=str, ensure_ascii=False)


def _to_jsonable(value: Any) -> Any:
    """Make a tool's output storable as JSON (pydantic models, dataclasses, dates …)."""
    if value is None or isinstance(value, str | int | float | bool):
        return value
    return json.loads(json.dumps(value, default=_json_default))


def _json_default(value: Any) -> Any:
    dump = getattr(value, "model_dump", None)
    if callable(dump):
        return dump(mode="json")
    if hasattr(value, "__dataclass_fields__"):
        return {k: getattr(value, k) for k in value.__dataclass_fields__}
    return str(value)


async def run_agent_loop(deps: LoopDeps, run: RunInput, hooks: LoopHooks) -> LoopResult:
    """Drive one run to completion. Raises on failure; the runner records `failed`/`cancelled`.

    No try/finally around the whole loop (ARCH-LOOP-17): the sink is ended by the caller on every
    outcome, so a durable suspension can pass through untouched.
    """
    agent = deps.agent
    store = deps.store
    persona = agent.persona(run.persona_id)
    system = await resolve_system_prompt(agent, persona, run.actor, run.page_context)

    if deps.quota is not None:
        quota = deps.quota
        await hooks.step("quota:check", lambda: quota.check(run.actor, period_key(quota.budget, run.day)))

    await hooks.step(
        "persist:user",
        lambda: store.append_message(
            thread_id=run.thread_id,
            role="user",
            content=run.user_text,
            run_id=run.run_id,
            persona=persona.id if persona else None,
            attachments=list(run.attachments) or None,
        ),
    )
    thread_title, history = await hooks.step("load:thread", lambda: _load_history(store, run.thread_id))
    writer = await hooks.open_sink()
    state = _RunState(
        deps=deps,
        run=run,
        hooks=hooks,
        writer=writer,
        persona=persona,
        allow_list=effective_allow_list(agent, persona),
    )
    if deps.pricing is not None:
        pricing = deps.pricing
        price_list = await hooks.step("pricing:list", pricing.list_current_prices)
        state.prices = {p.model_id: p for p in price_list}

    messages = list(history)
    last_text = ""
    steps = 0
    total_in = total_out = 0
    known_cost: float | None = None
    for i in range(deps.max_steps):
        tools = await _offered_tools(state)
        request = ModelRequest(system=system, messages=tuple(messages), tools=tuple(tools), model_id=agent.model_id)
        turn = await _model_step(state, i, request)
        steps += 1
        last_text = turn.text
        total_in += turn.usage.input_tokens
        total_out += turn.usage.output_tokens
        model_id = turn.model_id or agent.model_id or deps.model.model_id or "unknown"
        cost = _step_cost(state, turn, model_id)
        if cost is not None:
            known_cost = (known_cost or 0.0) + cost
        assistant = await hooks.step(
            f"persist:assistant:{i}",
            partial(
                store.append_message,
                thread_id=run.thread_id,
                role="assistant",
                content=turn.text,
                run_id=run.run_id,
                persona=persona.id if persona else None,
                tool_calls=list(turn.tool_calls) or None,
                usage=_usage_json(turn, cost),
            ),
        )
        await hooks.step(f"persist:usage:{i}", partial(_record_usage, state, turn, model_id, assistant.id))
        messages.append(ModelMessage(role="assistant", content=turn.text, tool_calls=turn.tool_calls))
        if not turn.tool_calls:
            break
        results = [await _handle_tool_call(state, call, assistant.id) for call in turn.tool_calls]
        messages.append(ModelMessage(role="tool", tool_results=tuple(results)))
    # ARCH-LOOP-18: max_steps exhausted while the model still asks for tools ends the run quietly.

    if thread_title in ("", "New chat"):
        await hooks.step("persist:title", lambda: store.set_title(run.thread_id, derive_title(run.user_text)))
    await hooks.step(
        "persist:run:end",
        lambda: store.record_run_end(
            run.run_id,
            status="completed",
            step_count=steps,
            input_tokens=total_in,
            output_tokens=total_out,
            cost_usd=known_cost,
        ),
    )
    return LoopResult(text=last_text, steps=steps, input_tokens=total_in, output_tokens=total_out, cost_usd=known_cost)


async def _load_history(store: AgentStore, thread_id: str) -> tuple[str, list[ModelMessage]]:
    """The thread as model messages, each assistant tool call followed by its persisted result."""
    thread = await store.get_thread(thread_id)
    records = await store.list_messages(thread_id)
    calls = await store.list_tool_calls(thread_id=thread_id)
    by_id = {(c.run_id, c.id): c for c in calls}
    history: list[ModelMessage] = []
    for m in records:
        if m.role == "user":
            history.append(ModelMessage(role="user", content=m.content, attachments=tuple(m.attachments or ())))
            continue
        tool_calls = tuple(m.tool_calls or ())
        history.append(ModelMessage(role="assistant", content=m.content, tool_calls=tool_calls))
        if tool_calls:
            results = []
            for call in tool_calls:
                row = by_id.get((m.run_id or "", call.id))
                results.append(_result_from_row(call, row))
            history.append(ModelMessage(role="tool", tool_results=tuple(results)))
    return (thread.title if thread else ""), history


def _result_from_row(call: ToolCall, row: ToolCallRecord | None) -> ToolResult:
    if row is None or row.status in ("started", "pending_approval", "unknown_after_crash"):
        return ToolResult(tool_call_id=call.id, name=call.name, content="no result was recorded", is_error=True)
    if row.status in ("rejected", "expired"):
        payload = {"rejected": True, "reason": row.error or "rejected by user"}
        return ToolResult(tool_call_id=call.id, name=call.name, content=serialize_output(payload), is_error=True)
    if row.error is not None:
        return ToolResult(tool_call_id=call.id, name=call.name, content=row.error, is_error=True)
    return ToolResult(tool_call_id=call.id, name=call.name, content=serialize_output(row.output))


async def _offered_tools(state: _RunState) -> list[ToolDefinition]:
    deps, run = state.deps, state.run
    offered = await deps.registry.offer(
        run.actor,
        policy=deps.policy,
        allow_list=state.allow_list,
        describe_ctx=DescribeContext(actor=run.actor, thread_id=run.thread_id, agent=deps.agent.name),
    )
    own = deps.agent.delegation_names()
    return [t for t in offered if t.kind != "agent" or t.name in own]


async def _model_step(state: _RunState, i: int, request: ModelRequest) -> ModelTurn:
    deps, run, hooks, writer = state.deps, state.run, state.hooks, state.writer
    reservation: Reservation | None = None
    if deps.quota is not None:
        quota = deps.quota
        budget = quota.budget
        reserve_usd = budget.reserve_usd if (budget.usd_per_actor or budget.usd_per_tenant) else 0.0
        reservation = await hooks.step(
            f"quota:reserve:{i}",
            lambda: quota.reserve(
                run.actor,
                period_key(budget, run.day),
                reservation_id=f"{run.run_id}:{i}",
                tokens=budget.reserve_tokens,
                usd=reserve_usd,
            ),
        )

    async def on_text(delta: str) -> None:
        if delta:
            await writer.write(TextFrame(delta=delta))

    try:
        turn = await hooks.step(f"llm:{i}", lambda: deps.model.run_turn(request, on_text))
    except BaseException:
        if reservation is not None and deps.quota is not None:
            await deps.quota.release(reservation)
        raise
    if reservation is not None and deps.quota is not None:
        quota = deps.quota
        model_id = turn.model_id or deps.agent.model_id or deps.model.model_id or "unknown"
        usd = _step_cost(state, turn, model_id) or 0.0
        held = reservation
        await hooks.step(
            f"quota:settle:{i}",
            lambda: quota.settle(held, tokens=turn.usage.total_tokens, usd=usd),
        )
    return turn


def _step_cost(state: _RunState, turn: ModelTurn, model_id: str) -> float | None:
    """COST-01: provider-reported cost, else an estimate from the current price, else None (never 0)."""
    if turn.cost_usd is not None:
        return turn.cost_usd
    price = state.prices.get(model_id)
    return estimate_cost(turn.usage, price) if price is not None else None


def _usage_json(turn: ModelTurn, cost: float | None) -> dict[str, Any]:
    usage: dict[str, Any] = {"inputTokens": turn.usage.input_tokens, "outputTokens": turn.usage.output_tokens}
    if turn.usage.cache_read_tokens is not None:
        usage["cacheReadTokens"] = turn.usage.cache_read_tokens
    if turn.usage.cache_write_tokens is not None:
        usage["cacheWriteTokens"] = turn.usage.cache_write_tokens
    if turn.usage.reasoning_tokens is not None:
        usage["reasoningTokens"] = turn.usage.reasoning_tokens
    usage["costUsd"] = cost
    return usage


async def _record_usage(state: _RunState, turn: ModelTurn, model_id: str, message_id: str) -> None:
    run = state.run
    await state.deps.store.record_usage(
        UsageRecord(
            id=f"{run.run_id}:{message_id}",
            thread_id=run.thread_id,
            run_id=run.run_id,
            message_id=message_id,
            actor_ref=run.actor.id,
            tenant_ref=run.actor.tenant_ref,
            model_id=model_id,
            purpose="chat",
            input_tokens=turn.usage.input_tokens,
            output_tokens=turn.usage.output_tokens,
            cache_read_tokens=turn.usage.cache_read_tokens,
            cache_write_tokens=turn.usage.cache_write_tokens,
            cost_usd=turn.cost_usd,  # COST-05: the ledger keeps provider-reported cost only
            created_at=_now(),
        )
    )


# --- tool calls ---------------------------------------------------------------------------------


def _context(state: _RunState, call: ToolCall) -> ToolContext:
    run, writer = state.run, state.writer

    async def emit(name: str, data: Any) -> None:
        await writer.write(ComponentFrame(name=name, data=_to_jsonable(data)))

    return ToolContext(
        actor=run.actor,
        thread_id=run.thread_id,
        run_id=run.run_id,
        tool_call_id=call.id,
        agent=state.deps.agent.name,
        persona=state.persona.id if state.persona else None,
        page_context=run.page_context,
        _emitter=emit,
    )


def _redact(state: _RunState, name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    plain = dict(args)
    redactor = state.deps.redactor
    return redactor(name, plain) if redactor is not None else plain


async def _frame(
    state: _RunState,
    call: ToolCall,
    kind: str,
    status: ToolFrameStatus,
    *,
    input: Any = None,
    output: Any = None,
    error: str | None = None,
) -> None:
    await state.writer.write(
        ToolFrame(
            tool_call_id=call.id, name=call.name, kind=kind, status=status, input=input, output=output, error=error
        )
    )


async def _handle_tool_call(state: _RunState, call: ToolCall, message_id: str) -> ToolResult:
    deps, run, hooks = state.deps, state.run, state.hooks
    spec = deps.registry.get(call.name)
    kind = spec.kind if spec is not None else "read"  # TOOL-32: unknown names are handled as reads
    ctx = _context(state, call)
    allow = state.allow_list
    if kind == "agent":
        own = deps.agent.delegation_names()
        allow = own if allow is None else (allow & own)

    def base_record(status: str, **extra: Any) -> ToolCallRecord:
        return ToolCallRecord(
            id=call.id,
            run_id=run.run_id,
            thread_id=run.thread_id,
            message_id=message_id,
            tool_name=call.name,
            tool_type=kind,
            input=_redact(state, call.name, call.input),
            status=status,  # type: ignore[arg-type]
            actor_ref=run.actor.id,
            tenant_ref=run.actor.tenant_ref,
            idempotency_key=ctx.idempotency_key,
            created_at=_now(),
            **extra,
        )

    # Authorize first, for every kind: an action the actor may not invoke never parks (DESIGN §3).
    try:
        authorized = await deps.registry.authorize(call.name, call.input, ctx=ctx, policy=deps.policy, allow_list=allow)
    except ToolError as exc:
        message = str(exc)
        refused = base_record("failed", error=message, policy_decision=f"refused: {type(exc).__name__}")
        await hooks.step(f"persist:toolfail:{call.id}", partial(deps.store.record_tool_call, refused))
        await _frame(state, call, kind, "failed", input=call.input, error=message)
        return ToolResult(tool_call_id=call.id, name=call.name, content=message, is_error=True)

    if kind == "agent":
        return await _delegate(state, call, authorized, base_record)
    if kind == "action":
        return await _run_action(state, call, authorized, ctx, base_record)
    await hooks.step(
        f"persist:toolcall:{call.id}",
        lambda: deps.store.record_tool_call(base_record("started", policy_decision="allowed")),
    )
    await _frame(state, call, kind, "started", input=authorized.args)
    return await _execute(state, call, kind, authorized, ctx, decided_by=None)


async def _execute(
    state: _RunState,
    call: ToolCall,
    kind: str,
    authorized: AuthorizedCall,
    ctx: ToolContext,
    *,
    decided_by: str | None,
) -> ToolResult:
    deps, run, hooks = state.deps, state.run, state.hooks
    started = time.perf_counter()
    outcome: dict[str, Any] = {}

    async def attempt() -> Any:
        return await deps.registry.execute(authorized, ctx)

    def on_retry(attempt_no: int, error: BaseException) -> None:
        # RETRY-06: each transient failure that will be retried is reported (never the final one).
        logger.warning(
            "tool.retry run=%s tool=%s call=%s attempt=%d: %s", run.run_id, call.name, call.id, attempt_no, error
        )

    async def tool_step() -> dict[str, Any]:
        # Errors become data inside the step, so a durable replay memoizes failures too.
        try:
            output = await run_with_retry(attempt, deps.retry, on_retry=on_retry)
        except ToolError as exc:
            return {"error": str(exc)}
        except Exception as exc:
            return {"error": f'Tool "{call.name}" failed: {exc}' if str(exc) else f'Tool "{call.name}" failed: {exc!r}'}
        return {"output": _to_jsonable(output)}

    try:
        outcome = await hooks.step(f"tool:{call.id}", tool_step)
    except BaseException:
        # Cancelled mid-tool: leave an honest audit row, then let the cancellation through.
        await deps.store.update_tool_call(
            run.run_id, call.id, ToolCallPatch(status="failed", error="run cancelled during execution")
        )
        raise
    elapsed_ms = int((time.perf_counter() - started) * 1000)
    if "error" in outcome:
        error = str(outcome["error"])
        await hooks.step(
            f"persist:toolfail:{call.id}",
            lambda: deps.store.update_tool_call(
                run.run_id,
                call.id,
                ToolCallPatch(status="failed", error=error, execution_ms=elapsed_ms, decided_by=decided_by),
            ),
        )
        await _frame(state, call, kind, "failed", error=error)
        return ToolResult(tool_call_id=call.id, name=call.name, content=error, is_error=True)
    output = outcome["output"]
    await hooks.step(
        f"persist:toolexec:{call.id}",
        lambda: deps.store.update_tool_call(
            run.run_id,
            call.id,
            ToolCallPatch(
                status="executed",
                output=output,
                execution_ms=elapsed_ms,
                executed_by_ref=run.actor.id,
                decided_by=decided_by,
            ),
        ),
    )
    await _frame(state, call, kind, "executed", output=output)
    return ToolResult(tool_call_id=call.id, name=call.name, content=serialize_output(output))


async def _run_action(
    state: _RunState,
    call: ToolCall,
    authorized: AuthorizedCall,
    ctx: ToolContext,
    base_record: Callable[..., ToolCallRecord],
) -> ToolResult:
    deps, run, hooks = state.deps, state.run, state.hooks
    spec = authorized.spec
    deadline = _now() + spec.approval_ttl if spec.approval_ttl is not None else None

    async def park() -> None:
        # Tool-call row first, then the approval: once the `tool` frame is out, a decision can land.
        await deps.store.record_tool_call(base_record("pending_approval", policy_decision="allowed"))
        await deps.store.create_approval(
            ApprovalRecord(
                run_id=run.run_id,
                tool_call_id=call.id,
                thread_id=run.thread_id,
                tool_name=call.name,
                args_hash=authorized.args_hash,
                requested_by=run.actor.id,
                approver_roles=spec.approver_roles,
                deadline=deadline,
                created_at=_now(),
            )
        )

    await hooks.step(f"persist:toolcall:{call.id}", park)
    await _frame(state, call, "action", "pending_approval", input=authorized.args)
    decision = await hooks.await_approval(
        PendingApproval(run_id=run.run_id, tool_call_id=call.id, tool_name=call.name, deadline=deadline)
    )
    if decision.status != "approved":
        reason = decision.reason or ("approval expired" if decision.status == "expired" else "rejected by user")
        status: Literal["rejected", "expired"] = "expired" if decision.status == "expired" else "rejected"
        await hooks.step(
            f"persist:toolreject:{call.id}",
            lambda: deps.store.update_tool_call(
                run.run_id, call.id, ToolCallPatch(status=status, error=reason, decided_by=decision.decided_by)
            ),
        )
        await _frame(state, call, "action", status, error=reason)
        payload = {"rejected": True, "reason": reason}
        return ToolResult(tool_call_id=call.id, name=call.name, content=serialize_output(payload), is_error=True)

    # Approved: re-check every filter (roles may have changed while parked) and the argument hash.
    try:
        recheck = await deps.registry.authorize(
            call.name, call.input, ctx=ctx, policy=deps.policy, allow_list=state.allow_list
        )
        if recheck.args_hash != authorized.args_hash:
            raise ToolError(call.name, f'Tool "{call.name}": arguments changed after approval; refusing to execute')
    except ToolError as exc:
        message = str(exc)
        await hooks.step(
            f"persist:toolfail:{call.id}",
            lambda: deps.store.update_tool_call(
                run.run_id, call.id, ToolCallPatch(status="failed", error=message, decided_by=decision.decided_by)
            ),
        )
        await _frame(state, call, "action", "failed", error=message)
        return ToolResult(tool_call_id=call.id, name=call.name, content=message, is_error=True)
    await _frame(state, call, "action", "approved")
    return await _execute(state, call, "action", recheck, ctx, decided_by=decision.decided_by)


async def _delegate(
    state: _RunState,
    call: ToolCall,
    authorized: AuthorizedCall,
    base_record: Callable[..., ToolCallRecord],
) -> ToolResult:
    deps, run, hooks = state.deps, state.run, state.hooks
    target = authorized.spec.target_agent or ""
    task = str(authorized.args.get("task", ""))
    if run.depth >= deps.max_delegation_depth:
        message = f'Tool "{call.name}": delegation depth limit of {deps.max_delegation_depth} reached; answer directly'
        await hooks.step(
            f"persist:toolfail:{call.id}",
            lambda: deps.store.record_tool_call(base_record("failed", error=message, policy_decision="depth_limit")),
        )
        await _frame(state, call, "agent", "failed", error=message)
        return ToolResult(tool_call_id=call.id, name=call.name, content=message, is_error=True)
    await hooks.step(
        f"persist:toolcall:{call.id}",
        lambda: deps.store.record_tool_call(base_record("started", policy_decision="allowed")),
    )
    await _frame(state, call, "agent", "started", input=authorized.args)
    started = time.perf_counter()
    try:
        text = await hooks.run_agent(target, task)
    except Exception as exc:
        message = f'Delegation to "{target}" failed: {exc}'
        await hooks.step(
            f"persist:toolfail:{call.id}",
            lambda: deps.store.update_tool_call(run.run_id, call.id, ToolCallPatch(status="failed", error=message)),
        )
        await _frame(state, call, "agent", "failed", error=message)
        return ToolResult(tool_call_id=call.id, name=call.name, content=message, is_error=True)
    output = {"text": text}
    elapsed_ms = int((time.perf_counter() - started) * 1000)
    await hooks.step(
        f"persist:toolexec:{call.id}",
        lambda: deps.store.update_tool_call(
            run.run_id,
            call.id,
            ToolCallPatch(status="executed", output=output, execution_ms=elapsed_ms, executed_by_ref=run.actor.id),
        ),
    )
    await _frame(state, call, "agent", "executed", output=output)
    return ToolResult(tool_call_id=call.id, name=call.name, content=serialize_output(output))


def approval_deadline_passed(approval: ApprovalRecord, now: datetime | None = None) -> bool:
    return approval.deadline is not None and (now or _now()) >= approval.deadline
