"""`agora-agent prices sync | set | list | reprice`: the model price table the loop prices usage with.

Usage rows are priced when they are recorded; `reprice` is the one way to change past spend, and it is audited.
"""

from __future__ import annotations

import getpass
from datetime import UTC, date, datetime
from typing import TYPE_CHECKING, Annotated, Literal

import typer
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn
from rich.table import Table

from agora_agent.cli._db_url import UrlOption, require_url, run_async
from agora_agent.errors import ConfigurationError, InvalidRequestError
from agora_agent.stores.sql.price_catalog import DEFAULT_PROVIDERS  # light: the package imports its stores lazily

if TYPE_CHECKING:
    from agora_agent.governance.pricing import ModelPrice

# The SQL backend (SQLAlchemy) is imported by the commands when they run, not to register them.

__all__ = ["register"]

console = Console()
prices_app = typer.Typer(help="Model prices (USD per million tokens) used to estimate costs.", no_args_is_help=True)


def _rate(value: float | None) -> str:
    return "—" if value is None else f"{value:g}"


async def _sync(url: str, providers: list[str], dry_run: bool) -> None:
    from agora_agent.stores.sql import open_sql_backend
    from agora_agent.stores.sql.price_catalog import catalog_prices, same_price

    catalog = catalog_prices(providers)
    backend = await open_sql_backend(url)
    try:
        current = {p.model_id: p for p in await backend.pricing.list_current_prices()}
        changed = [p for p in catalog if p.model_id not in current or not same_price(p, current[p.model_id])]
        if changed and not dry_run:
            with Progress(
                TextColumn("[bold]prices"),
                BarColumn(),
                MofNCompleteColumn(),
                TextColumn("{task.fields[model]}"),
                TimeElapsedColumn(),
                console=console,
                transient=False,
            ) as progress:
                task = progress.add_task("sync", total=len(changed), model="")
                for price in changed:
                    progress.update(task, model=price.model_id)
                    await backend.pricing.upsert_price(price)
                    progress.advance(task)
    finally:
        await backend.close()
    verb = "would update" if dry_run else "updated"
    console.print(
        f"{len(catalog)} models from genai-prices ({', '.join(providers)}): "
        f"{verb} {len(changed)}, {len(catalog) - len(changed)} unchanged"
    )


def _operator(by: str | None) -> str:
    """Who the audit row names for a CLI change: `--by`, else `cli:<OS user>`."""
    if by:
        return by
    try:
        return f"cli:{getpass.getuser()}"
    except Exception:
        return "cli"


async def _set(url: str, price: ModelPrice, *, confirm: bool, by: str | None) -> None:
    from agora_agent.governance.price_changes import set_price
    from agora_agent.stores.sql import open_sql_backend

    backend = await open_sql_backend(url)
    try:
        await set_price(backend.pricing, backend.audit, price, actor_ref=_operator(by), confirm=confirm)
    finally:
        await backend.close()
    console.print(
        f"{price.model_id}: input ${price.input_price_per_1m:g}/1M, output ${price.output_price_per_1m:g}/1M"
        + (f", cache read ${price.cache_read_price_per_1m:g}/1M" if price.cache_read_price_per_1m is not None else "")
        + (
            f", cache write ${price.cache_write_price_per_1m:g}/1M"
            if price.cache_write_price_per_1m is not None
            else ""
        )
    )


async def _list(url: str, contains: str | None) -> None:
    from agora_agent.stores.sql import open_sql_backend

    backend = await open_sql_backend(url)
    try:
        prices = await backend.pricing.list_current_prices()
    finally:
        await backend.close()
    if contains:
        prices = [p for p in prices if contains.lower() in p.model_id.lower()]
    if not prices:
        console.print("no prices yet: run `agora-agent prices sync` or `agora-agent prices set MODEL …`")
        return
    table = Table(title="Current model prices (USD per 1M tokens, effective from UTC)")
    for header in ("model", "input", "output", "cache read", "cache write", "effective from"):
        table.add_column(header, justify="left" if header in ("model", "effective from") else "right")
    for p in prices:
        table.add_row(
            p.model_id,
            _rate(p.input_price_per_1m),
            _rate(p.output_price_per_1m),
            _rate(p.cache_read_price_per_1m),
            _rate(p.cache_write_price_per_1m),
            p.effective_from.strftime("%Y-%m-%d %H:%M") if p.effective_from else "—",
        )
    console.print(table)


@prices_app.command("sync")
def sync_command(
    url: UrlOption = None,
    provider: Annotated[
        list[str] | None,
        typer.Option(
            "--provider", "-p", help=f"Provider to load (repeatable). Default: {', '.join(DEFAULT_PROVIDERS)}."
        ),
    ] = None,
    dry_run: Annotated[bool, typer.Option("--dry-run", help="Only count what would change.")] = False,
) -> None:
    """Load current prices from the bundled `genai-prices` data (offline); only changed prices are written."""
    run_async(_sync(require_url(url), list(provider or DEFAULT_PROVIDERS), dry_run))


def _non_negative(name: str, value: float | None) -> None:
    if value is not None and not value >= 0:
        raise ConfigurationError(f"--{name} must be a number >= 0 (USD per million tokens), got {value}")


@prices_app.command("set")
def set_command(
    model: Annotated[str, typer.Argument(help="Model id as recorded in usage, e.g. gpt-4o-mini.")],
    input_price: Annotated[float, typer.Option("--input", help="USD per 1M input tokens.")],
    output_price: Annotated[float, typer.Option("--output", help="USD per 1M output tokens.")],
    cache_read: Annotated[float | None, typer.Option("--cache-read", help="USD per 1M cache-read tokens.")] = None,
    cache_write: Annotated[float | None, typer.Option("--cache-write", help="USD per 1M cache-write tokens.")] = None,
    confirm: Annotated[
        bool, typer.Option("--confirm", help="Allow a change beyond 10× (or 1/10) of the current price.")
    ] = False,
    by: Annotated[str | None, typer.Option("--by", help="Name recorded in the audit log (default cli:<user>).")] = None,
    url: UrlOption = None,
) -> None:
    """Set a model's price (supersedes the current one atomically; the old one stays as history; audited)."""

    async def body() -> None:
        from agora_agent.governance.pricing import ModelPrice

        for name, value in (
            ("input", input_price),
            ("output", output_price),
            ("cache-read", cache_read),
            ("cache-write", cache_write),
        ):
            _non_negative(name, value)
        price = ModelPrice(
            model_id=model,
            input_price_per_1m=input_price,
            output_price_per_1m=output_price,
            cache_read_price_per_1m=cache_read,
            cache_write_price_per_1m=cache_write,
        )
        try:
            await _set(require_url(url), price, confirm=confirm, by=by)
        except InvalidRequestError as exc:  # the sanity bound: one line, exit 1, and the CLI's way to confirm
            raise ConfigurationError(str(exc).replace('send it again with "confirm": true', "pass --confirm")) from None

    run_async(body())


@prices_app.command("list")
def list_command(
    url: UrlOption = None,
    contains: Annotated[str | None, typer.Option("--contains", help="Only models whose id contains this.")] = None,
) -> None:
    """Show the current price of every model."""
    run_async(_list(require_url(url), contains))


@prices_app.command("reprice")
def reprice_command(
    since: Annotated[
        str, typer.Option("--since", help="Re-price usage recorded on or after this UTC day (YYYY-MM-DD).")
    ],
    model: Annotated[str | None, typer.Option("--model", help="Only this model's usage.")] = None,
    historical: Annotated[
        bool,
        typer.Option(
            "--historical", help="Use the price in force when each row was recorded (default: the current price)."
        ),
    ] = False,
    by: Annotated[str | None, typer.Option("--by", help="Name recorded in the audit log (default cli:<user>).")] = None,
    url: UrlOption = None,
) -> None:
    """Re-price past usage on purpose (provider-reported costs are kept); leaves a `prices.reprice` audit row."""
    use: Literal["current", "historical"] = "historical" if historical else "current"

    async def body() -> None:
        from agora_agent.stores.sql import open_sql_backend
        from agora_agent.stores.sql.audit import reprice_usage

        try:
            day = date.fromisoformat(since)
        except ValueError:
            raise ConfigurationError(f"--since must be a UTC day as YYYY-MM-DD, got {since!r}") from None
        start = datetime(day.year, day.month, day.day, tzinfo=UTC)

        backend = await open_sql_backend(require_url(url))
        try:
            result = await reprice_usage(backend.engine, since=start, actor_ref=_operator(by), model_id=model, use=use)
        finally:
            await backend.close()
        console.print(
            f"re-priced {result.rows} usage rows since {day.isoformat()} ({use} prices): "
            f"${result.before_usd:,.4f} -> ${result.after_usd:,.4f}"
            + (f", {result.unpriced} left unpriced (no price for their model)" if result.unpriced else "")
            + f"; audit {result.audit_id}"
        )

    run_async(body())


def register(app: typer.Typer) -> None:
    """Add the `prices` command group."""
    app.add_typer(prices_app, name="prices")
