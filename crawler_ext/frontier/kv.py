"""Ordered key-value engines under the disk frontier (:mod:`crawler_ext.frontier.disk`).

The disk frontier needs little of an engine: an atomic batch of puts and deletes (one commit),
an ascending range scan with a limit, and one directory of files.  :class:`KVEngine` is that
contract.  The engine was chosen by measurement (``python benchmarks/run.py engines``: the
disk frontier itself over each engine, side by side; the table is in ``benchmarks/RESULTS.md``);
SQLite, from the standard library, is kept as the fallback that needs no extra package.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

__all__ = ["ENGINES", "KVEngine", "LmdbEngine", "SqliteEngine", "make_engine"]


class KVEngine(Protocol):
    #: the name users pick it by (``CRAWLER_EXT_FRONTIER_DISK_ENGINE``)
    name: str

    def open(self, directory: Path) -> None: ...
    def write(self, puts: dict[bytes, bytes], deletes: Iterable[bytes]) -> None:
        """Apply the deletes, then the puts, as one atomic commit."""
    def scan(self, start: bytes, stop: bytes, limit: int) -> list[tuple[bytes, bytes]]:
        """Up to ``limit`` pairs with ``start <= key < stop``, ascending."""
    def close(self) -> None: ...


class LmdbEngine:
    """LMDB (``lmdb``): a copy-on-write B+tree in one memory-mapped file; a commit is atomic
    and, without fsync (``sync=False``), survives the process being killed (the page cache
    keeps it), as SQLite's WAL with ``synchronous=NORMAL`` does."""

    name = "lmdb"

    def __init__(self, map_size: int = 1 << 40) -> None:
        self.map_size = map_size  # address space only: the file grows as pages are used
        self._env: Any = None

    def open(self, directory: Path) -> None:
        import lmdb

        directory.mkdir(parents=True, exist_ok=True)
        self._env = lmdb.open(str(directory), map_size=self.map_size, sync=False,
                              metasync=False, readahead=False, max_dbs=0)

    def write(self, puts: dict[bytes, bytes], deletes: Iterable[bytes]) -> None:
        with self._env.begin(write=True) as txn:
            delete = txn.delete
            for key in deletes:
                delete(key)
            if puts:
                txn.cursor().putmulti(puts.items())

    def scan(self, start: bytes, stop: bytes, limit: int) -> list[tuple[bytes, bytes]]:
        out: list[tuple[bytes, bytes]] = []
        with self._env.begin() as txn:
            cursor = txn.cursor()
            if not cursor.set_range(start):
                return out
            for key, value in cursor:
                if key >= stop or len(out) >= limit:
                    break
                out.append((key, value))
        return out

    def close(self) -> None:
        if self._env is not None:
            self._env.sync(True)
            self._env.close()
            self._env = None


class SqliteEngine:
    """SQLite in WAL mode: one table of (key, value), clustered on the key."""

    name = "sqlite"

    def __init__(self) -> None:
        self._db: sqlite3.Connection | None = None

    def open(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        db = sqlite3.connect(directory / "frontier.kv.sqlite3", isolation_level=None)
        db.execute("PRAGMA journal_mode=WAL")
        db.execute("PRAGMA synchronous=NORMAL")
        db.execute("CREATE TABLE IF NOT EXISTS kv (k BLOB PRIMARY KEY, v BLOB NOT NULL) "
                   "WITHOUT ROWID")
        self._db = db

    def write(self, puts: dict[bytes, bytes], deletes: Iterable[bytes]) -> None:
        db = self._db
        assert db is not None
        db.execute("BEGIN")
        db.executemany("DELETE FROM kv WHERE k = ?", ((k,) for k in deletes))
        db.executemany("INSERT OR REPLACE INTO kv VALUES (?, ?)", puts.items())
        db.execute("COMMIT")

    def scan(self, start: bytes, stop: bytes, limit: int) -> list[tuple[bytes, bytes]]:
        assert self._db is not None
        return self._db.execute("SELECT k, v FROM kv WHERE k >= ? AND k < ? ORDER BY k LIMIT ?",
                                (start, stop, limit)).fetchall()

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None


ENGINES: dict[str, Callable[[], KVEngine]] = {"lmdb": LmdbEngine, "sqlite": SqliteEngine}


def make_engine(name: str) -> KVEngine:
    return ENGINES[name]()
