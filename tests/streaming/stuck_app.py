"""The app process A of the cross-process recovery test: its run streams a sentence, then a tool that
never returns (so the run is mid-tool when A is SIGKILLed). Environment: AGORA_TEST_STORE (a SQLite or
PostgreSQL URL shared with process B), AGORA_TEST_REDIS_PREFIX (stream through Redis under this prefix)."""

from __future__ import annotations

import asyncio
import os

from fastapi import FastAPI

from agora_agent import AgentConfig, HeaderActorResolver, ToolContext, tool
from agora_agent.streaming.redis import RedisTokenSink
from agora_agent.testing import FakeModel, ScriptedTurn, ToolCallRequest, sequence_script
from agora_agent.web import create_app as create_agent_app

LEASE = {"run_lease_interval": 0.2, "run_lease_ttl": 1.0}  # a dead owner is noticed within ~1 s


@tool
async def stuck(ctx: ToolContext) -> str:
    """Never returns: the process dies while it runs."""
    await asyncio.Event().wait()
    return "never"


def config(store: str | None = None, redis_prefix: str | None = None) -> AgentConfig:
    """The agent both processes serve, on the shared store (and Redis stream, when a prefix is given)."""
    script = sequence_script(
        ScriptedTurn(text="Working on it. ", tool_calls=[ToolCallRequest("stuck", {})]),
        ScriptedTurn(text="never reached"),
    )
    prefix = redis_prefix or os.environ.get("AGORA_TEST_REDIS_PREFIX")
    return AgentConfig(
        sink=RedisTokenSink(prefix=prefix) if prefix else None,
        model=FakeModel(script),
        tools=[stuck],
        store=store or os.environ["AGORA_TEST_STORE"],
        actor_resolver=HeaderActorResolver(),
        **LEASE,
    )


def create_app() -> FastAPI:
    """uvicorn factory (`--factory`)."""
    return create_agent_app(config())
