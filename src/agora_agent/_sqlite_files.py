"""Which SQLite library has each database file open in this process: two must never share one file.

CPython's `sqlite3` (the agent store, aiosqlite, DBOS) and `pysqlite3` (the SQLite vector store, which needs
extension loading) are two copies of SQLite. POSIX locks are per process, so neither copy sees the other's
connections: closing the last connection of one deletes the WAL the other is still writing, and the other's
commits since are lost at the next restart (sqlite.org/howtocorrupt.html §2.2.1; tests/rag/test_sqlite_file.py).
Each opener claims its file for its library before it connects and releases it when the connection closes.
"""

from __future__ import annotations

import os
import threading
from collections import Counter

from agora_agent.errors import ConfigurationError

__all__ = ["CPYTHON", "PYSQLITE3", "check", "claim", "holders", "release"]

CPYTHON = "CPython's sqlite3"
PYSQLITE3 = "pysqlite3 (the SQLite vector store)"
_lock = threading.Lock()
_open: dict[str, Counter[str]] = {}  # real path -> {library: open connections}


def _key(path: str | os.PathLike[str]) -> str:
    return os.path.realpath(os.fspath(path))


def check(path: str | os.PathLike[str], library: str) -> None:
    """Raise `ConfigurationError` if another SQLite library has `path` open in this process."""
    held = holders(path) - {library}
    if held:
        raise ConfigurationError(
            f"{path} is open in this process through {min(held)}; opening it through {library} too would put two "
            "SQLite libraries on one file, which loses writes (sqlite.org/howtocorrupt.html). Give each its own "
            "file: SqliteVectorStore.beside(agent_db) keeps the chunks in <name>-rag.db next to the agent store's"
        )


def holders(path: str | os.PathLike[str]) -> set[str]:
    """The libraries that have `path` open in this process now."""
    with _lock:
        return {lib for lib, n in _open.get(_key(path), Counter()).items() if n > 0}


def claim(path: str | os.PathLike[str], library: str) -> None:
    """Count one more `library` connection on `path` (after `check`)."""
    with _lock:
        _open.setdefault(_key(path), Counter())[library] += 1


def release(path: str | os.PathLike[str], library: str) -> None:
    """One `library` connection on `path` closed."""
    with _lock:
        held = _open.get(_key(path))
        if held is not None:
            held[library] -= 1
            if held[library] <= 0:
                del held[library]
            if not held:
                del _open[_key(path)]
