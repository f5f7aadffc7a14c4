"""Run owner leases: a heartbeat per runtime process, so a run whose process died is recovered by a live one.

Every process that runs agents on a shared store registers itself (`ProcessIdentity`) and renews its
lease every `interval` seconds; a lease not renewed for `ttl` seconds has lapsed. Each run records
its owner when it starts. A `running` run is *lapsed* when its owner's lease lapsed (or the owner is a
dead pid on this host, so a restart on the same machine recovers at once); any live process may then
take it over — a compare-and-set on the owner row, so exactly one process wins — and close it by the
recovery rules of the runner that owns it.

`LeaseKeeper` is the background task; the durable runner reuses it for failover (see coord/harden.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import socket
import uuid
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

__all__ = ["LeaseKeeper", "LeaseStore", "ProcessIdentity", "pid_alive"]

logger = logging.getLogger("agora_agent.leases")


def pid_alive(pid: int) -> bool:
    """Whether a process with this pid exists on this host (signal 0 checks without sending anything)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # exists, owned by someone else
        return True
    except OSError:
        return False
    return True


@dataclass(frozen=True, kw_only=True, slots=True)
class ProcessIdentity:
    """This process as a lease owner: a fresh id per start, plus where it runs."""

    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)
    id: str = ""

    def __post_init__(self) -> None:
        if not self.id:
            object.__setattr__(self, "id", f"{self.host}:{self.pid}:{uuid.uuid4().hex[:8]}")


@runtime_checkable
class LeaseStore(Protocol):
    """Process leases and run owners. `SqlLeaseStore` (stores/sql/leases.py) is the implementation."""

    async def heartbeat(self, identity: ProcessIdentity, ttl: float) -> None:
        """Create or renew this process's lease until now + `ttl` seconds."""
        ...

    async def release(self, owner_id: str) -> None:
        """Drop this process's lease (clean shutdown)."""
        ...

    async def claim_run(self, run_id: str, owner_id: str) -> None:
        """Record that `owner_id` runs `run_id` (the run was just started here)."""
        ...

    async def take_over(self, run_id: str, owner_id: str, previous: str | None) -> bool:
        """Move `run_id` from `previous` (None: no owner row) to `owner_id`; False when another process won."""
        ...

    async def lapsed_runs(
        self,
        *,
        now: datetime,
        ttl: float,
        host: str,
        alive: Callable[[int], bool],
        limit: int = 100,
        run_id: str | None = None,
        durable: bool = False,
    ) -> list[tuple[str, str | None]]:
        """`(run_id, owner_id)` of `running` runs whose owner lapsed (owner None: never claimed);
        `run_id` restricts the answer to that run; `durable` picks inline (False) or durable runs."""
        ...

    async def owners(self, run_ids: Sequence[str]) -> dict[str, str]:
        """The recorded owner of each of these runs (a run without an owner row is left out)."""
        ...

    async def live_owners(self, *, now: datetime, host: str, alive: Callable[[int], bool]) -> list[str]:
        """Ids of the processes whose lease holds at `now` (a dead pid on `host` does not count)."""
        ...


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
