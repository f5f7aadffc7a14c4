"""Tool calls inside a turn: authorize every call first, then run it by kind (read, action, agent).

An action the actor may not invoke fails before it parks; an approval is bound to the hash of the
validated arguments and the requester, and execution re-checks both. Each call's audit row moves
`started → executed|failed` (or `pending_approval → executed|rejected|expired|failed`).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from collections.abc import Awaitable, Callable, Mapping
from functools import partial
from typing import Any, Literal

from agora_agent.errors import ConflictError, ToolError
from agora_agent.genui.present import run_present
from agora_agent.genui.session import UiSession
from agora_agent.loop._state import RunState, now_utc, serialize_output, to_jsonable
from agora_agent.loop.interface import ApprovalDecision, PendingApproval, effect, handed_over
from agora_agent.messages import ToolCall, ToolResult
from agora_agent.records import ApprovalRecord, ToolCallPatch, ToolCallRecord
from agora_agent.stores.base import AgentStore
from agora_agent.streaming.frames import ComponentFrame, ToolFrame, ToolFrameStatus
from agora_agent.tools.context import ToolContext
from agora_agent.tools.registry import AuthorizedCall
from agora_agent.tools.retry import run_with_retry

__all__ = ["handle_tool_call"]

logger = logging.getLogger("agora_agent.loop")


def _context(state: RunState, call: ToolCall) -> ToolContext:
    run, writer = state.run, state.writer

    async def write(name: str, data: Any, ui_id: str | None) -> None:
        await writer.write(ComponentFrame(name=name, data=to_jsonable(data), id=ui_id))

    session = UiSession(write=write, registry=state.deps.components, actor=run.actor, capabilities=run.ui_capabilities)
    return ToolContext(
        actor=run.actor,
        thread_id=run.thread_id,
        run_id=run.run_id,
        tool_call_id=call.id,
        agent=state.deps.agent.name,
        persona=state.persona.id if state.persona else None,
        page_context=run.page_context,
        ui_capabilities=run.ui_capabilities,
        _ui=session,
        _retrieved=partial(state.deps.telemetry.retrieved, run, state.deps.agent.name),
    )


def _redact(state: RunState, name: str, args: Mapping[str, Any]) -> dict[str, Any]:
    plain = dict(args)
    redactor = state.deps.redactor
    return redactor(name, plain) if redactor is not None else plain


async def _frame(
    state: RunState,
    call: ToolCall,
    kind: str,
    status: ToolFrameStatus,
    *,
    input: Any = None,
    output: Any = None,
    error: str | None = None,
) -> None:
    if input is not None and (type(input) is dict or isinstance(input, Mapping)):
        input = _redact(state, call.name, input)  # the stream shows arguments through the redactor, like the audit row
    await state.writer.write(
        ToolFrame(
            tool_call_id=call.id, name=call.name, kind=kind, status=status, input=input, output=output, error=error
        )
    )
    # Every status change streams one frame, so this is also where the tool_call.status event fires.
    telemetry = state.deps.telemetry
    if telemetry.wants_tool_status(status):
        await telemetry.tool_status(state.run, state.deps.agent.name, call, kind=kind, status=status, error=error)


async def _failed(state: RunState, call: ToolCall, kind: str, message: str, *, input: Any = None) -> ToolResult:
    """Stream the `failed` frame and hand the model the error; the caller has written the audit row."""
    await _frame(state, call, kind, "failed", input=input, error=message)
    return ToolResult(tool_call_id=call.id, name=call.name, content=message, is_error=True)


async def handle_tool_call(state: RunState, call: ToolCall, message_id: str) -> ToolResult:
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
            created_at=now_utc(),
            **extra,
        )

    # Authorize first, for every kind: an action the actor may not invoke never parks (DESIGN §3).
    try:
        authorized = await deps.registry.authorize(
            call.name, call.input, ctx=ctx, policy=deps.policy, allow_list=allow, memo=state.memo
        )
    except ToolError as exc:
        message = str(exc)
        refused = base_record("failed", error=message, policy_decision=f"refused: {type(exc).__name__}")

        async def refuse() -> None:
            decision = refused.policy_decision or "refused"
            with deps.telemetry.tool_span(run, call, kind=kind, decision=decision, status="failed"):
                await _record_once(deps.store, refused)

        await effect(hooks, f"persist:toolfail:{call.id}", refuse)
        return await _failed(state, call, kind, message, input=call.input)

    if kind == "agent":
        return await _delegate(state, call, authorized, base_record)
    if kind == "action":
        return await _run_action(state, call, authorized, ctx, base_record)
    await effect(
        hooks,
        f"persist:toolcall:{call.id}",
        lambda: _record_once(deps.store, base_record("started", policy_decision="allowed")),
    )
    await _frame(state, call, kind, "started", input=authorized.args)
    return await _execute(state, call, kind, authorized, ctx, decided_by=None)


async def _record_once(store: AgentStore, record: ToolCallRecord, approval: ApprovalRecord | None = None) -> None:
    """Insert the audit row (and its approval). A row of this very call — same run, id, assistant message,
    tool and input — already stored means an earlier attempt of this step committed and only its outcome
    was lost (a durable step re-run after a crash, a unit retried after a dropped connection): nothing is
    written twice, and the step goes on from the stored row (an approval decided meanwhile stands)."""
    try:
        await store.record_tool_call(record, approval)
    except ConflictError:
        stored = await store.get_tool_call(record.run_id, record.id)
        if stored is None or (stored.message_id, stored.tool_name, stored.input) != (
            record.message_id,
            record.tool_name,
            record.input,
        ):
            raise  # another call under the same id: a real conflict


def _tool_step(
    state: RunState, call: ToolCall, authorized: AuthorizedCall, ctx: ToolContext
) -> Callable[[], Awaitable[dict[str, Any]]]:
    """The body of the `tool:<id>` step: run the tool with retry, then present it; errors come back as data."""
    deps, run, hooks = state.deps, state.run, state.hooks
    attempt = partial(deps.registry.execute, authorized, ctx)

    def on_retry(attempt_no: int, error: BaseException) -> None:
        # RETRY-06: each transient failure that will be retried is reported (never the final one).
        logger.warning(
            "tool.retry run=%s tool=%s call=%s attempt=%d: %s", run.run_id, call.name, call.id, attempt_no, error
        )

    session = ctx._ui if isinstance(ctx._ui, UiSession) else None

    async def tool_step() -> dict[str, Any]:
        # Errors become data inside the step, so a durable replay memoizes failures too. The execution
        # time is part of the result: a write redone after a recovery records the real one, not the replay's.
        started = time.perf_counter()
        outcome = await run_tool()
        outcome["ms"] = int((time.perf_counter() - started) * 1000)
        return outcome

    async def run_tool() -> dict[str, Any]:
        attempt_of = getattr(hooks, "tool_attempt", None)  # optional hook (see LoopHooks)
        if attempt_of is not None:
            ctx.attempt = await attempt_of(call.id)
        try:
            output = await run_with_retry(attempt, deps.retry, on_retry=on_retry)
        except Exception as exc:
            if isinstance(exc, ToolError):
                error = str(exc)
            else:
                error = f'Tool "{call.name}" failed: {exc}' if str(exc) else f'Tool "{call.name}" failed: {exc!r}'
            if session is not None:
                await session.abort(error)  # no half-drawn component survives a failed call
            return {"error": error}
        if session is None:
            return {"output": to_jsonable(output)}
        # Presenting runs once, after success and outside the retry: it never re-runs a write.
        tool = deps.registry.runnable(call.name)
        if getattr(tool, "present", None) is not None:
            await run_present(tool, output, ctx, session, on_error=deps.on_presentation_error)
        return {"output": to_jsonable(output), "components": await session.finish() if session.touched() else []}

    return tool_step


async def _execute(
    state: RunState,
    call: ToolCall,
    kind: str,
    authorized: AuthorizedCall,
    ctx: ToolContext,
    *,
    decided_by: str | None,
) -> ToolResult:
    deps, run, hooks = state.deps, state.run, state.hooks
    outcome: dict[str, Any] = {}
    tool_step = _tool_step(state, call, authorized, ctx)
    telemetry = deps.telemetry
    try:
        outcome = await hooks.step(
            f"tool:{call.id}",
            tool_step  # no tracer: no execute_tool span to open around it
            if telemetry.tracer() is None
            else lambda: telemetry.execute_tool(
                run,
                call,
                kind=kind,
                decision="approved" if kind == "action" else "allowed",
                idempotency_key=ctx.idempotency_key,
                execute=tool_step,
            ),
        )
    except BaseException as exc:
        # Cancelled mid-tool: leave an honest audit row, then let the cancellation through (unless the
        # run goes on in another process: the row is its new owner's now).
        if not handed_over(exc):
            await deps.store.update_tool_call(
                run.run_id, call.id, ToolCallPatch(status="failed", error="run cancelled during execution")
            )
        raise
    elapsed_ms = int(outcome.get("ms", 0))
    if "error" in outcome:
        error = str(outcome["error"])
        await effect(
            hooks,
            f"persist:toolfail:{call.id}",
            lambda: deps.store.update_tool_call(
                run.run_id,
                call.id,
                ToolCallPatch(status="failed", error=error, execution_ms=elapsed_ms, decided_by=decided_by),
            ),
        )
        return await _failed(state, call, kind, error)
    output = outcome["output"]
    components = outcome.get("components") or None
    await effect(
        hooks,
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
                components=components,
            ),
        ),
    )
    await _frame(state, call, kind, "executed", output=output)
    return ToolResult(tool_call_id=call.id, name=call.name, content=serialize_output(output))


async def _run_action(
    state: RunState,
    call: ToolCall,
    authorized: AuthorizedCall,
    ctx: ToolContext,
    base_record: Callable[..., ToolCallRecord],
) -> ToolResult:
    deps, run, hooks = state.deps, state.run, state.hooks
    spec = authorized.spec
    deadline = now_utc() + spec.approval_ttl if spec.approval_ttl is not None else None

    async def park() -> None:
        # Tool-call row and approval in one transaction: once the `tool` frame is out, a decision can land.
        await _record_once(
            deps.store,
            base_record("pending_approval", policy_decision="allowed"),
            ApprovalRecord(
                run_id=run.run_id,
                tool_call_id=call.id,
                thread_id=run.thread_id,
                tool_name=call.name,
                args_hash=authorized.args_hash,
                requested_by=run.actor.id,
                approver_roles=spec.approver_roles,
                deadline=deadline,
                created_at=now_utc(),
            ),
        )

    await effect(hooks, f"persist:toolcall:{call.id}", park)
    await _frame(state, call, "action", "pending_approval", input=authorized.args)
    decision = await deps.telemetry.await_approval(
        run,
        deps.agent.name,
        call,
        deadline=deadline,
        wait=lambda: hooks.await_approval(
            PendingApproval(run_id=run.run_id, tool_call_id=call.id, tool_name=call.name, deadline=deadline)
        ),
    )
    if decision.status != "approved":
        return await _not_approved(state, call, decision)

    # Approved: re-check every filter (roles may have changed while parked) and the argument hash,
    # with the requester's identity as resolved at decision time when the runner has it.
    if decision.requester is not None and decision.requester.id == ctx.actor.id:
        ctx = dataclasses.replace(ctx, actor=decision.requester)
    try:
        recheck = await deps.registry.authorize(
            call.name, call.input, ctx=ctx, policy=deps.policy, allow_list=state.allow_list
        )
        if recheck.args_hash != authorized.args_hash:
            raise ToolError(call.name, f'Tool "{call.name}": arguments changed after approval; refusing to execute')
    except ToolError as exc:
        message = str(exc)
        await effect(
            hooks,
            f"persist:toolfail:{call.id}",
            lambda: deps.store.update_tool_call(
                run.run_id, call.id, ToolCallPatch(status="failed", error=message, decided_by=decision.decided_by)
            ),
        )
        return await _failed(state, call, "action", message)
    # The audit row says `started` before the side effect can happen: a crash from here on is recovered
    # as `unknown_after_crash` (the action may or may not have run), never as `expired`.
    await effect(
        hooks,
        f"persist:toolstart:{call.id}",
        lambda: deps.store.update_tool_call(
            run.run_id, call.id, ToolCallPatch(status="started", decided_by=decision.decided_by)
        ),
    )
    await _frame(state, call, "action", "approved")
    return await _execute(state, call, "action", recheck, ctx, decided_by=decision.decided_by)


async def _not_approved(state: RunState, call: ToolCall, decision: ApprovalDecision) -> ToolResult:
    """A rejected or expired action: record it, tell the client, and give the model the reason."""
    deps, run, hooks = state.deps, state.run, state.hooks
    reason = decision.reason or ("approval expired" if decision.status == "expired" else "rejected by user")
    status: Literal["rejected", "expired"] = "expired" if decision.status == "expired" else "rejected"
    await effect(
        hooks,
        f"persist:toolreject:{call.id}",
        lambda: deps.store.update_tool_call(
            run.run_id, call.id, ToolCallPatch(status=status, error=reason, decided_by=decision.decided_by)
        ),
    )
    await _frame(state, call, "action", status, error=reason)
    payload = {"rejected": True, "reason": reason}
    return ToolResult(tool_call_id=call.id, name=call.name, content=serialize_output(payload), is_error=True)


async def _delegate(
    state: RunState,
    call: ToolCall,
    authorized: AuthorizedCall,
    base_record: Callable[..., ToolCallRecord],
) -> ToolResult:
    deps, run, hooks = state.deps, state.run, state.hooks
    target = authorized.spec.target_agent or ""
    task = str(authorized.args.get("task", ""))
    if run.depth >= deps.max_delegation_depth:
        message = f'Tool "{call.name}": delegation depth limit of {deps.max_delegation_depth} reached; answer directly'
        await effect(
            hooks,
            f"persist:toolfail:{call.id}",
            lambda: _record_once(deps.store, base_record("failed", error=message, policy_decision="depth_limit")),
        )
        return await _failed(state, call, "agent", message)
    await effect(
        hooks,
        f"persist:toolcall:{call.id}",
        lambda: _record_once(deps.store, base_record("started", policy_decision="allowed")),
    )
    await _frame(state, call, "agent", "started", input=authorized.args)
    started = time.perf_counter()
    await deps.telemetry.delegated(run, deps.agent.name, call, to_agent=target, task=task)
    try:
        # The child run's invoke_agent span nests under this execute_tool span.
        with deps.telemetry.tool_span(run, call, kind="agent", decision="allowed") as span:
            text = await hooks.run_agent(target, task)
            if span is not None:
                span.set_attribute("agora.tool.status", "executed")
    except Exception as exc:
        message = f'Delegation to "{target}" failed: {exc}'
        await effect(
            hooks,
            f"persist:toolfail:{call.id}",
            lambda: deps.store.update_tool_call(run.run_id, call.id, ToolCallPatch(status="failed", error=message)),
        )
        return await _failed(state, call, "agent", message)
    output = {"text": text}
    elapsed_ms = int((time.perf_counter() - started) * 1000)
    await effect(
        hooks,
        f"persist:toolexec:{call.id}",
        lambda: deps.store.update_tool_call(
            run.run_id,
            call.id,
            ToolCallPatch(status="executed", output=output, execution_ms=elapsed_ms, executed_by_ref=run.actor.id),
        ),
    )
    await _frame(state, call, "agent", "executed", output=output)
    return ToolResult(tool_call_id=call.id, name=call.name, content=serialize_output(output))
