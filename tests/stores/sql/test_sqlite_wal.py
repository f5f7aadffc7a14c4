"""The SQLite store's write-ahead log stays bounded under a steady stream of writes.

The store writes on an inline connection that never checkpoints, and checkpoints from its worker thread every
`CHECKPOINT_EVERY` write units. A PASSIVE checkpoint there copied the log into the database but never rewound
it, so the WAL kept every page ever written (2.5 GB after 6,000 governed runs on a 29 MB database).
"""

from __future__ import annotations

from pathlib import Path

from agora_agent.stores.sql import open_sql_backend
from agora_agent.stores.sql.units import SqliteUnits, units_for


async def test_the_wal_is_emptied_by_the_checkpoints_and_nothing_is_lost(tmp_path: Path) -> None:
    backend = await open_sql_backend(f"sqlite+aiosqlite:///{tmp_path}/agent.db", auto_create_tables=True)
    try:
        units = units_for(backend.engine)
        assert isinstance(units, SqliteUnits)
        units.CHECKPOINT_EVERY = 100  # the same policy, sooner and smaller
        units.WAL_TRUNCATE_BYTES = 1024 * 1024
        thread = await backend.store.create_thread(actor_ref="alice")
        for i in range(1500):
            await backend.store.append_message(thread_id=thread.id, role="user", content=f"message {i} " + "x" * 200)
        assert units._executor is not None
        units._executor.submit(lambda: None).result()  # the last checkpoint the writes asked for has run
        wal = tmp_path / "agent.db-wal"
        size = wal.stat().st_size if wal.exists() else 0
        # Past 1 MB a checkpoint empties it, and fewer than 100 units were written since the last one; without
        # the rewind the log holds all 1,500 (54 MB here).
        assert size < 4 * 1024 * 1024, f"the WAL holds {size} bytes"
        messages = await backend.store.list_messages(thread.id)
        assert [m.content.split()[1] for m in messages] == [str(i) for i in range(1500)]
    finally:
        await backend.close()
