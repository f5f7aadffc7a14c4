"""`Telemetry`: lifecycle events, logging, OpenTelemetry spans and metrics for the loop — one object.

The loop calls it at a handful of points; it fans out to
- the app's `on_event` handler (typed events from `agora_agent.observability.events`; errors isolated),
- the `agora_agent.events` logger (one INFO line per event, `run_id`/`thread_id`/`actor_id` as extra fields),
- OpenTelemetry, when the `otel` extra is installed AND a tracer/meter provider is configured (passed in,
  or set globally by the app). Without one the span and metric paths are skipped entirely: no span
  object, no attribute dict.

Spans follow the GenAI semantic conventions: `invoke_agent {agent}` per run (a delegated run nests under
the delegating `execute_tool` span), `chat {model}` per model call, `execute_tool {tool}` per tool call
and `await_approval {tool}` for the time an action waited for a human. Message content and tool
arguments/results are recorded only when content capture is on (`capture_content=True`, or the standard
`OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`), and tool arguments pass through the config's
redactor first.

Durable execution: `chat` and `execute_tool` spans are opened inside the step functions, so a replayed
(memoized) step emits no second span.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import inspect
import json
import logging
import os
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from agora_agent._version import __version__
from agora_agent.errors import QuotaExceededError
from agora_agent.observability import semconv as sc
from agora_agent.observability.events import (
    AgentEvent,
    ApprovalDecided,
    ApprovalExpired,
    ApprovalRequested,
    BudgetThresholdReached,
    Delegated,
    EventHandler,
    QuotaExceeded,
    Retrieved,
    RunCancelled,
    RunFailed,
    RunFinished,
    RunStarted,
    ToolCallStatusChanged,
)

if TYPE_CHECKING:
    from datetime import datetime

    from opentelemetry.metrics import Counter, Histogram, Meter, MeterProvider
    from opentelemetry.trace import Span, Tracer, TracerProvider

    from agora_agent.actors import Actor
    from agora_agent.governance.quota import ThresholdCrossing
    from agora_agent.loop.interface import ApprovalDecision, LoopResult, RunInput
    from agora_agent.messages import ModelRequest, ModelTurn, ToolCall

__all__ = ["RunScope", "Telemetry", "provider_name"]

logger = logging.getLogger("agora_agent.events")
T = TypeVar("T")
Redactor = Callable[[str, dict[str, Any]], dict[str, Any]]

_INSTRUMENTATION = "agora_agent"
_TERMINAL_TOOL_STATUSES = frozenset({"executed", "failed", "rejected", "expired"})
_PROVIDERS = {
    "OpenAIChatModel": "openai",
    "AnthropicModel": "anthropic",
    "PydanticAIModel": "pydantic_ai",
}


def provider_name(model: object) -> str:
    """`gen_ai.provider.name` for a model adapter: its `provider_name` attribute, else by adapter class."""
    name = getattr(model, "provider_name", None)
    if isinstance(name, str) and name:
        return name
    return _PROVIDERS.get(type(model).__name__, type(model).__name__)


def _env_capture() -> bool:
    return os.environ.get(sc.CAPTURE_CONTENT_ENV, "").strip().lower() in ("1", "true", "yes", "on")


@dataclass
class _Instruments:
    token_usage: Histogram
    duration: Histogram
    tool_calls: Counter
    approvals: Counter
    approval_wait: Histogram
    budget_refusals: Counter


class _GlobalProvider:
    """OpenTelemetry's global provider of one kind, as `unset()` sees it.

    Asked on every span/metric of every step while nobody configured OTel, so it must cost nothing: the API's
    own getter tests `env in os.environ` each time (a KeyError raised and caught inside `os`). The module is
    imported and the variable read once per process; `set_*_provider` fills the module global read here.
    """

    __slots__ = ("_attribute", "_env", "_module", "_module_name", "_named")

    def __init__(self, module: str, attribute: str, env: str) -> None:
        self._module_name = module
        self._attribute = attribute
        self._env = env
        self._module: Any = _MISSING
        self._named = False  # read with the module, once

    def unset(self) -> bool:
        """True while OpenTelemetry has no global provider of this kind (none set, none named by the variable)."""
        module = self._module
        if module is _MISSING:
            module = self._resolve()
        return module is None or (getattr(module, self._attribute, None) is None and not self._named)

    def _resolve(self) -> Any:
        try:
            self._module = importlib.import_module(self._module_name)
        except ImportError:  # the `otel` extra is not installed
            self._module = None
        self._named = self._env in os.environ
        return self._module


_MISSING = object()
_TRACE = _GlobalProvider("opentelemetry.trace", "_TRACER_PROVIDER", "OTEL_PYTHON_TRACER_PROVIDER")
_METER = _GlobalProvider("opentelemetry.metrics._internal", "_METER_PROVIDER", "OTEL_PYTHON_METER_PROVIDER")


def _real_tracer_provider() -> TracerProvider | None:
    if _TRACE.unset():
        return None  # nobody configured tracing: stay at zero cost
    from opentelemetry import trace

    provider = trace.get_tracer_provider()
    if isinstance(provider, trace.ProxyTracerProvider | trace.NoOpTracerProvider):
        return None  # nobody configured tracing: stay at zero cost
    return provider


def _real_meter_provider() -> MeterProvider | None:
    if _METER.unset():
        return None
    from opentelemetry import metrics

    provider = metrics.get_meter_provider()
    # The API's default is a private proxy class; any configured SDK provider is something else.
    if isinstance(provider, metrics.NoOpMeterProvider) or type(provider).__name__.startswith("_Proxy"):
        return None
    return provider


class Telemetry:
    """Events + logs + spans + metrics for one configuration. `Telemetry()` does nothing but log events."""

    def __init__(
        self,
        *,
        on_event: EventHandler | None = None,
        tracer_provider: TracerProvider | None = None,
        meter_provider: MeterProvider | None = None,
        capture_content: bool | None = None,
        redactor: Redactor | None = None,
    ) -> None:
        self.on_event = on_event
        self.capture_content = _env_capture() if capture_content is None else capture_content
        self.redactor = redactor
        self._tracer_provider = tracer_provider
        self._meter_provider = meter_provider
        self._tracer_cache: Tracer | None = None
        self._instruments_cache: _Instruments | None = None
        self._listeners: set[asyncio.Queue[AgentEvent]] = set()

    @contextlib.contextmanager
    def listen(self, maxsize: int = 256) -> Iterator[asyncio.Queue[AgentEvent]]:
        """A queue receiving every event from now on (the console's live views). A listener that falls
        `maxsize` events behind loses the newest ones rather than slowing runs down."""
        queue: asyncio.Queue[AgentEvent] = asyncio.Queue(maxsize=maxsize)
        self._listeners.add(queue)
        try:
            yield queue
        finally:
            self._listeners.discard(queue)

    # -- providers (resolved lazily: an app may configure OTel after building the config) ----------

    def tracer(self) -> Tracer | None:
        """The tracer, or None when no tracer provider is configured (then no span is ever created)."""
        cached = self._tracer_cache
        if cached is not None:
            return cached
        if not self._tracer_provider and _TRACE.unset():
            return None  # the common case, asked a few times per step: one look at OTel's global
        provider = self._tracer_provider or _real_tracer_provider()
        if provider is None:
            return None
        self._tracer_cache = provider.get_tracer(_INSTRUMENTATION, __version__)
        return self._tracer_cache

    def _instruments(self) -> _Instruments | None:
        cached = self._instruments_cache
        if cached is not None:
            return cached
        if not self._meter_provider and _METER.unset():
            return None
        provider = self._meter_provider or _real_meter_provider()
        if provider is None:
            return None

        meter: Meter = provider.get_meter(_INSTRUMENTATION, __version__)
        self._instruments_cache = _Instruments(
            token_usage=meter.create_histogram(
                sc.METRIC_TOKEN_USAGE, unit="{token}", description="Tokens used per model call"
            ),
            duration=meter.create_histogram(
                sc.METRIC_OPERATION_DURATION, unit="s", description="GenAI operation duration"
            ),
            tool_calls=meter.create_counter(sc.METRIC_TOOL_CALLS, unit="{call}", description="Tool calls by status"),
            approvals=meter.create_counter(sc.METRIC_APPROVALS, unit="{approval}", description="Approvals by outcome"),
            approval_wait=meter.create_histogram(
                sc.METRIC_APPROVAL_WAIT, unit="s", description="Time an action waited for a decision"
            ),
            budget_refusals=meter.create_counter(
                sc.METRIC_BUDGET_REFUSALS, unit="{refusal}", description="Chats or steps a budget refused"
            ),
        )
        return self._instruments_cache

    # -- events -------------------------------------------------------------------------------------

    def quiet(self) -> bool:
        """Nobody would see an event now: no `on_event`, no listener, and the events logger is below INFO.
        Callers skip building the event then (a tool call's status changes several times per step)."""
        return self.on_event is None and not self._listeners and not logger.isEnabledFor(logging.INFO)

    def measures(self) -> bool:
        """A tracer or a meter is configured: `chat()` would open a span or record a histogram (else the loop
        calls the model without it)."""
        return self.tracer() is not None or self._instruments() is not None

    def unmeasured(self) -> bool:
        """Neither a tracer nor a meter provider is configured (the base class's answers). The loop asks once,
        when a run opens, and skips every span and metric of that run then: a provider set while a run is in
        progress is used from the next run on."""
        return Telemetry.tracer(self) is None and Telemetry._instruments(self) is None

    def silent(self) -> bool:
        """Nothing observes at all, for the whole run: no `on_event`, listener or INFO logger, neither a tracer nor
        a meter (the loop then skips `run()` around a run, which would create no span, emit no event and record no
        metric)."""
        # The base class's answers, not a subclass's: a durable replay is quiet for a while, not for the whole run.
        return Telemetry.quiet(self) and self.unmeasured()

    async def emit(self, event: AgentEvent) -> None:
        """Log the event and hand it to `on_event`; a failing handler is logged, never raised."""
        if logger.isEnabledFor(logging.INFO):
            logger.info(
                "%s run=%s thread=%s actor=%s",
                event.kind,
                event.run_id,
                event.thread_id,
                event.actor_id,
                extra={
                    "agora_event": event.kind,
                    "run_id": event.run_id,
                    "thread_id": event.thread_id,
                    "actor_id": event.actor_id,
                    "tenant_ref": event.tenant_ref,
                },
            )
        for queue in self._listeners:
            with contextlib.suppress(asyncio.QueueFull):
                queue.put_nowait(event)
        handler = self.on_event
        if handler is None:
            return
        try:
            result = handler(event)
            if inspect.isawaitable(result):
                await result
        except Exception:
            logger.exception("on_event handler raised for %s (run %s); ignored", event.kind, event.run_id)

    def _base(self, run: RunInput, agent: str | None) -> dict[str, Any]:
        return {
            "run_id": run.run_id,
            "thread_id": run.thread_id,
            "actor_id": run.actor.id,
            "tenant_ref": run.actor.tenant_ref,
            "agent": agent,
        }

    async def quota_refused(self, actor: Actor, exc: QuotaExceededError, *, thread_id: str | None = None) -> None:
        """A chat refused by the budget before any run existed."""
        await self.emit(_quota_event(exc, run_id=None, thread_id=thread_id, actor=actor, agent=None))
        self._count_refusal(exc)

    def _count_refusal(self, exc: QuotaExceededError) -> None:
        inst = self._instruments()
        if inst is not None:
            inst.budget_refusals.add(1, {sc.BUDGET_SCOPE: str(exc.detail.get("scope", "unknown"))})

    # -- spans --------------------------------------------------------------------------------------

    def _run_attrs(self, run: RunInput) -> dict[str, Any]:
        attrs: dict[str, Any] = {
            sc.RUN_ID: run.run_id,
            sc.THREAD_ID: run.thread_id,
            sc.ACTOR_ID: run.actor.id,
            sc.CONVERSATION_ID: run.thread_id,
        }
        if run.actor.tenant_ref:
            attrs[sc.TENANT_ID] = run.actor.tenant_ref
        if run.parent_run_id:
            attrs[sc.PARENT_RUN_ID] = run.parent_run_id
        return attrs

    @contextlib.contextmanager
    def _span(self, name: str, attrs: Mapping[str, Any], *, client: bool = False) -> Iterator[Span | None]:
        tracer = self.tracer()
        if tracer is None:
            yield None
            return
        from opentelemetry.trace import SpanKind

        kind = SpanKind.CLIENT if client else SpanKind.INTERNAL
        with tracer.start_as_current_span(name, kind=kind, attributes=dict(attrs)) as span:
            try:
                yield span
            except BaseException as exc:
                span.set_attribute(sc.ERROR_TYPE, type(exc).__name__)
                raise

    @contextlib.asynccontextmanager
    async def run(self, run: RunInput, *, agent: str, persona: str | None) -> AsyncIterator[RunScope]:
        """Around one run of the loop: `invoke_agent {agent}` span and run.started/finished/failed/cancelled."""
        scope = RunScope()
        started = time.perf_counter()
        base = self._base(run, agent)
        if not self.quiet():
            await self.emit(RunStarted(**base, persona=persona, parent_run_id=run.parent_run_id))
        attrs = self._run_attrs(run)
        attrs.update({sc.OPERATION_NAME: "invoke_agent", sc.AGENT_NAME: agent})
        if persona:
            attrs[sc.PERSONA] = persona

        def elapsed_ms() -> int:
            return int((time.perf_counter() - started) * 1000)

        with self._span(f"invoke_agent {agent}", attrs) as span:
            try:
                yield scope
            except BaseException as exc:
                if isinstance(exc, asyncio.CancelledError):
                    if span is not None:
                        span.set_attribute(sc.RUN_STATUS, "cancelled")
                    await self.emit(RunCancelled(**base, duration_ms=elapsed_ms()))
                elif isinstance(exc, Exception):
                    if span is not None:
                        span.set_attribute(sc.RUN_STATUS, "failed")
                    if isinstance(exc, QuotaExceededError):
                        await self.emit(_quota_event(exc, **base, actor=None))
                        self._count_refusal(exc)
                    await self.emit(
                        RunFailed(
                            **base,
                            error=str(exc) or type(exc).__name__,
                            error_type=type(exc).__name__,
                            duration_ms=elapsed_ms(),
                        )
                    )
                raise
            result = scope.result
            if span is not None and result is not None:
                span.set_attribute(sc.RUN_STATUS, "completed")
                span.set_attribute(sc.USAGE_INPUT_TOKENS, result.input_tokens)
                span.set_attribute(sc.USAGE_OUTPUT_TOKENS, result.output_tokens)
                if result.cost_usd is not None:
                    span.set_attribute(sc.RUN_COST_USD, result.cost_usd)
        duration = elapsed_ms()
        inst = self._instruments()
        if inst is not None:
            inst.duration.record(duration / 1000, {sc.OPERATION_NAME: "invoke_agent", sc.AGENT_NAME: agent})
        if result is not None and not self.quiet():
            await self.emit(
                RunFinished(
                    **base,
                    steps=result.steps,
                    input_tokens=result.input_tokens,
                    output_tokens=result.output_tokens,
                    cost_usd=result.cost_usd,
                    duration_ms=duration,
                )
            )

    async def chat(
        self,
        run: RunInput,
        model: object,
        request: ModelRequest,
        call: Callable[[], Awaitable[ModelTurn]],
    ) -> ModelTurn:
        """One model call as a `chat {model}` span plus the token/duration histograms."""
        inst = self._instruments()
        if self.tracer() is None and inst is None:
            return await call()
        request_model = request.model_id or getattr(model, "model_id", None) or "unknown"
        provider = provider_name(model)
        attrs = self._run_attrs(run)
        attrs.update({sc.OPERATION_NAME: "chat", sc.PROVIDER_NAME: provider, sc.REQUEST_MODEL: request_model})
        if self.capture_content:
            attrs[sc.SYSTEM_INSTRUCTIONS] = _dumps([{"type": "text", "content": request.system}])
            attrs[sc.INPUT_MESSAGES] = _dumps([self._message_json(m) for m in request.messages])
        started = time.perf_counter()
        error: str | None = None
        turn: ModelTurn | None = None
        try:
            with self._span(f"chat {request_model}", attrs, client=True) as span:
                turn = await call()
                if span is not None:
                    self._annotate_turn(span, turn, request_model)
            return turn
        except BaseException as exc:
            error = type(exc).__name__
            raise
        finally:
            if inst is not None:
                metric_attrs: dict[str, Any] = {
                    sc.OPERATION_NAME: "chat",
                    sc.PROVIDER_NAME: provider,
                    sc.REQUEST_MODEL: request_model,
                }
                if turn is not None and turn.model_id:
                    metric_attrs[sc.RESPONSE_MODEL] = turn.model_id
                if error is not None:
                    metric_attrs[sc.ERROR_TYPE] = error
                inst.duration.record(time.perf_counter() - started, metric_attrs)
                if turn is not None:
                    inst.token_usage.record(turn.usage.input_tokens, {**metric_attrs, sc.TOKEN_TYPE: "input"})
                    inst.token_usage.record(turn.usage.output_tokens, {**metric_attrs, sc.TOKEN_TYPE: "output"})

    def _annotate_turn(self, span: Span, turn: ModelTurn, request_model: str) -> None:
        usage = turn.usage
        span.set_attribute(sc.RESPONSE_MODEL, turn.model_id or request_model)
        span.set_attribute(sc.RESPONSE_FINISH_REASONS, (_finish_reason(turn),))
        span.set_attribute(sc.USAGE_INPUT_TOKENS, usage.input_tokens)
        span.set_attribute(sc.USAGE_OUTPUT_TOKENS, usage.output_tokens)
        if usage.cache_read_tokens is not None:
            span.set_attribute(sc.USAGE_CACHE_READ, usage.cache_read_tokens)
        if usage.cache_write_tokens is not None:
            span.set_attribute(sc.USAGE_CACHE_CREATION, usage.cache_write_tokens)
        if usage.reasoning_tokens is not None:
            span.set_attribute(sc.USAGE_REASONING, usage.reasoning_tokens)
        if turn.cost_usd is not None:
            span.set_attribute(sc.STEP_COST_USD, turn.cost_usd)
        if self.capture_content:
            parts: list[dict[str, Any]] = []
            if turn.text:
                parts.append({"type": "text", "content": turn.text})
            parts.extend(self._tool_call_part(c) for c in turn.tool_calls)
            message = {"role": "assistant", "parts": parts, "finish_reason": _finish_reason(turn)}
            span.set_attribute(sc.OUTPUT_MESSAGES, _dumps([message]))

    def _redacted(self, tool_name: str, args: Mapping[str, Any]) -> dict[str, Any]:
        plain = dict(args)
        return self.redactor(tool_name, plain) if self.redactor is not None else plain

    def _tool_call_part(self, call: ToolCall) -> dict[str, Any]:
        return {
            "type": "tool_call",
            "id": call.id,
            "name": call.name,
            "arguments": self._redacted(call.name, call.input),
        }

    def _message_json(self, message: Any) -> dict[str, Any]:
        parts: list[dict[str, Any]] = []
        if message.content:
            parts.append({"type": "text", "content": message.content})
        parts.extend(self._tool_call_part(c) for c in message.tool_calls)
        parts.extend(
            {"type": "tool_call_response", "id": r.tool_call_id, "response": r.content} for r in message.tool_results
        )
        return {"role": message.role, "parts": parts}

    async def execute_tool(
        self,
        run: RunInput,
        call: ToolCall,
        *,
        kind: str,
        decision: str,
        idempotency_key: str | None,
        execute: Callable[[], Awaitable[dict[str, Any]]],
    ) -> dict[str, Any]:
        """Run a tool step (`{"output": …}` or `{"error": …}`) inside an `execute_tool {tool}` span."""
        if self.tracer() is None:
            return await execute()
        attrs = self._tool_attrs(run, call, kind=kind, decision=decision, idempotency_key=idempotency_key)
        with self._span(f"execute_tool {call.name}", attrs) as span:
            outcome = await execute()
            if span is not None:
                failed = "error" in outcome
                span.set_attribute(sc.TOOL_STATUS, "failed" if failed else "executed")
                if failed:
                    span.set_attribute(sc.ERROR_TYPE, "tool_error")
                    from opentelemetry.trace import Status, StatusCode

                    span.set_status(Status(StatusCode.ERROR, str(outcome["error"])[:200]))
                elif self.capture_content:
                    span.set_attribute(sc.TOOL_CALL_RESULT, _dumps(outcome.get("output")))
            return outcome

    @contextlib.contextmanager
    def tool_span(
        self, run: RunInput, call: ToolCall, *, kind: str, decision: str, status: str | None = None
    ) -> Iterator[Span | None]:
        """An `execute_tool` span for calls that do not go through `execute_tool` (delegation, refusals)."""
        if self.tracer() is None:
            yield None
            return
        attrs = self._tool_attrs(run, call, kind=kind, decision=decision, idempotency_key=None)
        if status is not None:
            attrs[sc.TOOL_STATUS] = status
        with self._span(f"execute_tool {call.name}", attrs) as span:
            yield span

    def _tool_attrs(
        self, run: RunInput, call: ToolCall, *, kind: str, decision: str, idempotency_key: str | None
    ) -> dict[str, Any]:
        attrs = self._run_attrs(run)
        attrs.update(
            {
                sc.OPERATION_NAME: "execute_tool",
                sc.TOOL_NAME: call.name,
                sc.TOOL_CALL_ID: call.id,
                sc.TOOL_TYPE: "agent" if kind == "agent" else "function",
                sc.TOOL_KIND: kind,
                sc.POLICY_DECISION: decision,
            }
        )
        if idempotency_key:
            attrs[sc.IDEMPOTENCY_KEY] = idempotency_key
        if self.capture_content:
            attrs[sc.TOOL_CALL_ARGUMENTS] = _dumps(self._redacted(call.name, call.input))
        return attrs

    def wants_tool_status(self, status: str, *, measured: bool = True) -> bool:
        """Whether `tool_status(..., status=status)` would do anything: someone sees events, or the status is
        terminal and a meter counts it (`measured=False`: the run found no provider when it opened, see
        `unmeasured`). The loop skips the call otherwise (two per tool call)."""
        if not self.quiet():
            return True
        return measured and status in _TERMINAL_TOOL_STATUSES and self._instruments() is not None

    async def tool_status(
        self, run: RunInput, agent: str, call: ToolCall, *, kind: str, status: str, error: str | None = None
    ) -> None:
        """A tool call changed status: the `tool_call.status` event, and the counter for terminal statuses."""
        if not self.quiet():
            await self.emit(
                ToolCallStatusChanged(
                    **self._base(run, agent),
                    tool_call_id=call.id,
                    tool_name=call.name,
                    tool_kind=kind,
                    status=status,
                    error=error,
                )
            )
        if status in _TERMINAL_TOOL_STATUSES:
            inst = self._instruments()
            if inst is not None:
                inst.tool_calls.add(1, {sc.TOOL_NAME: call.name, sc.TOOL_KIND: kind, sc.TOOL_STATUS: status})

    async def await_approval(
        self,
        run: RunInput,
        agent: str,
        call: ToolCall,
        *,
        deadline: datetime | None,
        wait: Callable[[], Awaitable[ApprovalDecision]],
    ) -> ApprovalDecision:
        """The wait for a human: approval.requested, an `await_approval {tool}` span, approval.decided/expired."""
        base = self._base(run, agent)
        await self.emit(
            ApprovalRequested(
                **base, tool_call_id=call.id, tool_name=call.name, requested_by=run.actor.id, deadline=deadline
            )
        )
        attrs = self._run_attrs(run)
        attrs.update({sc.TOOL_NAME: call.name, sc.TOOL_CALL_ID: call.id, sc.APPROVAL_REQUESTED_BY: run.actor.id})
        started = time.perf_counter()
        with self._span(f"await_approval {call.name}", attrs) as span:
            decision = await wait()
            if span is not None:
                span.set_attribute(sc.APPROVAL_OUTCOME, decision.status)
                if decision.decided_by is not None:
                    span.set_attribute(sc.APPROVAL_DECIDED_BY, decision.decided_by)
                if decision.reason:
                    span.set_attribute(sc.APPROVAL_REASON, decision.reason)
        waited = time.perf_counter() - started
        wait_ms = int(waited * 1000)
        if decision.status == "expired":
            await self.emit(ApprovalExpired(**base, tool_call_id=call.id, tool_name=call.name, wait_ms=wait_ms))
        else:
            await self.emit(
                ApprovalDecided(
                    **base,
                    tool_call_id=call.id,
                    tool_name=call.name,
                    decision=decision.status,
                    decided_by=decision.decided_by,
                    reason=decision.reason,
                    wait_ms=wait_ms,
                )
            )
        inst = self._instruments()
        if inst is not None:
            outcome = {sc.APPROVAL_OUTCOME: decision.status, sc.TOOL_NAME: call.name}
            inst.approvals.add(1, outcome)
            inst.approval_wait.record(waited, outcome)
        return decision

    async def delegated(self, run: RunInput, agent: str, call: ToolCall, *, to_agent: str, task: str) -> None:
        """A run handed a task to another agent."""
        await self.emit(
            Delegated(**self._base(run, agent), tool_call_id=call.id, to_agent=to_agent, task_length=len(task))
        )

    async def retrieved(
        self,
        run: RunInput,
        agent: str | None,
        *,
        query_length: int,
        count: int,
        source: str | None = None,
        ids: Sequence[str] = (),
        scores: Sequence[float] = (),
    ) -> None:
        """A retrieval ran (inject mode or the knowledge tool): the query's length, chunk ids and scores, no text."""
        await self.emit(
            Retrieved(
                **self._base(run, agent),
                query_length=query_length,
                count=count,
                source=source,
                ids=tuple(ids),
                scores=tuple(float(s) for s in scores),
            )
        )

    async def budget_threshold(self, run: RunInput, agent: str | None, crossing: ThresholdCrossing) -> None:
        """A model step's usage crossed a budget threshold (raised once per period)."""
        await self.emit(
            BudgetThresholdReached(
                **self._base(run, agent),
                scope=crossing.scope,
                key=crossing.key,
                unit=crossing.unit,
                threshold=crossing.threshold,
                used=crossing.used,
                limit=crossing.limit,
                period=crossing.period,
            )
        )


@dataclass
class RunScope:
    """Handed to the loop by `Telemetry.run`; the loop sets `result` when the run completes."""

    result: LoopResult | None = field(default=None)


def _quota_event(
    exc: QuotaExceededError,
    *,
    run_id: str | None,
    thread_id: str | None,
    actor: Actor | None,
    agent: str | None,
    actor_id: str | None = None,
    tenant_ref: str | None = None,
) -> QuotaExceeded:
    detail = exc.detail
    return QuotaExceeded(
        run_id=run_id,
        thread_id=thread_id,
        actor_id=actor.id if actor is not None else (actor_id or ""),
        tenant_ref=actor.tenant_ref if actor is not None else tenant_ref,
        agent=agent,
        scope=str(detail["scope"]) if "scope" in detail else None,
        key=str(detail["key"]) if "key" in detail else None,
        message=str(exc),
    )


def _finish_reason(turn: ModelTurn) -> str:
    # Adapters do not surface the vendor's finish reason; a turn with tool calls ended to call them.
    return "tool_calls" if turn.tool_calls else "stop"


def _dumps(value: Any) -> str:
    return json.dumps(value, default=str, ensure_ascii=False)
