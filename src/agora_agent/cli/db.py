"""`agora-agent db upgrade | downgrade | current`: the packaged Alembic migrations, no alembic.ini needed."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

import typer
from rich.console import Console

from agora_agent.cli._db_url import UrlOption, require_url, run_async
from agora_agent.errors import StoreError

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

# SQLAlchemy and Alembic are imported by the commands when they run, not to register them (`--help` stays fast).

__all__ = ["register"]

console = Console()
db_app = typer.Typer(help="Create and migrate the agora-agent tables (SQLite or PostgreSQL).", no_args_is_help=True)


async def _upgrade(url: str, revision: str) -> None:
    from agora_agent.stores.sql.engine import create_engine_from_url, mask_url
    from agora_agent.stores.sql.migrate import current, upgrade

    engine = create_engine_from_url(url)
    try:
        before = await _current_or_fail(url, engine)
        await upgrade(engine, revision)
        after = await current(engine)
    finally:
        await engine.dispose()
    if before == after:
        console.print(f"{mask_url(url)} is already at revision {after}")
    else:
        console.print(f"upgraded {mask_url(url)}: {before or 'empty'} -> {after}")


async def _downgrade(url: str, revision: str) -> None:
    from agora_agent.stores.sql.engine import create_engine_from_url, mask_url
    from agora_agent.stores.sql.migrate import current, downgrade

    engine = create_engine_from_url(url)
    try:
        before = await _current_or_fail(url, engine)
        await downgrade(engine, revision)
        after = await current(engine)
    finally:
        await engine.dispose()
    console.print(f"downgraded {mask_url(url)}: {before or 'empty'} -> {after or 'empty (no agora-agent tables)'}")


async def _current(url: str) -> None:
    from agora_agent.stores.sql.engine import create_engine_from_url, mask_url
    from agora_agent.stores.sql.migrate import head_revision

    engine = create_engine_from_url(url)
    try:
        revision = await _current_or_fail(url, engine)
    finally:
        await engine.dispose()
    head = head_revision()
    if revision is None:
        console.print(
            f"{mask_url(url)}: no agora-agent schema (run `agora-agent db upgrade`); this version needs {head}"
        )
    elif revision == head:
        console.print(f"{mask_url(url)}: revision {revision} (head, up to date)")
    else:
        console.print(f"{mask_url(url)}: revision {revision}; this version needs {head} (run `agora-agent db upgrade`)")


async def _current_or_fail(url: str, engine: AsyncEngine) -> str | None:
    import sqlalchemy as sa

    from agora_agent.stores.sql.engine import mask_url
    from agora_agent.stores.sql.migrate import current

    try:
        return await current(engine)
    except (OSError, sa.exc.DBAPIError) as exc:
        reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()[0]
        raise StoreError(
            f"cannot connect to the database at {mask_url(url)}: {reason}. "
            "Check that the server is running and the URL is right."
        ) from exc


@db_app.command("upgrade")
def upgrade_command(
    url: UrlOption = None,
    revision: Annotated[str, typer.Option(help="Target revision.")] = "head",
) -> None:
    """Apply the migrations (creates every table on an empty database)."""
    run_async(_upgrade(require_url(url), revision))


@db_app.command("downgrade")
def downgrade_command(
    url: UrlOption = None,
    revision: Annotated[str, typer.Option(help="Target revision; `base` drops every agora-agent table.")] = "-1",
) -> None:
    """Revert migrations (one step by default)."""
    run_async(_downgrade(require_url(url), revision))


@db_app.command("current")
def current_command(url: UrlOption = None) -> None:
    """Show the database's schema revision and whether it is up to date."""
    run_async(_current(require_url(url)))


def register(app: typer.Typer) -> None:
    """Add the `db` command group."""
    app.add_typer(db_app, name="db")
