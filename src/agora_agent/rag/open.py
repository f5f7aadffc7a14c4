"""Build an embedder and a vector store from short specs — what `agora-agent rag …` and the demo use.

- embedder: `hashing` (64-d), `hashing:256`, `local` (all-MiniLM-L6-v2, the rag-local extra) or
  `openai:<model>` (OPENAI_API_KEY / OPENAI_BASE_URL, like the chat adapter);
- store: a SQLite URL (the agent store's, `sqlite:///agent.db`: the chunks go to `agent-rag.db` beside it) or a
  PostgreSQL URL (pgvector).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from agora_agent.errors import ConfigurationError
from agora_agent.rag.embedders import Embedder, HashingEmbedder
from agora_agent.rag.store import VectorStore

__all__ = ["OpenedStore", "embedder_from_spec", "open_store"]


def embedder_from_spec(spec: str) -> Embedder:
    """`hashing[:dims]`, `local` or `openai:<model>`; anything else is a `ConfigurationError`."""
    kind, _, arg = spec.partition(":")
    if kind == "hashing":
        try:
            return HashingEmbedder(int(arg) if arg else 64)
        except ValueError:
            raise ConfigurationError(f"hashing dimensions must be a number, not {arg!r}") from None
    if kind == "local" and not arg:
        from agora_agent.rag.local import LocalEmbedder

        local = LocalEmbedder()
        local.load()  # fail now, with the install hint, rather than mid-ingest
        return local
    if kind == "openai" and arg:
        from agora_agent.rag.embedders import OpenAIEmbedder

        return OpenAIEmbedder(arg)
    raise ConfigurationError(f"unknown embedder {spec!r}: use hashing[:dims], local or openai:<model>")


@dataclass
class OpenedStore:
    """A store and what to close afterwards."""

    store: VectorStore
    _closer: Any = None

    async def close(self) -> None:
        if self._closer is not None:
            await self._closer()


async def open_store(url: str, *, dimension: int | None = None, table: str = "agent_rag_chunks") -> OpenedStore:
    """The vector store at `url`. PostgreSQL needs `dimension` (the embedder's) and gets its table migrated."""
    from sqlalchemy.engine import make_url
    from sqlalchemy.exc import ArgumentError

    try:
        backend = make_url(url).get_backend_name()
    except ArgumentError:
        raise ConfigurationError(f"not a database URL: {url!r}") from None
    if backend == "sqlite":
        from agora_agent.rag.sqlite_store import SqliteVectorStore

        sqlite = SqliteVectorStore.for_url(url, table=table)
        return OpenedStore(sqlite, sqlite.close)
    if backend == "postgresql":
        from agora_agent.rag.pgvector_store import PgVectorStore
        from agora_agent.stores.sql import create_engine_from_url

        if not dimension:
            raise ConfigurationError("a pgvector store needs the embedder's dimension")
        engine = create_engine_from_url(url)
        return OpenedStore(PgVectorStore(engine, table=table, dimension=dimension, ensure_schema=True), engine.dispose)
    raise ConfigurationError(f"no vector store for {backend!r} URLs: use sqlite:///… or postgresql+asyncpg://…")
