"""Inject mode: retrieve once per run for the user's text, append
the context block to the system prompt, and keep the retrieval in the audit as a synthetic `retrieve` call.

The loop calls `retrieve_into_system` once, right after opening the sink. Everything with a side effect
happens inside ONE durable step named `retrieve`: the filter is computed from the run's actor there (so a
replay uses the checkpointed passages and never re-derives a filter), the store is queried with it, and the
audit row is written. A filter hook that raises fails the step and therefore the run: there is no
unfiltered fallback anywhere.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, TypeVar

from agora_agent.errors import ConfigurationError, ConflictError
from agora_agent.governance.retrieval_stats import RETRIEVE_TOOL
from agora_agent.rag.access import RetrievalFilter, acl_filter, resolve_filter
from agora_agent.rag.retrievers import Retriever
from agora_agent.rag.types import Passage
from agora_agent.records import ToolCallRecord
from agora_agent.stores.base import AgentStore
from agora_agent.streaming.frames import ToolFrame

if TYPE_CHECKING:
    from agora_agent.loop.interface import LoopHooks, RunInput
    from agora_agent.observability.telemetry import Telemetry
    from agora_agent.streaming.sink import SinkWriter

__all__ = [
    "CONTEXT_INSTRUCTION",
    "RETRIEVE_STEP",
    "RETRIEVE_TOOL",
    "InjectRetrieval",
    "context_block",
    "retrieval_call_id",
    "retrieve_into_system",
]

T = TypeVar("T")

RETRIEVE_STEP = "retrieve"
"""The durable step's name (stable across versions, like every step name)."""
CONTEXT_INSTRUCTION = (
    "Use the retrieved context above to answer when relevant, and cite sources by their bracket number."
)


@dataclass(frozen=True, kw_only=True, slots=True)
class InjectRetrieval:
    """What the loop needs for inject mode: the retriever, how many passages, and the filter hook
    (default `acl_filter`: the actor's tenant + shared corpus, the actor's roles + everyone)."""

    retriever: Retriever
    top_k: int = 5
    filter: RetrievalFilter | None = acl_filter
    min_score: float | None = None

    def __post_init__(self) -> None:
        if self.top_k < 1:
            raise ConfigurationError(f"retrieval_top_k must be at least 1 (got {self.top_k})")


def _fence(text: str) -> str:
    # A passage must not be able to close the block and speak as the system prompt.
    return text.replace("<retrieved_context>", "<retrieved-context>").replace(
        "</retrieved_context>", "</retrieved-context>"
    )


def context_block(passages: Sequence[Passage]) -> str:
    """`\\n\\n<retrieved_context>\\n[1] (source) text\\n\\n[2] text\\n</retrieved_context>\\n` + the
    instruction; the `(source) ` label only when a passage has one; no passages -> `""` (prompt unchanged)."""
    if not passages:
        return ""
    items = [f"[{n}] {f'({_fence(p.source)}) ' if p.source else ''}{_fence(p.text)}" for n, p in enumerate(passages, 1)]
    return "\n\n<retrieved_context>\n" + "\n\n".join(items) + "\n</retrieved_context>\n" + CONTEXT_INSTRUCTION


def retrieval_call_id(run_id: str) -> str:
    """The synthetic tool call's id: one per run."""
    return f"retrieve-{run_id}"


def audit_output(passages: Sequence[Passage]) -> dict[str, Any]:
    """What the audit keeps: which chunks reached the model, with scores (not the text: the chunk id
    points at it, and the audit row outlives a document's removal)."""
    return {
        "passages": [
            {"id": p.id, "score": round(p.score, 6), **({"source": p.source} if p.source else {})} for p in passages
        ]
    }


async def _retrieve_and_record(
    retrieval: InjectRetrieval,
    store: AgentStore,
    run: RunInput,
    telemetry: Telemetry | None = None,
    agent: str | None = None,
) -> tuple[Passage, ...]:
    started = time.perf_counter()
    scope = await resolve_filter(retrieval.filter, run.actor)
    passages = tuple(
        await retrieval.retriever.retrieve(
            run.user_text, top_k=retrieval.top_k, filter=scope, min_score=retrieval.min_score
        )
    )
    call_id = retrieval_call_id(run.run_id)
    if await store.get_tool_call(run.run_id, call_id) is None:
        now = datetime.now(UTC)
        record = ToolCallRecord(
            id=call_id,
            run_id=run.run_id,
            thread_id=run.thread_id,
            message_id=None,
            tool_name=RETRIEVE_TOOL,
            tool_type="read",
            input={"query": run.user_text, "topK": retrieval.top_k},
            output=audit_output(passages),
            status="executed",
            actor_ref=run.actor.id,
            tenant_ref=run.actor.tenant_ref,
            policy_decision="allowed",
            idempotency_key=f"{run.run_id}:{call_id}",
            execution_ms=int((time.perf_counter() - started) * 1000),
            created_at=now,
            executed_at=now,
        )
        # A re-run of this step after a crash between the write and the checkpoint finds the row there.
        with contextlib.suppress(ConflictError):
            await store.record_tool_call(record)
    if telemetry is not None:  # inside the step: a durable replay returns the memo and raises no second event
        await telemetry.retrieved(
            run,
            agent,
            query_length=len(run.user_text),
            count=len(passages),
            source="inject",
            ids=[p.id for p in passages],
            scores=[p.score for p in passages],
        )
    return passages


async def retrieve_into_system(
    retrieval: InjectRetrieval,
    *,
    store: AgentStore,
    run: RunInput,
    hooks: LoopHooks,
    writer: SinkWriter,
    system: str,
    telemetry: Telemetry | None = None,
    agent: str | None = None,
) -> str:
    """Run the `retrieve` step and return the system prompt with the context block appended.

    The stream gets one `tool` frame (name `retrieve`, status `executed`) carrying chunk ids and scores only,
    and `telemetry` one `Retrieved` event (the query's length, chunk ids and scores; never text).
    """
    step: Callable[[], Awaitable[tuple[Passage, ...]]] = lambda: _retrieve_and_record(  # noqa: E731
        retrieval, store, run, telemetry, agent
    )
    passages = await hooks.step(RETRIEVE_STEP, step)
    await writer.write(
        ToolFrame(
            tool_call_id=retrieval_call_id(run.run_id),
            name=RETRIEVE_TOOL,
            kind="read",
            status="executed",
            input={"query": run.user_text},
            output=audit_output(passages),
        )
    )
    return system + context_block(passages)
