"""Ordered key-value engines under the disk frontier (:mod:`crawler_ext.frontier.disk`).

The disk frontier needs little of an engine: an atomic batch of puts and deletes (one commit),
an ascending range scan with a limit, and one directory of files.  :class:`KVEngine` is that
contract.  The engine was chosen by measurement (``python benchmarks/run.py engines``: the
disk frontier itself over RocksDB, LevelDB, LMDB and SQLite, side by side; the table is in
``benchmarks/RESULTS.md``): RocksDB.  SQLite, from the standard library, is kept as the
fallback that needs no extra package (``CRAWLER_EXT_FRONTIER_DISK_ENGINE=sqlite``).
"""

from __future__ import annotations

import errno
import os
import sqlite3
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, Protocol

__all__ = ["ENGINES", "KVEngine", "RocksEngine", "SqliteEngine", "make_engine"]


class KVEngine(Protocol):
    #: the name users pick it by (``CRAWLER_EXT_FRONTIER_DISK_ENGINE``)
    name: str

    def open(self, directory: Path) -> None: ...
    def write(self, puts: dict[bytes, bytes], deletes: Iterable[bytes]) -> None:
        """Apply the deletes, then the puts, as one atomic commit; an I/O failure (a full
        disk) raises OSError."""
    def scan(self, start: bytes, stop: bytes, limit: int) -> list[tuple[bytes, bytes]]:
        """Up to ``limit`` pairs with ``start <= key < stop``, ascending."""
    def close(self) -> None: ...


class RocksEngine:
    """RocksDB (``rocksdict``), the default: an LSM tree, so appends are sequential writes and
    queue records compress (LZ4); a commit is one write batch through RocksDB's write-ahead
    log, which survives the process being killed (kill -9) without an fsync, as SQLite's WAL
    with ``synchronous=NORMAL`` does.  (Consumed records leave tombstones until compaction:
    the disk frontier never scans over them, it keeps a cursor per queue.)"""

    name = "rocksdb"

    def __init__(self, block_cache: int = 32 << 20, memtable: int = 8 << 20) -> None:
        self.block_cache = block_cache  # bytes
        self.memtable = memtable  # bytes
        self._db: Any = None
        self._rocksdict: Any = None

    def open(self, directory: Path) -> None:
        import rocksdict

        self._rocksdict = rocksdict
        options = rocksdict.Options(raw_mode=True)
        options.create_if_missing(True)
        options.set_compression_type(rocksdict.DBCompressionType.lz4())
        # the SST files' index and filter blocks in one bounded cache: by default they stay in
        # memory beside it and grow with the data (measured: +18 MiB from 10 M to 30 M queued
        # URLs by default, none with the bounded cache)
        table = rocksdict.BlockBasedOptions()
        table.set_block_cache(rocksdict.Cache(self.block_cache))
        table.set_cache_index_and_filter_blocks(True)
        table.set_pin_l0_filter_and_index_blocks_in_cache(True)
        options.set_block_based_table_factory(table)
        # the memtable: RocksDB's default (64 MiB, two of them) grew a long crawl's memory by
        # ~1 KB a page for most of an hour before its first flush (the soak benchmark); a
        # smaller one flushes sooner to the same sequential writes
        options.set_write_buffer_size(self.memtable)
        options.set_max_write_buffer_number(2)
        directory.mkdir(parents=True, exist_ok=True)
        self._db = rocksdict.Rdict(str(directory), options)

    def write(self, puts: dict[bytes, bytes], deletes: Iterable[bytes]) -> None:
        batch = self._rocksdict.WriteBatch(raw_mode=True)
        for key in deletes:
            batch.delete(key)
        for key, value in puts.items():
            batch.put(key, value)
        try:
            self._db.write(batch)
        except Exception as exc:  # rocksdict raises a plain Exception: "IO error: ..."
            raise _os_error(exc) from exc

    def scan(self, start: bytes, stop: bytes, limit: int) -> list[tuple[bytes, bytes]]:
        out: list[tuple[bytes, bytes]] = []
        it = self._db.iter()
        it.seek(start)
        while it.valid() and len(out) < limit:
            key = it.key()
            if key >= stop:
                break
            out.append((key, it.value()))
            it.next()
        return out

    def close(self) -> None:
        if self._db is not None:
            db, self._db = self._db, None
            try:
                db.close()
            except Exception as exc:
                raise _os_error(exc) from exc


def _os_error(exc: Exception) -> OSError:
    """An engine's I/O failure as the OSError it reports (a full disk: ENOSPC), so that the
    crawl's full-disk handling recognises it."""
    text = str(exc)
    for code in (errno.ENOSPC, errno.EDQUOT, errno.EFBIG, errno.EIO):
        if os.strerror(code) in text:
            return OSError(code, text)
    return OSError(errno.EIO, text)


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


ENGINES: dict[str, Callable[[], KVEngine]] = {"rocksdb": RocksEngine, "sqlite": SqliteEngine}


def make_engine(name: str) -> KVEngine:
    return ENGINES[name]()
