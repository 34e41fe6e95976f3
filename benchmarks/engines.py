"""The two engines measured beside RocksDB and SQLite for the disk frontier, but not shipped:
LMDB (``lmdb``) and LevelDB (``plyvel``).  Same contract as
:class:`crawler_ext.frontier.kv.KVEngine`; used by ``python benchmarks/run.py engines``."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any


class LmdbEngine:
    """LMDB (``lmdb``): a copy-on-write B+tree in one memory-mapped file, no fsync per commit."""

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


class LevelEngine:
    name = "leveldb"

    def __init__(self) -> None:
        self._db: Any = None

    def open(self, directory: Path) -> None:
        import plyvel

        directory.mkdir(parents=True, exist_ok=True)
        self._db = plyvel.DB(str(directory), create_if_missing=True)

    def write(self, puts: dict[bytes, bytes], deletes: Iterable[bytes]) -> None:
        with self._db.write_batch() as batch:
            for key in deletes:
                batch.delete(key)
            for key, value in puts.items():
                batch.put(key, value)

    def scan(self, start: bytes, stop: bytes, limit: int) -> list[tuple[bytes, bytes]]:
        out = []
        with self._db.iterator(start=start, stop=stop) as it:
            for pair in it:
                out.append(pair)
                if len(out) >= limit:
                    break
        return out

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None
