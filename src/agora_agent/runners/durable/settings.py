"""`DurableConfig`: how the durable runner reaches its engine. Importing this never imports dbos."""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Literal

__all__ = ["DEFAULT_APPLICATION_VERSION", "DurableConfig"]

DEFAULT_APPLICATION_VERSION = "agora-2"
"""Bump it deliberately when a change to the loop's step order would break the replay of runs in flight
(docs/durable.md, "Rolling upgrades"). It is explicit because DBOS's default is a hash of the source code,
which strands every in-flight run after any edit (notes P1). agora-2: the `persist:*` writes are no
longer DBOS steps (`loop.effect`), so an agora-1 run cannot be replayed by this code."""


@dataclass(frozen=True, kw_only=True, slots=True)
class DurableConfig:
    """Settings of the durable runner (`AgentConfig(durable=DurableConfig(...))`; `durable=True` = defaults).

    - `system_database_url`: where DBOS keeps workflow checkpoints. Default: next to a SQLite store
      (`<store>.dbos.sqlite`), or the store's own PostgreSQL database (schema `dbos`).
    - `executor_id`: unique and STABLE per process (a Kubernetes StatefulSet pod name, a systemd instance
      name). Default: `AGORA_EXECUTOR_ID`, else the host name. Two live processes must never share one.
    - `application_version`: runs are only resumed by processes of the same version.
    - `max_recovery_attempts`: after this many recoveries a run ends `failed` instead of crash-looping
      (DBOS's default is 100). DBOS counts EVERY recovery of an in-flight run — each restart while it is
      parked on an approval counts too — so keep it above the restarts a parked run may live through.
    - `polling_interval`: how often SQLite waiters (approvals, results) poll; PostgreSQL uses LISTEN/NOTIFY.
    - `worker_concurrency`: runs this process has in flight at once (the rest wait in the queue and their
      stream says `queued`). A run parked on an approval is in flight: size it for parked runs too.
    - `tenant_concurrency`: optional cap of in-flight runs per tenant across all processes, so one tenant
      cannot take every worker (runs without a tenant share one partition).
    - `failover_after`: seconds without a heartbeat after which another process resumes a process's runs.
    - `approval_recheck`: how often (seconds, ±20 %) a process re-reads the rows of the approvals parked in
      it, so a decision whose wake-up was lost (its process died between deciding and sending) is acted
      on within about this long — one row read per parked run per interval, no checkpoint.
    - `checkpoint_commit`: `"sync"` (default) waits for each checkpoint to reach the PostgreSQL WAL on
      disk; `"async"` does not (`synchronous_commit=off` on the system database's connections only),
      which halves the cost of a step on a slow disk. A crash of the *application* loses nothing either
      way; a crash of the *database server* may lose its last ~0.6 s of checkpoints: those steps re-run
      (at-least-once, as after a worker crash), and a chat started or an approval decided in that window
      may need sending again (docs/durable.md). Ignored on SQLite.
    """

    system_database_url: str | None = None
    executor_id: str | None = None
    application_version: str = DEFAULT_APPLICATION_VERSION
    max_recovery_attempts: int = 50
    polling_interval: float = 0.1
    worker_concurrency: int = 100
    tenant_concurrency: int | None = None
    failover_after: float = 15.0
    approval_recheck: float = 30.0
    checkpoint_commit: Literal["sync", "async"] = "sync"
    name: str = "agora-agent"

    def resolved_executor_id(self) -> str:
        """The configured id, else `AGORA_EXECUTOR_ID`, else the host name."""
        return self.executor_id or os.environ.get("AGORA_EXECUTOR_ID") or socket.gethostname()

    def resolved_system_database_url(self, store: object) -> str:
        """The system database URL for this store (see the class docstring)."""
        from agora_agent.errors import ConfigurationError

        if self.system_database_url:
            return _sync_url(self.system_database_url)
        if isinstance(store, str):
            if store.startswith("sqlite"):
                path = store.split("///", 1)[1] if "///" in store else ""
                if not path or path == ":memory:":
                    raise ConfigurationError(
                        "durable runs need a SQLite FILE store, not an in-memory one", option="store"
                    )
                return f"sqlite:///{path}.dbos.sqlite"
            if store.startswith("postgres"):
                return _sync_url(store)
        raise ConfigurationError(
            "durable=True needs a persistent store: AgentConfig(store='sqlite:///agent.db' or a PostgreSQL URL), "
            "or DurableConfig(system_database_url=...) next to your own store",
            option="store",
        )


def _sync_url(url: str) -> str:
    """DBOS drives its system database with sync drivers (sqlite3, psycopg)."""
    for prefix in ("postgresql+asyncpg://", "postgres://", "postgresql://"):
        if url.startswith(prefix):
            return "postgresql+psycopg://" + url[len(prefix) :]
    if url.startswith("sqlite+aiosqlite://"):
        return "sqlite://" + url[len("sqlite+aiosqlite://") :]
    return url
