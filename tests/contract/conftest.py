"""Store and read-model factories the contract suites run over.

`STORE_FACTORIES` maps a name to a factory returning an async context manager that yields a fresh, empty
`AgentStore`. A factory takes no argument, or one: the pytest `FixtureRequest` (to reach fixtures such as
`postgres_url`, or to skip with `require_server`).

The SQL stores plug in from `tests/contract/sql_factories.py` (owned by the SQL store) when it exists:
- `SQL_STORE_FACTORIES`: more store factories (same shape as above);
- `QUERIES_FACTORIES` (optional): name -> `callable(store, pricing) -> GovernanceQueries`;
- `PRICING_FACTORIES` (optional): name -> `callable(store) -> PricingStore` (default: `MemoryPricingStore`).
A store without a read-model factory is skipped by the read-model suite.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from typing import Any

import pytest

from agora_agent.governance.pricing import MemoryPricingStore, PricingStore
from agora_agent.governance.queries import GovernanceQueries
from agora_agent.stores.base import AgentStore
from agora_agent.stores.memory import MemoryAgentStore

StoreFactory = Callable[..., AbstractAsyncContextManager[AgentStore]]
QueriesFactory = Callable[[AgentStore, PricingStore | None], GovernanceQueries]
PricingFactory = Callable[[AgentStore], PricingStore]


@asynccontextmanager
async def memory_store() -> AsyncIterator[AgentStore]:
    yield MemoryAgentStore()


def memory_queries(store: AgentStore, pricing: PricingStore | None) -> GovernanceQueries:
    from agora_agent.stores.memory_queries import MemoryGovernanceQueries

    assert isinstance(store, MemoryAgentStore)
    return MemoryGovernanceQueries(store, pricing)


STORE_FACTORIES: dict[str, StoreFactory] = {"memory": memory_store}
QUERIES_FACTORIES: dict[str, QueriesFactory] = {"memory": memory_queries}
PRICING_FACTORIES: dict[str, PricingFactory] = {}

try:
    _sql: Any = importlib.import_module("tests.contract.sql_factories")
except ModuleNotFoundError as exc:  # only "the file is not there yet"; a broken import must fail loudly
    if exc.name != "tests.contract.sql_factories":
        raise
else:
    STORE_FACTORIES.update(_sql.SQL_STORE_FACTORIES)
    QUERIES_FACTORIES.update(getattr(_sql, "QUERIES_FACTORIES", {}))
    PRICING_FACTORIES.update(getattr(_sql, "PRICING_FACTORIES", {}))


def open_store(name: str, request: pytest.FixtureRequest) -> AbstractAsyncContextManager[AgentStore]:
    """Call the named factory, passing `request` when it takes an argument."""
    factory = STORE_FACTORIES[name]
    if inspect.signature(factory).parameters:
        return factory(request)
    return factory()


@pytest.fixture(params=sorted(STORE_FACTORIES))
async def store(request: pytest.FixtureRequest) -> AsyncIterator[AgentStore]:
    """A fresh, empty store of each implementation."""
    async with open_store(request.param, request) as s:
        yield s


@pytest.fixture(params=sorted(STORE_FACTORIES))
def queries_name(request: pytest.FixtureRequest) -> str:
    """The implementation the read-model suite runs on (skipped when it has no read-model yet)."""
    name: str = request.param
    if name not in QUERIES_FACTORIES:
        pytest.skip(f"no read-model factory for store {name!r} in tests/contract/sql_factories.py")
    return name


def pricing_for(name: str, store: AgentStore) -> PricingStore:
    """The pricing store the read-model of `name` is priced against (memory unless the SQL file says so)."""
    factory = PRICING_FACTORIES.get(name)
    return factory(store) if factory is not None else MemoryPricingStore()
