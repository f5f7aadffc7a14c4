"""Run owner leases: who runs what — a heartbeat per runtime process, so a run whose process died is recovered.

Every process that runs agents on a shared store registers itself (`ProcessIdentity`) and renews its
lease every `interval` seconds; a lease not renewed for `ttl` seconds has lapsed. Each run records
its owner when it starts. A `running` run is *lapsed* when its owner's lease lapsed (or the owner is a
dead pid on this host, so a restart on the same machine recovers at once); any live process may then
take it over — a compare-and-set on the owner row, so exactly one process wins — and close it by the
recovery rules of the runner that owns it.

This module holds the lease protocol (`LeaseStore`, implemented by `SqlLeaseStore` in stores/sql/leases.py)
and the lease owner (`ProcessIdentity`); `LeaseKeeper` (runners/leases.py) is the background task that
renews the lease, and the durable runner reuses it for failover.
"""

from __future__ import annotations

import os
import socket
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Protocol, runtime_checkable

__all__ = ["LeaseStore", "ProcessIdentity", "pid_alive"]


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
