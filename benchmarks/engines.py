"""The two engines measured beside LMDB and SQLite for the disk frontier, but not shipped:
RocksDB (``rocksdict``) and LevelDB (``plyvel``).  Same contract as
:class:`crawler_ext.frontier.kv.KVEngine`; used by ``python benchmarks/run.py engines``."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any


class RocksEngine:
    name = "rocksdb"

    def __init__(self) -> None:
        self._db: Any = None

    def open(self, directory: Path) -> None:
        import rocksdict

        options = rocksdict.Options(raw_mode=True)
        options.create_if_missing(True)
        options.set_compression_type(rocksdict.DBCompressionType.lz4())
        self._db = rocksdict.Rdict(str(directory), options)

    def write(self, puts: dict[bytes, bytes], deletes: Iterable[bytes]) -> None:
        import rocksdict

        batch = rocksdict.WriteBatch(raw_mode=True)
        for key in deletes:
            batch.delete(key)
        for key, value in puts.items():
            batch.put(key, value)
        self._db.write(batch)

    def scan(self, start: bytes, stop: bytes, limit: int) -> list[tuple[bytes, bytes]]:
        out = []
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
            self._db.close()
            self._db = None


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
