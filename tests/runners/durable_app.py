"""The app the durable kill tests run under uvicorn (one process per start, killed with SIGKILL).

Environment: AGORA_TEST_STORE (SQLite/PostgreSQL URL), AGORA_TEST_REDIS_PREFIX (stream through Redis
under this key prefix), AGORA_TEST_FAILOVER_AFTER (`DurableConfig.failover_after`), AGORA_TEST_LEDGER
(a directory the tools write their side effects to, one file per effect, named by idempotency key and
attempt), AGORA_EXECUTOR_ID. Each process also logs the lifecycle events it emits (`events-<pid>.log`).
Markers in the ledger directory tell the test where a run is, so it can kill the process there.
"""

from __future__ import annotations

import asyncio
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import FastAPI

from agora_agent import AgentConfig, AgentService, HeaderActorResolver, ToolContext, tool
from agora_agent.messages import ModelRequest, ModelTurn, ToolCall, Usage
from agora_agent.models.base import TextCallback
from agora_agent.observability.events import AgentEvent
from agora_agent.runners.durable import DurableConfig
from agora_agent.web import agent_router

LEDGER = Path(os.environ.get("AGORA_TEST_LEDGER", "."))


def mark(name: str) -> None:
    (LEDGER / name).write_text(str(os.getpid()))


class SlowModel:
    """Streams its text a word at a time, slowly enough to be killed mid-sentence."""

    model_id = "slow-model"

    async def run_turn(self, request: ModelRequest, on_text: TextCallback) -> ModelTurn:
        last = request.messages[-1]
        topic = next(m.content for m in reversed(request.messages) if m.role == "user")
        if last.role == "tool":
            await on_text("finished")
            return ModelTurn(text="finished", usage=Usage(input_tokens=2, output_tokens=1))
        if "stream" in topic:
            words = [f"word{i} " for i in range(30)]
            for i, word in enumerate(words):
                await on_text(word)
                if i == 5:
                    mark("streaming")
                await asyncio.sleep(0.05)
            return ModelTurn(text="".join(words), usage=Usage(input_tokens=1, output_tokens=30))
        name, args = ("slow_write", {}) if "tool" in topic else ("pay", {"amount": 5})
        return ModelTurn(text="working ", tool_calls=(ToolCall(id="c1", name=name, input=args),))


@tool
async def slow_write(ctx: ToolContext) -> dict[str, object]:
    """Write one ledger row; the first attempt hangs so the test can kill the process inside the tool."""
    mark(f"tool-attempt-{ctx.attempt}")
    if ctx.attempt == 1:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            mark("tool-attempt-1-stopped")  # this process let go of the run (cancel, shutdown, handed over)
            raise
    (LEDGER / f"effect-{ctx.idempotency_key}").write_text(str(ctx.attempt))
    return {"attempt": ctx.attempt, "key": ctx.idempotency_key}


@tool(kind="action", roles=["user"])
def pay(amount: int, ctx: ToolContext) -> str:
    """Pay; one ledger file per execution."""
    (LEDGER / f"effect-{ctx.idempotency_key}-{ctx.attempt}").write_text(str(amount))
    return f"paid {amount}"


def record_event(event: AgentEvent) -> None:
    """Every lifecycle event this process emits, one line each: `<kind> <run id>` (events-<pid>.log)."""
    with (LEDGER / f"events-{os.getpid()}.log").open("a") as log:
        log.write(f"{event.kind} {event.run_id}\n")


def create_app() -> FastAPI:
    sink = None
    if os.environ.get("AGORA_TEST_REDIS_PREFIX"):
        from agora_agent.streaming.redis import RedisTokenSink

        sink = RedisTokenSink("redis://127.0.0.1:6379/0", prefix=os.environ["AGORA_TEST_REDIS_PREFIX"])
    config = AgentConfig(
        sink=sink,
        model=SlowModel(),
        tools=[slow_write, pay],
        store=os.environ["AGORA_TEST_STORE"],
        actor_resolver=HeaderActorResolver(),
        on_event=record_event,
        durable=DurableConfig(
            executor_id=os.environ.get("AGORA_EXECUTOR_ID", "kill-test"),
            failover_after=float(os.environ.get("AGORA_TEST_FAILOVER_AFTER", "15")),
        ),
    )
    service = AgentService.from_config(config)

    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        async with service:
            mark(f"up-{os.getpid()}")
            yield
        if sink is not None:
            await sink.aclose()

    app = FastAPI(lifespan=lifespan)
    app.include_router(agent_router(service))
    return app
