"""`run_agent_loop`: one governed turn — model → tools → approval → model ….

The loop is framework-agnostic: it talks to small protocols (model, store, registry, policy, quota,
pricing) and to a `LoopHooks` object, the only difference between running in-process and running
durably. Every side effect goes through `hooks.step(name, fn)` with a stable name, so a
durable replay never repeats one.

Where this loop decides differently from the reference:
- the run row is written by the runner before `start()` returns (a client can stream or approve at once);
- quota is reserved before each model call (`quota:reserve:<i>`) and settled after it in the step that
  persists the assistant message and its usage row (`persist:assistant:<i>`: one store transaction);
- an action the actor may not invoke fails before it parks; the approval row is bound to the hash of
  the validated arguments and the requester, and execution re-checks both;
- tool calls move `started → executed|failed`, carry an idempotency key and `execution_ms`, and their
  results are persisted and replayed in history.
"""

from __future__ import annotations

import hashlib
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from agora_agent._frozen import constructor
from agora_agent.agents import Persona, derive_title, effective_allow_list, resolve_system_prompt
from agora_agent.errors import QuotaExceededError
from agora_agent.governance.pricing import ModelPrice, PricingStore, estimate_cost, prices_for
from agora_agent.governance.quota import QuotaStore, Reservation, ThresholdCrossing
from agora_agent.loop._state import RunState, now_utc
from agora_agent.loop.history import History, has_attachments, load_history
from agora_agent.loop.interface import LoopDeps, LoopHooks, LoopResult, RunInput, effect, effect_of, handed_over
from agora_agent.loop.tool_calls import OpenedCall, open_tool_call, run_tool_call
from agora_agent.messages import MessageSeq, ModelMessage, ModelRequest, ModelTurn, ToolCall, ToolDefinition
from agora_agent.rag.inject import retrieve_into_system
from agora_agent.records import UsageRecord
from agora_agent.stores.base import AgentStore, ModelStep, NewMessage, QuotaReserve, QuotaSettlement, RunEnd
from agora_agent.tools.spec import DescribeContext

__all__ = ["run_agent_loop"]

_STEP_IDS = uuid.UUID("5f0c7c52-4d0e-4a53-9a38-6b1f1a4c2e71")
"""Namespace of the assistant message ids: uuid5(run id, step), the same on a durable replay."""


_STEP_ID_PREFIX = _STEP_IDS.bytes
_VARIANT = "89ab89ab89ab89ab"  # the RFC 4122 variant nibble (10xx) for each hex digit's low two bits


def step_id(name: str) -> str:
    """The id of a run's step `name`: the same on a durable replay.

    `str(uuid.uuid5(_STEP_IDS, name))`, formatted from the SHA-1 digest directly: the `UUID` object's
    Python-level construction cost more than the hash (two ids per step)."""
    h = hashlib.sha1(_STEP_ID_PREFIX + name.encode()).hexdigest()
    return f"{h[:8]}-{h[8:12]}-5{h[13:16]}-{_VARIANT[int(h[16], 16)]}{h[17:20]}-{h[20:32]}"


async def run_agent_loop(deps: LoopDeps, run: RunInput, hooks: LoopHooks) -> LoopResult:
    """Drive one run to completion. Raises on failure; the runner records `failed`/`cancelled`.

    No try/finally around the whole loop: the sink is ended by the caller on every
    outcome, so a durable suspension can pass through untouched. `deps.telemetry` observes the run
    (invoke_agent span, run.* events) and re-raises whatever the loop raises.
    """
    telemetry = deps.telemetry
    if telemetry.silent():  # nothing would observe the run: no span, no event, no metric to record
        return await _drive(deps, run, hooks)
    async with telemetry.run(run, agent=deps.agent.name, persona=run.persona_id) as scope:
        result = await _drive(deps, run, hooks)
        scope.result = result
    return result


async def _open_run(deps: LoopDeps, run: RunInput, hooks: LoopHooks) -> tuple[RunState, str, str, list[ModelMessage]]:
    """Everything before the first model step: the system prompt, the quota check, the user's message, the
    thread so far, the sink, retrieval and prices. Returns the run's state, its system prompt, the thread's
    title and the history."""
    agent = deps.agent
    store = deps.store
    persona = agent.persona(run.persona_id)
    system = await resolve_system_prompt(agent, persona, run.actor, run.page_context)

    quota = deps.quota
    if quota is not None and not run.quota_checked:
        checked = quota
        await hooks.step("quota:check", lambda: checked.check(run.actor, run.day))

    user = NewMessage(
        thread_id=run.thread_id,
        role="user",
        content=run.user_text,
        run_id=run.run_id,
        persona=persona.id if persona else None,
        attachments=list(run.attachments) or None,
        message_id=step_id(f"{run.run_id}/user"),  # a write run twice writes it once
    )
    # The user's message is written by the next step, with the read of the thread (one transaction); its name
    # keeps its place as a no-op (a replayed `load:thread` committed both). The first model call's reservation
    # joins that transaction where the store can (one commit for the three): `quota:reserve:0` then hands it on.
    await effect(hooks, "persist:user", _nothing)
    folds = deps.max_steps > 0 and hasattr(store, "append_load_and_reserve")
    first_ask = _ask(quota, run, 0) if quota is not None and folds else None
    loaded = await hooks.step(
        "load:thread", lambda: load_history(store, run.thread_id, deps.history, append=user, reserve=first_ask)
    )
    thread_title, history = loaded[0], loaded[1]
    first_reservation = loaded[2] if len(loaded) > 2 else None  # two: recorded by a version before the fold
    try:
        return await _open_rest(deps, run, hooks, persona, system, thread_title, history, first_reservation)
    except BaseException as exc:
        await _release_unused(deps, first_reservation, exc)
        raise


async def _open_rest(
    deps: LoopDeps,
    run: RunInput,
    hooks: LoopHooks,
    persona: Persona | None,
    system: str,
    thread_title: str,
    history: list[ModelMessage],
    first_reservation: Reservation | None,
) -> tuple[RunState, str, str, list[ModelMessage]]:
    """`_open_run` after the thread's read: the sink, the run's state, retrieval and prices."""
    agent = deps.agent
    store = deps.store
    writer = await hooks.open_sink()
    allow_list = effective_allow_list(agent, persona)
    state = _run_state(
        deps=deps,
        run=run,
        hooks=hooks,
        writer=writer,
        persona=persona,
        allow_list=allow_list,
        memo=deps.registry.memo(
            run.actor,
            policy=deps.policy,
            allow_list=allow_list,
            describe_ctx=_describe_context(actor=run.actor, thread_id=run.thread_id, agent=agent.name),
        ),
        delegation_names=agent.delegation_names(),
        retrieved=partial(deps.telemetry.retrieved, run, agent.name),
        measured=not deps.telemetry.unmeasured(),
        first_reservation=first_reservation,
        effect=effect_of(hooks),
        crossed_now=getattr(deps.quota, "crossed_now", None),
    )
    if deps.retrieval is not None:  # ARCH-LOOP-07: inject mode, one `retrieve` step (filter derived inside it)
        system = await retrieve_into_system(
            deps.retrieval,
            store=store,
            run=run,
            hooks=hooks,
            writer=writer,
            system=system,
            telemetry=deps.telemetry,
            agent=agent.name,
        )
    if deps.pricing is not None:
        # The prices of the run's configured model(s); a model a turn reports besides is read on first sight
        # (`_price_of`). A `pricing:list` recorded by an earlier version holds every price: nothing more to read.
        asked = tuple(sorted({m for m in (agent.model_id, deps.model.model_id) if m}))
        recorded = await hooks.step("pricing:list", partial(_read_prices, deps.pricing, asked))
        if isinstance(recorded, tuple):
            state.priced, price_list = set(recorded[0]), recorded[1]
        else:
            state.priced, price_list = None, recorded
        state.prices = {p.model_id: p for p in price_list}

    # The messages a step sends carry attachments only if the history does (the loop adds none): known here
    # once, so a step does not look through a long thread for them.
    state.attachments = deps.attachments is not None and has_attachments(history)
    return state, system, thread_title, history if isinstance(history, History) else list(history)


async def _drive(deps: LoopDeps, run: RunInput, hooks: LoopHooks) -> LoopResult:
    state, system, thread_title, history = await _open_run(deps, run, hooks)
    try:
        return await _steps(state, system, thread_title, history)
    except BaseException as exc:
        if state.pending is not None:  # a tool's result not written yet (its reservation never ran)
            await _flush(state, exc)
        await _release_unused(deps, state.first_reservation, exc)
        raise


async def _release_unused(deps: LoopDeps, reservation: Reservation | None, exc: BaseException) -> None:
    """The first model call's reservation, granted with the thread's read, given back by a run that fails before
    that call (unless the run goes on in another process, whose replay uses it)."""
    if reservation is not None and deps.quota is not None and not handed_over(exc):
        await deps.quota.release(reservation)


async def _flush(state: RunState, exc: BaseException) -> None:
    """The pending tool result written on its own (and streamed), unless its step committed it already or the
    run goes on in another process (whose replay writes it)."""
    pending, state.pending = state.pending, None
    assert pending is not None
    if not pending.written:
        if handed_over(exc):
            return
        await state.deps.store.update_tool_call(state.run.run_id, pending.tool_call_id, pending.patch)
    await pending.frame()


async def _steps(state: RunState, system: str, thread_title: str, history: list[ModelMessage]) -> LoopResult:
    deps, run = state.deps, state.run
    agent = deps.agent
    store = deps.store
    added: list[ModelMessage] = []  # this run's messages; the loaded history is never changed (MessageSeq)
    last_text = ""
    steps = 0
    total_in = total_out = 0
    known_cost: float | None = None
    ended = False  # the run's end was written with its last step
    for i in range(deps.max_steps):
        tools = _tools_now(state)
        if tools is None:
            tools = await _offered_tools(state)
        messages = MessageSeq(history, tuple(added))  # no copy of the whole thread per step
        request = _model_request(system=system, messages=messages, tools=tools, model_id=agent.model_id)
        asked = time.perf_counter()
        turn, reservation = await _model_step(state, i, request)
        latency_ms = int((time.perf_counter() - asked) * 1000)
        steps += 1
        last_text = turn.text
        total_in += turn.usage.input_tokens
        total_out += turn.usage.output_tokens
        model_id = turn.model_id or agent.model_id or deps.model.model_id or "unknown"
        if state.priced is not None and model_id not in state.priced and turn.cost_usd is None:
            await _price_of(state, model_id)
        cost = _step_cost(state, turn, model_id)
        if cost is not None:
            known_cost = (known_cost or 0.0) + cost
        # The run's end is written with its last step (one without tool calls).
        end = None if turn.tool_calls else _run_end(run, thread_title, steps, total_in, total_out, known_cost)
        message_id = step_id(f"{run.run_id}/assistant/{i}")
        # The step's first tool call is authorized before the step is built, so that its audit row joins the step's
        # transaction. An error other than a refusal writes the step alone first, as before the call was looked at.
        try:
            first = await open_tool_call(state, turn.tool_calls[0], message_id) if turn.tool_calls else None
        except BaseException:
            alone = _model_step_record(state, message_id, turn, model_id, cost, reservation, latency_ms, end, None)
            await state.effect(f"persist:assistant:{i}", partial(store.record_model_step, alone))
            raise
        step = _model_step_record(state, message_id, turn, model_id, cost, reservation, latency_ms, end, first)
        # Written once by its deterministic id: an effect, not a checkpoint (the loop needs only the id).
        persist = _step_write(store, step, first)
        await state.effect(f"persist:assistant:{i}", persist)
        if reservation is not None and reservation.watch:
            # `BudgetThresholdReached` for each threshold the step crossed; the stores answer without an await
            crossed_now = state.crossed_now
            for crossing in crossed_now(reservation) if crossed_now else await _crossed(state, reservation):
                await deps.telemetry.budget_threshold(run, agent.name, crossing)
        added.append(_model_message(role="assistant", content=turn.text, tool_calls=turn.tool_calls))
        if not turn.tool_calls:
            ended = persist.done
            break
        # The last call's result is written with the next step's reservation, when there is one to take.
        defer = deps.quota is not None and i + 1 < deps.max_steps
        results = []
        for n, call in enumerate(turn.tool_calls):
            opened = first if n == 0 and first is not None else await open_tool_call(state, call, step.message_id)
            results.append(await run_tool_call(state, opened, defer=defer and n == len(turn.tool_calls) - 1))
        added.append(_model_message(role="tool", tool_results=tuple(results)))
    # ARCH-LOOP-18: max_steps exhausted while the model still asks for tools ends the run quietly.

    # The name keeps its place: a no-op when the last step wrote the end (a replay that skipped it writes it).
    end = _run_end(run, thread_title, steps, total_in, total_out, known_cost)
    await state.effect("persist:run:end", _nothing if ended else partial(end.record, store))
    return LoopResult(text=last_text, steps=steps, input_tokens=total_in, output_tokens=total_out, cost_usd=known_cost)


@dataclass(slots=True)
class _StepWrite:
    """`persist:assistant:<i>`: the step with its first tool call's audit row (or the run's end), in one
    transaction. `done`: it ran in this execution (a durable replay skips it: then the later names write what
    they always wrote)."""

    store: AgentStore
    step: ModelStep
    first: OpenedCall | None
    done: bool = False

    async def __call__(self) -> None:
        await self.store.record_model_step(self.step)
        if self.first is not None:
            self.first.written = True
        self.done = True


# The values every step builds, made without the class call (`_frozen.constructor`: a class called with keywords
# turns them into a dict and back, some 70 ns a keyword on CPython 3.11; a step passes these about 70).
_model_request = constructor(ModelRequest)
_model_message = constructor(ModelMessage)
_quota_reserve = constructor(QuotaReserve)
_quota_settlement = constructor(QuotaSettlement)
_model_step_of = constructor(ModelStep)
_usage_record = constructor(UsageRecord)
_run_end_of = constructor(RunEnd)
_step_write = constructor(_StepWrite)
_run_state = constructor(RunState)  # and once per run
_describe_context = constructor(DescribeContext)


async def _nothing() -> None:
    return None


def _run_end(run: RunInput, thread_title: str, steps: int, total_in: int, total_out: int, cost: float | None) -> RunEnd:
    """The completed run's end, with the derived title of a thread still untitled."""
    title = derive_title(run.user_text) if thread_title in ("", "New chat") else None
    return _run_end_of(
        run_id=run.run_id,
        step_count=steps,
        input_tokens=total_in,
        output_tokens=total_out,
        cost_usd=cost,
        thread_title=title,
    )


def _tools_now(state: RunState) -> tuple[ToolDefinition, ...] | None:
    """`_offered_tools` without an await when the run's memo holds the last step's offer (None: await it)."""
    last, memo = state.offered, state.memo
    if last is None or memo is None:
        return None
    deps = state.deps
    offered = deps.registry.offered_now(state.run.actor, policy=deps.policy, allow_list=state.allow_list, memo=memo)
    return last[1] if offered is not None and offered is last[0] else None


async def _offered_tools(state: RunState) -> tuple[ToolDefinition, ...]:
    """What this step offers the model: the filter chain's answer (through the run's memo), minus other
    agents' delegation tools. The same answer as the last step's gives the same tuple."""
    deps, run = state.deps, state.run
    offered = await deps.registry.offer(run.actor, policy=deps.policy, allow_list=state.allow_list, memo=state.memo)
    last = state.offered
    if last is not None and last[0] is offered:
        return last[1]
    own = state.delegation_names
    tools = tuple(t for t in offered if t.kind != "agent" or t.name in own)
    state.offered = (offered, tools)
    return tools


async def _model_step(state: RunState, i: int, request: ModelRequest) -> tuple[ModelTurn, Reservation | None]:
    """Reserve budget, call the model; the reservation is settled when the step is persisted."""
    deps, run, hooks = state.deps, state.run, state.hooks
    reservation = None if deps.quota is None else await _reserve(state, i, deps.quota)

    on_text = state.on_text

    async def call_model() -> ModelTurn:
        # Attachments are inlined here, inside the step: their bytes are never checkpointed.
        preparer = deps.attachments if state.attachments else None
        prepared = await preparer.prepare(request) if preparer is not None else request
        return await deps.model.run_turn(prepared, on_text)

    telemetry = deps.telemetry
    try:
        turn = await hooks.step(
            f"llm:{i}",
            # without a tracer or a meter, `chat()` would only await the call
            (lambda: telemetry.chat(run, deps.model, request, call_model))
            if state.measured and telemetry.measures()
            else call_model,
        )
    except BaseException as exc:
        if reservation is not None and deps.quota is not None and not handed_over(exc):
            await deps.quota.release(reservation)
        raise
    return turn, reservation


async def _reserve(state: RunState, i: int, quota: QuotaStore) -> Reservation:
    """`quota:reserve:<i>`, with the previous tool's result written in the same transaction when one is pending
    (then streamed: its frame follows its row). A replayed step committed both when it was recorded."""
    deps, run = state.deps, state.run
    ask = _ask(quota, run, i)
    pending = state.pending
    if pending is None:
        first = state.first_reservation
        if first is not None and i == 0:  # granted with the thread's read: the step hands it on
            state.first_reservation = None
            return await state.hooks.step("quota:reserve:0", partial(_granted, first))
        return await state.hooks.step(f"quota:reserve:{i}", ask.take)

    async def write_and_reserve() -> Reservation:
        try:
            reservation = await deps.store.record_tool_result(
                run.run_id, pending.tool_call_id, pending.patch, reserve=ask
            )
        except QuotaExceededError:
            pending.written = True  # the store commits the result whatever the reservation's outcome
            raise
        pending.written = True
        assert reservation is not None  # asked with `reserve`
        return reservation

    reservation = await state.hooks.step(f"quota:reserve:{i}", write_and_reserve)
    state.pending = None
    await pending.frame()
    return reservation


async def _read_prices(pricing: PricingStore, asked: tuple[str, ...]) -> tuple[tuple[str, ...], list[ModelPrice]]:
    """`pricing:list`: the asked models and their current prices."""
    return asked, await prices_for(pricing, asked)


async def _price_of(state: RunState, model_id: str) -> None:
    """A model a turn reported that the run has not priced yet: its current price, read once (`pricing:<model>`)."""
    pricing = state.deps.pricing
    assert pricing is not None and state.priced is not None
    state.priced.add(model_id)
    found = await state.hooks.step(f"pricing:{model_id}", partial(prices_for, pricing, (model_id,)))
    state.prices.update((p.model_id, p) for p in found)


def _ask(quota: QuotaStore, run: RunInput, i: int) -> QuotaReserve:
    """The reservation model call `i` of the run asks for."""
    budget = quota.budget
    return _quota_reserve(
        quota=quota,
        actor=run.actor,
        day=run.day,
        reservation_id=f"{run.run_id}:{i}",
        tokens=budget.reserve_tokens,
        usd=budget.reserve_usd,  # the store reserves USD only where a USD limit applies
        run_id=run.run_id,  # recovery releases a crashed run's reservations
    )


async def _granted(reservation: Reservation) -> Reservation:
    return reservation


async def _crossed(state: RunState, reservation: Reservation) -> list[ThresholdCrossing]:
    """The thresholds the settled step crossed, from a quota store without `crossed_now` (each once per period: the
    store claims it, so a durable replay of this step does not raise it again)."""
    crossed = getattr(state.deps.quota, "crossed", None)
    return [] if crossed is None else list(await crossed(reservation))


def _redacted_calls(deps: LoopDeps, calls: Sequence[ToolCall]) -> list[ToolCall]:
    """The assistant message's tool calls as stored (and served by `GET /threads/{id}` and a re-attach):
    arguments through the configured redactor, like the audit row. The loop keeps the raw ones."""
    redactor = deps.redactor
    if redactor is None:
        return list(calls)
    return [ToolCall(id=c.id, name=c.name, input=redactor(c.name, dict(c.input))) for c in calls]


def _step_cost(state: RunState, turn: ModelTurn, model_id: str) -> float | None:
    """Provider-reported cost, else an estimate from the current price, else None (never 0)."""
    if turn.cost_usd is not None:
        return turn.cost_usd
    price = state.prices.get(model_id)
    return estimate_cost(turn.usage, price) if price is not None else None


def _usage_json(turn: ModelTurn, cost: float | None, latency_ms: int | None = None) -> dict[str, Any]:
    usage: dict[str, Any] = turn.usage.to_dict()  # a new dict: the stored usage, then the step's own keys
    usage["cost_usd"] = cost
    # for the run inspector: how long the call took (as this process saw it) and why the turn ended
    if latency_ms is not None:
        usage["latency_ms"] = latency_ms
    usage["finish_reason"] = "tool_calls" if turn.tool_calls else "stop"
    return usage


def _model_step_record(
    state: RunState,
    message_id: str,
    turn: ModelTurn,
    model_id: str,
    cost: float | None,
    reservation: Reservation | None,
    latency_ms: int | None,
    run_end: RunEnd | None,
    first: OpenedCall | None,
) -> ModelStep:
    """What `persist:assistant:<i>` writes in one transaction: settle, assistant message, usage row (and the
    first tool call's audit row, with its approval).

    The usage row is priced now with the price in force (its id kept), so later price changes never rewrite
    past spend; a provider-reported cost wins; without either the row stays unpriced (`cost` is None)."""
    run, deps = state.run, state.deps
    price = state.prices.get(model_id) if turn.cost_usd is None else None
    source = "reported" if turn.cost_usd is not None else ("priced" if price is not None else None)
    settlement = None
    if reservation is not None and deps.quota is not None:
        settlement = _quota_settlement(
            quota=deps.quota, reservation=reservation, tokens=turn.usage.total_tokens, usd=cost or 0.0
        )
    return _model_step_of(
        message_id=message_id,
        thread_id=run.thread_id,
        run_id=run.run_id,
        content=turn.text,
        persona=state.persona.id if state.persona else None,
        tool_calls=_redacted_calls(state.deps, turn.tool_calls) or None,
        usage=_usage_json(turn, cost, latency_ms),
        # `purpose` is left at its default ("chat"): 16 keywords would make Python pass them as a dict (over 15)
        ledger=_usage_record(
            id=f"{run.run_id}:{message_id}",
            thread_id=run.thread_id,
            run_id=run.run_id,
            message_id=message_id,
            actor_ref=run.actor.id,
            tenant_ref=run.actor.tenant_ref,
            model_id=model_id,
            input_tokens=turn.usage.input_tokens,
            output_tokens=turn.usage.output_tokens,
            cache_read_tokens=turn.usage.cache_read_tokens,
            cache_write_tokens=turn.usage.cache_write_tokens,
            cost_usd=cost,
            created_at=now_utc(),
            price_id=price.id if price is not None else None,
            cost_source=source,
        ),
        settlement=settlement,
        tool_call=first.record if first is not None else None,
        approval=first.approval if first is not None else None,
        run_end=run_end,
    )
