"""The `agora-agent` command.

Each command group lives in its own module of this package and exposes `register(app)`; the
modules listed in `_COMMAND_MODULES` that exist are loaded. `main(argv) -> int` is testable by
calling it directly.
"""

from __future__ import annotations

import importlib
import sys
from collections.abc import Sequence

import typer

__all__ = ["app", "main", "run"]

app = typer.Typer(
    name="agora-agent",
    help="A governed AI agent for Python web apps: demo, serve, chat, database and prices.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

_COMMAND_MODULES = ("demo", "serve", "worker", "init", "chat", "db", "prices", "approvals", "runs", "rag")


def _load_commands() -> None:
    for name in _COMMAND_MODULES:
        module_name = f"{__name__}.{name}"
        try:
            module = importlib.import_module(module_name)
        except ModuleNotFoundError as exc:
            if exc.name == module_name:
                continue  # this command group is not part of this build
            raise
        module.register(app)


_load_commands()


_USAGE_ERRORS = frozenset(
    {
        "ClickException",
        "UsageError",
        "BadParameter",
        "MissingParameter",
        "NoSuchOption",
        "BadOptionUsage",
        "BadArgumentUsage",
        "NoArgsIsHelpError",
        "FileError",
    }
)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code instead of exiting (so tests can call it)."""
    args = list(sys.argv[1:] if argv is None else argv)
    try:
        result = app(args=args, standalone_mode=False)
    except SystemExit as exc:  # typer/click exit paths
        return int(exc.code or 0)
    except typer.Exit as exc:
        return int(exc.exit_code)
    except typer.Abort:
        typer.echo("aborted", err=True)
        return 1
    except Exception as exc:
        # Usage errors (unknown command, a value that does not parse) print one message and exit 2.
        # typer vendors click, so its exception types are matched by name, not by import.
        show = getattr(exc, "show", None)
        exit_code = getattr(exc, "exit_code", None)
        if callable(show) and isinstance(exit_code, int) and type(exc).__name__ in _USAGE_ERRORS:
            show()
            return exit_code
        raise
    # with standalone_mode=False click returns a `typer.Exit`'s code instead of raising it
    return result if isinstance(result, int) else 0


if __name__ == "__main__":  # pragma: no cover
    raise SystemExit(main())


def run() -> None:
    """Console-script entry point."""
    raise SystemExit(main())
