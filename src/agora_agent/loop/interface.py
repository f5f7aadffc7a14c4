"""The loop's interface: its input (`RunInput`), dependencies (`LoopDeps`), hooks (`LoopHooks`) and result."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from agora_agent._frozen import fast_init
from agora_agent.actors import Actor
from agora_agent.agents import AgentDefinition
from agora_agent.genui.present import PresentationErrorHandler
from agora_agent.genui.registry import ComponentSource
from agora_agent.governance.pricing import PricingStore
from agora_agent.governance.quota import QuotaStore
from agora_agent.media.prepare import AttachmentPreparer
from agora_agent.messages import Attachment
from agora_agent.models.base import ModelProvider
from agora_agent.observability.telemetry import Telemetry
from agora_agent.rag.inject import InjectRetrieval
from agora_agent.stores.base import AgentStore
from agora_agent.streaming.sink import SinkWriter
from agora_agent.tools.registry import ToolRegistry
from agora_agent.tools.retry import TransientRetry
from agora_agent.tools.spec import RolesPolicy

if TYPE_CHECKING:
    from agora_agent.loop.history import HistoryCache

__all__ = [
    "HANDED_OVER",
    "ApprovalDecision",
    "LoopDeps",
    "LoopHooks",
    "LoopResult",
    "PendingApproval",
    "Redactor",
    "RunInput",
    "effect",
    "handed_over",
]

T = TypeVar("T")
HANDED_OVER = "agora: the run is executed by another process now"
"""The message a durable runner cancels an execution with when another process owns its run (fencing)."""
Redactor = Callable[[str, dict[str, Any]], dict[str, Any]]


@fast_init
@dataclass(frozen=True, kw_only=True, slots=True)
class RunInput:
    """One run's input. `day` (UTC `YYYY-MM-DD`) is stamped once by the caller."""

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
    ui_capabilities: frozenset[str] | None = None  # component names the client draws (None: all)
    quota_checked: bool = False
    """The caller checked the budget just before starting the run in this process (`AgentService.chat` with the
    inline runner): the loop's `quota:check` step is then a no-op. A durable run checks again when it runs."""


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
    telemetry: Telemetry = field(default_factory=Telemetry)
    retrieval: InjectRetrieval | None = None  # inject mode: the `retrieve` step runs when set
    history: HistoryCache | None = None  # threads' rendered history kept between runs (the service's)
    components: ComponentSource | None = None  # a registry, or a function of the run's actor
    on_presentation_error: PresentationErrorHandler | None = None
    attachments: AttachmentPreparer | None = None


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
    # The requester as resolved when they decided (their CURRENT roles): an approved action is
    # re-authorized with it, so roles revoked while the run was parked are honoured. None: the
    # identity captured at chat start is used.
    requester: Actor | None = None


class LoopHooks(Protocol):
    """The seam between the loop and its runner."""

    def step(self, name: str, fn: Callable[[], Awaitable[T]]) -> Awaitable[T]:
        """Run `fn` as the step `name` and return its result (awaited); an `async def` is the usual shape."""
        ...

    async def await_approval(self, pending: PendingApproval) -> ApprovalDecision: ...

    async def open_sink(self) -> SinkWriter: ...

    async def run_agent(self, agent_name: str, task: str) -> str: ...

    # Optional: `async def tool_attempt(self, tool_call_id: str) -> int`, called inside a tool's step
    # before the tool runs — which attempt this is (> 1 when a durable recovery re-runs an interrupted
    # tool). Hooks without it run every tool as attempt 1.
    # Optional: `async def effect(self, name: str, fn: Callable[[], Awaitable[object]]) -> None` — see
    # `effect` below. Hooks without it run effects as steps.


def effect(hooks: LoopHooks, name: str, fn: Callable[[], Awaitable[object]]) -> Awaitable[object]:
    """Run a write whose result the loop does not need and which is safe to run twice (written once by a
    deterministic id, or setting the same values again), such as the `persist:*` audit and message writes.

    Such a write needs no checkpoint of its own: a durable runner skips it on replay when a later step is
    recorded (it committed before that step began) and runs it again otherwise, so a run pays one
    checkpoint per model call and per tool, not one per write. The name keeps its place in the step order
    (a failed write is checkpointed under it, so a replay fails the same way). Hooks without an `effect`
    method run it as a step. Await what it returns (the hooks' own awaitable: no coroutine layer here)."""
    return effect_of(hooks)(name, fn)


def effect_of(hooks: LoopHooks) -> Callable[[str, Callable[[], Awaitable[object]]], Awaitable[object]]:
    """What `effect(hooks, ...)` calls: the hooks' `effect`, else their `step` (a run looks it up once)."""
    run_effect: Callable[[str, Callable[[], Awaitable[object]]], Awaitable[object]] | None = getattr(
        hooks, "effect", None
    )
    return hooks.step if run_effect is None else run_effect


@dataclass(kw_only=True)
class LoopResult:
    text: str
    steps: int
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float | None = None


def handed_over(exc: BaseException) -> bool:
    """Whether `exc` stops this execution because another process runs the run now (a durable runner
    whose lease lapsed while it was alive). The run is not cancelled, only no longer this execution's:
    clean-ups that write (the audit row of an interrupted tool, the release of a reservation) are skipped,
    since the new owner goes on from the same rows."""
    return isinstance(exc, asyncio.CancelledError) and HANDED_OVER in exc.args
