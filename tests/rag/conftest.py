"""Fixtures of the retrieval tests: one factory per vector store, so the contract suite runs on each."""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from agora_agent.rag import MemoryVectorStore, VectorStore

StoreFactory = Callable[[], Awaitable[VectorStore]]


async def _memory(request: Any) -> AsyncIterator[StoreFactory]:
    async def make() -> VectorStore:
        return MemoryVectorStore()

    yield make


STORE_KINDS = ["memory"]


@pytest.fixture(params=STORE_KINDS)
async def store_factory(request: pytest.FixtureRequest) -> AsyncIterator[StoreFactory]:
    """Builds an empty store of the parametrised kind (cleaned up afterwards)."""
    kind = request.param
    if kind == "memory":
        async for factory in _memory(request):
            yield factory
