"""`LeaseKeeper`: renews this process's run owner lease in the background (the rules: stores/leases.py).

The service starts one per process on a shared store; its tick callbacks recover the runs of lapsed
owners and sweep expired budget reservations, and the durable runner adds its failover to them.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Awaitable, Callable

from agora_agent.stores.leases import LeaseStore, ProcessIdentity

__all__ = ["LeaseKeeper"]

logger = logging.getLogger("agora_agent.leases")


class LeaseKeeper:
    """Renews this process's lease every `interval` seconds and calls every tick callback after each renewal.

    The callbacks (`on_tick`, plus any added with `add_tick`) are where a runner recovers lapsed runs
    and sweeps expired budget reservations; their errors (a database blip) are logged and the next
    tick tries again — the keeper never dies of them.
    """

    def __init__(
        self,
        store: LeaseStore,
        identity: ProcessIdentity,
        *,
        interval: float,
        ttl: float,
        on_tick: Callable[[], Awaitable[object]] | None = None,
    ) -> None:
        self.store = store
        self.identity = identity
        self.interval = interval
        self.ttl = ttl
        self._ticks: list[Callable[[], Awaitable[object]]] = [on_tick] if on_tick is not None else []
        self._task: asyncio.Task[None] | None = None

    def add_tick(self, callback: Callable[[], Awaitable[object]]) -> None:
        """Also call `callback` after each renewal (e.g. the durable runner's failover of lapsed workflows)."""
        self._ticks.append(callback)

    async def start(self) -> None:
        """Take the lease now (so runs started next are owned by a live process), then keep it."""
        await self.store.heartbeat(self.identity, self.ttl)
        self._task = asyncio.create_task(self._loop(), name=f"agora-lease-{self.identity.id}")

    async def tick(self) -> None:
        """One renewal plus `on_tick` (also what the background loop does every `interval`)."""
        await self.store.heartbeat(self.identity, self.ttl)
        for callback in list(self._ticks):
            try:
                await callback()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("lease tick %r failed; retrying next tick", callback, exc_info=True)

    async def _loop(self) -> None:
        while True:
            await asyncio.sleep(self.interval)
            try:
                await self.tick()
            except asyncio.CancelledError:
                raise
            except Exception:
                logger.warning("lease heartbeat of %s failed; retrying next tick", self.identity.id, exc_info=True)

    async def stop(self, *, release: bool = True) -> None:
        """Stop renewing; `release=False` leaves the lease to lapse (what a crash looks like, for tests)."""
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None
        if release:
            with contextlib.suppress(Exception):
                await self.store.release(self.identity.id)
