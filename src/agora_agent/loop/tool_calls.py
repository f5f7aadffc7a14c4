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
from dataclasses import dataclass
from functools import partial
from typing import Any, Literal

from agora_agent._frozen import constructor
from agora_agent.errors import ToolError
from agora_agent.genui.present import run_present
from agora_agent.genui.session import UiSession
from agora_agent.loop._state import PendingResult, RunState, now_utc, serialize_output, to_jsonable
from agora_agent.loop.interface import ApprovalDecision, PendingApproval, handed_over
from agora_agent.messages import ToolCall, ToolResult
from agora_agent.records import ApprovalRecord, ToolCallPatch, ToolCallRecord
from agora_agent.stores.base import record_tool_call_once
from agora_agent.streaming.frames import ToolFrame, ToolFrameStatus
from agora_agent.tools.context import ToolContext
from agora_agent.tools.registry import AuthorizedCall
from agora_agent.tools.retry import run_with_retry

__all__ = ["OpenedCall", "handle_tool_call", "open_tool_call", "run_tool_call"]

logger = logging.getLogger("agora_agent.loop")


def _context(state: RunState, call: ToolCall) -> ToolContext:
    run, deps = state.run, state.deps
    session = _ui_session(
        write=state.write_component, registry=deps.components, actor=run.actor, capabilities=run.ui_capabilities
    )
    return _tool_context(
        actor=run.actor,
        thread_id=run.thread_id,
        run_id=run.run_id,
        tool_call_id=call.id,
        agent=deps.agent.name,
        persona=state.persona.id if state.persona else None,
        page_context=run.page_context,
        ui_capabilities=run.ui_capabilities,
        _ui=session,
        _retrieved=state.retrieved,
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
    if state.deps.redactor is not None and input is not None and (type(input) is dict or isinstance(input, Mapping)):
        input = _redact(state, call.name, input)  # the stream shows arguments through the redactor, like the audit row
    await state.writer.write(
        _tool_frame(
            tool_call_id=call.id, name=call.name, kind=kind, status=status, input=input, output=output, error=error
        )
    )
    # Every status change streams one frame, so this is also where the tool_call.status event fires.
    telemetry = state.deps.telemetry
    # `wants_tool_status`; in a run that found no tracer or meter provider, only an event's watchers count
    if (telemetry.wants_tool_status(status)) if state.measured else (not telemetry.quiet()):
        await telemetry.tool_status(state.run, state.deps.agent.name, call, kind=kind, status=status, error=error)


async def _failed(state: RunState, call: ToolCall, kind: str, message: str, *, input: Any = None) -> ToolResult:
    """Stream the `failed` frame and hand the model the error; the caller has written the audit row."""
    await _frame(state, call, kind, "failed", input=input, error=message)
    return _error_result(call, message)


@dataclass(slots=True)
class OpenedCall:
    """A tool call authorized (or refused) with the audit row it starts with, before anything is written.

    `written`: that row was written with the assistant step that asked for the call (`ModelStep.tool_call`)."""

    call: ToolCall
    kind: str
    ctx: ToolContext
    record: ToolCallRecord  # started | pending_approval | failed (refused, delegation too deep)
    authorized: AuthorizedCall | None = None  # None: refused
    approval: ApprovalRecord | None = None  # an action's, parked with its row
    error: str | None = None  # why it failed before running
    written: bool = False


# What every tool call builds, made without the class call (`_frozen.constructor`: a class called with keywords
# turns them into a dict and back, some 70 ns a keyword on CPython 3.11; a tool call passes these about 60).
_ui_session = constructor(UiSession)
_tool_context = constructor(ToolContext)
_tool_call_record = constructor(ToolCallRecord)
_opened_call = constructor(OpenedCall)
_tool_frame = constructor(ToolFrame)
_pending_result = constructor(PendingResult)
_tool_result = constructor(ToolResult)


async def open_tool_call(state: RunState, call: ToolCall, message_id: str) -> OpenedCall:
    """Authorize `call` — every kind: an action the actor may not invoke never parks — and build the audit row
    it starts with. Nothing is written or streamed."""
    deps, run = state.deps, state.run
    spec = deps.registry.get(call.name)
    kind = spec.kind if spec is not None else "read"  # TOOL-32: unknown names are handled as reads
    ctx = _context(state, call)
    allow = state.allow_list
    if kind == "agent":
        own = deps.agent.delegation_names()
        allow = own if allow is None else (allow & own)

    def record(status: str, policy_decision: str, error: str | None = None) -> ToolCallRecord:
        return _tool_call_record(
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
            policy_decision=policy_decision,
            error=error,
        )

    try:
        authorized = await deps.registry.authorize(
            call.name, call.input, ctx=ctx, policy=deps.policy, allow_list=allow, memo=state.memo
        )
    except ToolError as exc:
        message = str(exc)
        refused = record("failed", f"refused: {type(exc).__name__}", message)
        return OpenedCall(call=call, kind=kind, ctx=ctx, record=refused, error=message)
    if kind == "agent" and run.depth >= deps.max_delegation_depth:
        message = f'Tool "{call.name}": delegation depth limit of {deps.max_delegation_depth} reached; answer directly'
        deep = record("failed", "depth_limit", message)
        return OpenedCall(call=call, kind=kind, ctx=ctx, record=deep, authorized=authorized, error=message)
    if kind != "action":
        started = record("started", "allowed")
        return _opened_call(call=call, kind=kind, ctx=ctx, record=started, authorized=authorized)
    spec = authorized.spec
    approval = ApprovalRecord(
        run_id=run.run_id,
        tool_call_id=call.id,
        thread_id=run.thread_id,
        tool_name=call.name,
        args_hash=authorized.args_hash,
        requested_by=run.actor.id,
        approver_roles=spec.approver_roles,
        deadline=now_utc() + spec.approval_ttl if spec.approval_ttl is not None else None,
        created_at=now_utc(),
    )
    parked = record("pending_approval", "allowed")
    return OpenedCall(call=call, kind=kind, ctx=ctx, record=parked, authorized=authorized, approval=approval)


async def handle_tool_call(state: RunState, call: ToolCall, message_id: str) -> ToolResult:
    """Authorize and run one tool call, writing each of its audit row's states."""
    return await run_tool_call(state, await open_tool_call(state, call, message_id))


async def run_tool_call(state: RunState, opened: OpenedCall, *, defer: bool = False) -> ToolResult:
    """Run an opened call by kind. Its first row is written under its usual step name unless the assistant step
    wrote it already (the name keeps its place: a no-op then). `defer`: the result's write joins the next
    model call's budget reservation (`state.pending`), its frame streamed right after that write."""
    deps, run = state.deps, state.run
    call, kind = opened.call, opened.kind

    async def write_first() -> None:
        if not opened.written:
            await record_tool_call_once(deps.store, opened.record, opened.approval)

    authorized = opened.authorized
    if authorized is None:  # refused
        message = opened.error or ""

        async def refuse() -> None:
            decision = opened.record.policy_decision or "refused"
            with deps.telemetry.tool_span(run, call, kind=kind, decision=decision, status="failed"):
                await write_first()

        await state.effect(f"persist:toolfail:{call.id}", refuse)
        return await _failed(state, call, kind, message, input=call.input)
    if kind == "agent":
        return await _delegate(state, opened, write_first, defer=defer)
    if kind == "action":
        return await _run_action(state, opened, write_first, defer=defer)
    await state.effect(f"persist:toolcall:{call.id}", write_first)
    await _frame(state, call, kind, "started", input=authorized.args)
    return await _execute(state, call, kind, authorized, opened.ctx, decided_by=None, defer=defer)


async def _nothing() -> None:
    return None


async def _result(
    state: RunState,
    call: ToolCall,
    name: str,
    patch: ToolCallPatch,
    frame: Callable[[], Awaitable[None]],
    *,
    defer: bool,
) -> None:
    """Write a tool's result under the step name `name`, then stream its `frame`. Deferred, the write rides on
    the next `quota:reserve` step (`state.pending`) and `name` keeps its place as a no-op."""
    deps, run = state.deps, state.run
    if not defer:
        await state.effect(name, lambda: deps.store.update_tool_call(run.run_id, call.id, patch))
        await frame()
        return
    state.pending = _pending_result(tool_call_id=call.id, patch=patch, frame=frame)
    await state.effect(name, _nothing)


class _ToolStep:
    """The body of the `tool:<id>` step: run the tool with retry, then present it; errors come back as data."""

    __slots__ = ("authorized", "call", "ctx", "session", "state")

    def __init__(self, state: RunState, call: ToolCall, authorized: AuthorizedCall, ctx: ToolContext) -> None:
        self.state = state
        self.call = call
        self.authorized = authorized
        self.ctx = ctx
        self.session = ctx._ui if isinstance(ctx._ui, UiSession) else None

    def _on_retry(self, attempt_no: int, error: BaseException) -> None:
        # RETRY-06: each transient failure that will be retried is reported (never the final one).
        run, call = self.state.run, self.call
        logger.warning(
            "tool.retry run=%s tool=%s call=%s attempt=%d: %s", run.run_id, call.name, call.id, attempt_no, error
        )

    async def __call__(self) -> dict[str, Any]:
        # Errors become data inside the step, so a durable replay memoizes failures too. The execution
        # time is part of the result: a write redone after a recovery records the real one, not the replay's.
        started = time.perf_counter()
        state, call, ctx, session = self.state, self.call, self.ctx, self.session
        deps = state.deps
        attempt_of = getattr(state.hooks, "tool_attempt", None)  # optional hook (see LoopHooks)
        if attempt_of is not None:
            ctx.attempt = await attempt_of(call.id)
        outcome: dict[str, Any]
        try:
            if deps.retry is None:  # one plain call (what run_with_retry does without a policy)
                output = await deps.registry.execute(self.authorized, ctx)
            else:
                output = await run_with_retry(
                    partial(deps.registry.execute, self.authorized, ctx), deps.retry, on_retry=self._on_retry
                )
        except Exception as exc:
            if isinstance(exc, ToolError):
                error = str(exc)
            else:
                error = f'Tool "{call.name}" failed: {exc}' if str(exc) else f'Tool "{call.name}" failed: {exc!r}'
            if session is not None:
                await session.abort(error)  # no half-drawn component survives a failed call
            outcome = {"error": error}
        else:
            if session is None:
                outcome = {"output": to_jsonable(output)}
            else:
                # Presenting runs once, after success and outside the retry: it never re-runs a write.
                tool = deps.registry.runnable(call.name)
                if getattr(tool, "present", None) is not None:
                    await run_present(tool, output, ctx, session, on_error=deps.on_presentation_error)
                components = await session.finish() if session.touched() else []
                outcome = {"output": to_jsonable(output), "components": components}
        outcome["ms"] = int((time.perf_counter() - started) * 1000)
        return outcome


async def _execute(
    state: RunState,
    call: ToolCall,
    kind: str,
    authorized: AuthorizedCall,
    ctx: ToolContext,
    *,
    decided_by: str | None,
    defer: bool = False,
) -> ToolResult:
    deps, run, hooks = state.deps, state.run, state.hooks
    outcome: dict[str, Any] = {}
    tool_step = _ToolStep(state, call, authorized, ctx)
    telemetry = deps.telemetry
    try:
        outcome = await hooks.step(
            f"tool:{call.id}",
            tool_step  # no tracer: no execute_tool span to open around it
            if not state.measured or telemetry.tracer() is None
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
        patch = ToolCallPatch.of(status="failed", error=error, execution_ms=elapsed_ms, decided_by=decided_by)
        failed = partial(_frame, state, call, kind, "failed", error=error)
        await _result(state, call, f"persist:toolfail:{call.id}", patch, failed, defer=defer)
        return _error_result(call, error)
    output = outcome["output"]
    patch = ToolCallPatch.of(  # only the fields it sets: the store's update looks at nothing else
        status="executed",
        output=output,
        execution_ms=elapsed_ms,
        executed_by_ref=run.actor.id,
        decided_by=decided_by,
        components=outcome.get("components") or None,
    )
    executed = partial(_frame, state, call, kind, "executed", output=output)
    await _result(state, call, f"persist:toolexec:{call.id}", patch, executed, defer=defer)
    return _tool_result(tool_call_id=call.id, name=call.name, content=serialize_output(output))


def _error_result(call: ToolCall, message: str) -> ToolResult:
    return ToolResult(tool_call_id=call.id, name=call.name, content=message, is_error=True)


async def _run_action(
    state: RunState, opened: OpenedCall, write_first: Callable[[], Awaitable[None]], *, defer: bool
) -> ToolResult:
    deps, run, hooks = state.deps, state.run, state.hooks
    call, ctx, authorized = opened.call, opened.ctx, opened.authorized
    assert authorized is not None and opened.approval is not None
    deadline = opened.approval.deadline
    # Tool-call row and approval in one transaction: once the `tool` frame is out, a decision can land.
    await state.effect(f"persist:toolcall:{call.id}", write_first)
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
        await state.effect(
            f"persist:toolfail:{call.id}",
            lambda: deps.store.update_tool_call(
                run.run_id, call.id, ToolCallPatch(status="failed", error=message, decided_by=decision.decided_by)
            ),
        )
        return await _failed(state, call, "action", message)
    # The audit row says `started` before the side effect can happen: a crash from here on is recovered
    # as `unknown_after_crash` (the action may or may not have run), never as `expired`.
    await state.effect(
        f"persist:toolstart:{call.id}",
        lambda: deps.store.update_tool_call(
            run.run_id, call.id, ToolCallPatch(status="started", decided_by=decision.decided_by)
        ),
    )
    await _frame(state, call, "action", "approved")
    return await _execute(state, call, "action", recheck, ctx, decided_by=decision.decided_by, defer=defer)


async def _not_approved(state: RunState, call: ToolCall, decision: ApprovalDecision) -> ToolResult:
    """A rejected or expired action: record it, tell the client, and give the model the reason."""
    deps, run = state.deps, state.run
    reason = decision.reason or ("approval expired" if decision.status == "expired" else "rejected by user")
    status: Literal["rejected", "expired"] = "expired" if decision.status == "expired" else "rejected"
    await state.effect(
        f"persist:toolreject:{call.id}",
        lambda: deps.store.update_tool_call(
            run.run_id, call.id, ToolCallPatch(status=status, error=reason, decided_by=decision.decided_by)
        ),
    )
    await _frame(state, call, "action", status, error=reason)
    payload = {"rejected": True, "reason": reason}
    return ToolResult(tool_call_id=call.id, name=call.name, content=serialize_output(payload), is_error=True)


async def _delegate(
    state: RunState, opened: OpenedCall, write_first: Callable[[], Awaitable[None]], *, defer: bool
) -> ToolResult:
    deps, run, hooks = state.deps, state.run, state.hooks
    call, authorized = opened.call, opened.authorized
    assert authorized is not None
    target = authorized.spec.target_agent or ""
    task = str(authorized.args.get("task", ""))
    if opened.error is not None:  # the delegation depth limit
        await state.effect(f"persist:toolfail:{call.id}", write_first)
        return await _failed(state, call, "agent", opened.error)
    await state.effect(f"persist:toolcall:{call.id}", write_first)
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
        failed = partial(_frame, state, call, "agent", "failed", error=message)
        patch = ToolCallPatch(status="failed", error=message)
        await _result(state, call, f"persist:toolfail:{call.id}", patch, failed, defer=defer)
        return _error_result(call, message)
    output = {"text": text}
    elapsed_ms = int((time.perf_counter() - started) * 1000)
    patch = ToolCallPatch(status="executed", output=output, execution_ms=elapsed_ms, executed_by_ref=run.actor.id)
    executed = partial(_frame, state, call, "agent", "executed", output=output)
    await _result(state, call, f"persist:toolexec:{call.id}", patch, executed, defer=defer)
    return ToolResult(tool_call_id=call.id, name=call.name, content=serialize_output(output))
