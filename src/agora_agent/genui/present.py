"""Result presentation: a tool's `present(output, ctx)` turns its domain result into components.

The domain result still goes to the model, REST and MCP unchanged; presenting is a view of it, run
only after a successful execution. A presentation error never fails (or retries) the tool call: it
goes to `on_presentation_error` — the tool's own, else the app's, else a warning in the log.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from agora_agent.genui.components import Presentation

if TYPE_CHECKING:
    from agora_agent.genui.session import UiSession
    from agora_agent.tools.context import ToolContext

__all__ = ["PresentFn", "PresentationErrorHandler", "PresentationErrorInfo", "run_present"]

logger = logging.getLogger("agora_agent.genui")

PresentResult = Presentation | Sequence[Presentation] | None
PresentFn = Callable[[Any, "ToolContext"], "PresentResult | Awaitable[PresentResult]"]


@dataclass(frozen=True, kw_only=True, slots=True)
class PresentationErrorInfo:
    """Where a presentation failed."""

    tool_name: str
    tool_call_id: str | None
    run_id: str | None
    thread_id: str | None


PresentationErrorHandler = Callable[[BaseException, PresentationErrorInfo], "None | Awaitable[None]"]


async def _report(handler: PresentationErrorHandler | None, error: BaseException, info: PresentationErrorInfo) -> None:
    if handler is None:
        logger.warning("presenting the result of %s (call %s) failed: %s", info.tool_name, info.tool_call_id, error)
        return
    try:
        outcome = handler(error, info)
        if inspect.isawaitable(outcome):
            await outcome
    except Exception:  # the handler itself must not break the run either
        logger.exception("on_presentation_error raised while handling an error of %s", info.tool_name)


async def run_present(
    tool: object,
    output: Any,
    ctx: ToolContext,
    session: UiSession,
    *,
    on_error: PresentationErrorHandler | None = None,
) -> int:
    """Run `tool.present(output, ctx)` if it has one and push what it returns; returns how many were pushed."""
    present = getattr(tool, "present", None)
    if present is None:
        return 0
    handler = getattr(tool, "on_presentation_error", None) or on_error
    info = PresentationErrorInfo(
        tool_name=getattr(getattr(tool, "spec", None), "name", type(tool).__name__),
        tool_call_id=ctx.tool_call_id,
        run_id=ctx.run_id,
        thread_id=ctx.thread_id,
    )
    try:
        result = present(output, ctx)
        if inspect.isawaitable(result):
            result = await result
        if result is None:
            return 0
        items = [result] if isinstance(result, Presentation) else list(result)
        for item in items:
            if not isinstance(item, Presentation):
                raise TypeError(f"present() must return Presentation objects (e.g. table(...)), got {item!r}")
            await session.present(item)
        return len(items)
    except Exception as exc:
        await _report(handler, exc, info)
        return 0
