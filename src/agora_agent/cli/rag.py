"""`agora-agent rag ingest | search | remove | db upgrade`: manage the knowledge base from the shell."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from agora_agent.cli._db_url import UrlOption, require_url, run_async
from agora_agent.errors import ConfigurationError

# `agora_agent.rag` (every retriever and store) is imported by the commands when they run, not to register them.

__all__ = ["register"]

console = Console()
rag_app = typer.Typer(help="Ingest, search and remove knowledge-base documents (retrieval).", no_args_is_help=True)

EmbedderOption = Annotated[
    str,
    typer.Option(
        "--embedder", help="hashing[:dims], local (rag-local extra) or openai:<model>; use the same one to search."
    ),
]
TenantOption = Annotated[
    str | None, typer.Option("--tenant", help="The tenant the documents belong to / you search as.")
]
RolesOption = Annotated[str | None, typer.Option("--roles", help="Comma-separated roles (who may read / who you are).")]


def _files(paths: list[Path]) -> list[tuple[Path, str]]:
    """Every file under the given paths, with its document id (the path relative to the argument's parent)."""
    found: list[tuple[Path, str]] = []
    for path in paths:
        if not path.exists():
            raise ConfigurationError(f"no such file or directory: {path}")
        if path.is_dir():
            found += [(f, f.relative_to(path.parent).as_posix()) for f in sorted(path.rglob("*")) if f.is_file()]
        else:
            found.append((path, path.name))
    return found


def _roles(value: str | None) -> list[str] | None:
    return [r.strip() for r in value.split(",") if r.strip()] if value else None


async def _ingest(
    url: str,
    paths: list[Path],
    tenant: str | None,
    shared: bool,
    roles: str | None,
    embedder_spec: str,
    chunk_size: int,
    overlap: int,
    max_bytes: int,
) -> int:
    from agora_agent.rag.access import SHARED
    from agora_agent.rag.extract import guess_content_type
    from agora_agent.rag.open import embedder_from_spec, open_store
    from agora_agent.rag.uploads import UploadedFile, ingest_files

    if shared == (tenant is not None):
        raise ConfigurationError("say whose documents these are: --tenant TENANT or --shared (every tenant)")
    files = _files(paths)
    embedder = embedder_from_spec(embedder_spec)
    opened = await open_store(url, dimension=embedder.dimensions)
    skipped = ingested = 0
    try:
        with Progress(
            TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(), console=console
        ) as progress:
            task = progress.add_task("ingesting", total=len(files))
            for path, doc_id in files:
                progress.update(task, description=f"ingesting {doc_id}")
                (outcome,) = await ingest_files(
                    [
                        UploadedFile(
                            document_id=doc_id,
                            data=path.read_bytes(),
                            content_type=guess_content_type(path),
                            source=doc_id,
                        )
                    ],
                    embedder=embedder,
                    store=opened.store,
                    tenant_ref=SHARED if shared else tenant,
                    allowed_roles=_roles(roles),
                    chunk_size=chunk_size,
                    overlap=overlap,
                    max_bytes=max_bytes,
                )
                if outcome.status == "ingested":
                    ingested += 1
                else:
                    skipped += 1
                    detail = f" ({outcome.detail})" if outcome.detail else ""
                    progress.console.print(f"[yellow]skipped[/yellow] {doc_id}: {outcome.reason}{detail}")
                progress.advance(task)
    finally:
        await opened.close()
    where = getattr(opened.store, "path", None)  # SQLite: the chunks' own file beside the agent store's
    into = f", into {where}" if where is not None else ""
    console.print(f"ingested {ingested} file(s), skipped {skipped}, embedder {embedder.model_id}{into}")
    return 0


async def _search(
    url: str, query: str, tenant: str | None, roles: str | None, embedder_spec: str, top_k: int, mode: str
) -> None:
    from agora_agent.actors import Actor
    from agora_agent.rag.access import acl_filter
    from agora_agent.rag.open import embedder_from_spec, open_store
    from agora_agent.rag.retrievers import EmbeddingRetriever, HybridRetriever, KeywordRetriever, Retriever

    embedder = embedder_from_spec(embedder_spec)
    opened = await open_store(url, dimension=embedder.dimensions)
    try:
        retrievers: dict[str, Retriever] = {
            "vector": EmbeddingRetriever(embedder, opened.store),
            "keyword": KeywordRetriever(opened.store),
        }
        if mode not in (*retrievers, "hybrid"):
            raise ConfigurationError(f"unknown mode {mode!r}: vector, keyword or hybrid")
        retriever = retrievers[mode] if mode != "hybrid" else HybridRetriever(list(retrievers.values()))
        scope = acl_filter(Actor("cli", roles=tuple(_roles(roles) or ()), tenant_ref=tenant))
        passages = await retriever.retrieve(query, top_k=top_k, filter=scope)
    finally:
        await opened.close()
    if not passages:
        console.print("no passage found")
    for n, p in enumerate(passages, 1):
        preview = " ".join(p.text.split())[:160]
        console.print(f"[{n}] {p.id}  score {p.score:.4f}  {p.source or ''}\n    {preview}", highlight=False)


async def _remove(url: str, documents: list[str], where: list[str]) -> None:
    from agora_agent.rag.open import open_store

    if bool(documents) == bool(where):
        raise ConfigurationError("give document ids, or --where key=value filters (not both)")
    opened = await open_store(url, dimension=1)
    try:
        if documents:
            removed = sum([await opened.store.remove(d) for d in documents])
        else:
            pairs = [w.partition("=") for w in where]
            if any(not k or not sep for k, sep, _ in pairs):
                raise ConfigurationError("--where takes key=value")
            removed = await opened.store.remove_where({k: v for k, _, v in pairs})
    finally:
        await opened.close()
    console.print(f"removed {removed} chunk(s)")


@rag_app.command("ingest")
def ingest_command(
    paths: Annotated[list[Path], typer.Argument(help="Files or directories (read recursively).")],
    url: UrlOption = None,
    tenant: TenantOption = None,
    shared: Annotated[bool, typer.Option("--shared", help="Readable by every tenant.")] = False,
    roles: RolesOption = None,
    embedder: EmbedderOption = "hashing",
    chunk_size: Annotated[int, typer.Option(help="Characters per chunk.")] = 800,
    overlap: Annotated[int, typer.Option(help="Characters shared by neighbouring chunks.")] = 100,
    max_bytes: Annotated[int, typer.Option(help="Skip files larger than this.")] = 20 * 1024 * 1024,
) -> None:
    """Chunk, embed and store files (text, Markdown, HTML, CSV, JSON, PDF); re-ingesting replaces a document."""
    run_async(_ingest(require_url(url), paths, tenant, shared, roles, embedder, chunk_size, overlap, max_bytes))


@rag_app.command("search")
def search_command(
    query: Annotated[str, typer.Argument(help="What to look for.")],
    url: UrlOption = None,
    tenant: TenantOption = None,
    roles: RolesOption = None,
    embedder: EmbedderOption = "hashing",
    top_k: Annotated[int, typer.Option("--top-k", min=1, max=100)] = 5,
    mode: Annotated[str, typer.Option(help="vector, keyword or hybrid.")] = "hybrid",
) -> None:
    """Search as a tenant and roles would (the same access filter the agent applies)."""
    run_async(_search(require_url(url), query, tenant, roles, embedder, top_k, mode))


@rag_app.command("remove")
def remove_command(
    documents: Annotated[list[str] | None, typer.Argument(help="Document ids to remove.")] = None,
    url: UrlOption = None,
    where: Annotated[list[str] | None, typer.Option("--where", help="key=value; every chunk matching all.")] = None,
) -> None:
    """Remove documents by id, or every chunk matching --where filters (an empty filter is refused)."""
    run_async(_remove(require_url(url), documents or [], where or []))


db_app = typer.Typer(help="The pgvector chunk table (PostgreSQL).", no_args_is_help=True)


@db_app.command("upgrade")
def db_upgrade_command(
    url: UrlOption = None,
    dimension: Annotated[int, typer.Option(help="The embedder's vector length (384 for local).")] = 384,
    metric: Annotated[str, typer.Option(help="cosine, l2 or inner.")] = "cosine",
    table: Annotated[str, typer.Option(help="Table name.")] = "agent_rag_chunks",
) -> None:
    """Create the pgvector extension, table and HNSW index (its own Alembic chain)."""

    async def upgrade() -> None:
        from agora_agent.rag.pg_schema import current_pgvector, upgrade_pgvector
        from agora_agent.stores.sql import create_engine_from_url

        engine = create_engine_from_url(require_url(url))
        try:
            await upgrade_pgvector(engine, table=table, dimension=dimension, metric=metric)
            console.print(f"{table}: revision {await current_pgvector(engine, table=table)}")
        finally:
            await engine.dispose()

    run_async(upgrade())


rag_app.add_typer(db_app, name="db")


def register(app: typer.Typer) -> None:
    """Add the `rag` command group."""
    app.add_typer(rag_app, name="rag")
