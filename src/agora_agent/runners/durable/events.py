"""Run-level events once per run: a durable execution that replays does not emit them again."""

from __future__ import annotations

from collections.abc import Callable

from agora_agent.observability.events import AgentEvent
from agora_agent.observability.telemetry import Telemetry, _Instruments

__all__ = ["ReplayAwareTelemetry"]


class ReplayAwareTelemetry(Telemetry):
    """A run's telemetry while its durable workflow may replay (a recovery, here or in another process).

    The loop runs again from the top on a recovery, so without this `RunStarted`, `approval.requested`,
    the `tool_call.status` events of finished tools and their metrics would fire a second time. While
    `replaying()` says a later step is already recorded — everything up to there was emitted by the
    earlier execution — events and metrics are dropped; from the first step that runs live on they are
    emitted as usual. Spans are not dropped: the recovered execution is traced as what it is.
    Shares the wrapped telemetry's handler, listeners and providers."""

    def __init__(self, inner: Telemetry, replaying: Callable[[], bool]) -> None:
        self.__dict__.update(inner.__dict__)  # the same on_event, listeners, providers, caches
        self._replaying = replaying

    def quiet(self) -> bool:
        return self._replaying() or super().quiet()

    async def emit(self, event: AgentEvent) -> None:
        if not self._replaying():
            await super().emit(event)

    def _instruments(self) -> _Instruments | None:
        return None if self._replaying() else super()._instruments()
