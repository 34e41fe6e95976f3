"""The two engines measured beside RocksDB and SQLite for the disk frontier, but not shipped:
LMDB (``lmdb``) and LevelDB (``plyvel``).  Same contract as
:class:`crawler_ext.frontier.kv.KVEngine`; used by ``python benchmarks/run.py engines``, whose benchmark is below them."""

from __future__ import annotations

import gc
import sys
import tempfile
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from benchmarks.harness import disk_usage, in_child, rss_bytes, table


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


# -- the benchmark ----------------------------------------------------------------------
ENGINE_NAMES = ["rocksdb", "leveldb", "lmdb", "sqlite"]


def _make_kv(name: str):
    from crawler_ext.frontier.kv import ENGINES

    if name in ENGINES:
        return ENGINES[name]()
    from benchmarks.engines import LevelEngine, LmdbEngine

    return {"lmdb": LmdbEngine, "leveldb": LevelEngine}[name]()




def disk_frontier_run(engine: str, n: int, hosts: int) -> dict:
    """The disk store under the frontier, fed and drained in one process: enqueue ``n`` links
    (compact form, with a referer) in batches of 100, commit every 10,000 (the scheduler's
    flush loop), then dispatch everything (next, done, complete), committing likewise."""
    from crawler_ext.frontier import Entry, Frontier, Outcome, PolitenessPolicy
    from crawler_ext.frontier.disk import DiskStore

    tmp = Path(tempfile.mkdtemp(prefix="frontier-bench-"))
    store = DiskStore(tmp / "frontier", 3, _make_kv(engine))
    frontier = Frontier(store, PolitenessPolicy(min_delay=0, max_delay=0), [5, 2, 1],
                        max_active_keys=10_000, max_in_flight=1)
    store.open()
    gc.collect()
    rss0 = rss_bytes()
    t0 = time.perf_counter()
    batch = []
    for i in range(n):
        host = f"h{i % hosts}.example.com"
        url = f"http://{host}/section/{i // hosts}/page-{i}.html"
        referer = f"http://{host}/section/{i // hosts}/"
        data = b"U1\x00" + referer.encode() + b"\x00" + url.encode()
        batch.append(Entry(host, i % 3, data, fp=(i * 0x9E3779B97F4A7C15) & (2**64 - 1) or 1))
        if len(batch) == 100:
            frontier.add(batch)
            batch = []
        if i % 10_000 == 9_999:
            frontier.flush()
        if i % 1_000_000 == 999_999:
            print(f"  [{engine}] {i + 1:,} queued, RSS +{(rss_bytes() - rss0) / (i + 1):.0f} B/URL",
                  file=sys.stderr, flush=True)
    if batch:
        frontier.add(batch)
    frontier.flush()
    t1 = time.perf_counter()
    gc.collect()
    rss = rss_bytes() - rss0
    disk = disk_usage(tmp)
    got = 0
    now = time.time()
    t2 = time.perf_counter()
    while (e := frontier.next(now)) is not None:
        frontier.done(e, Outcome(200, 0.0), now)
        frontier.complete([e.id])
        got += 1
        if got % 10_000 == 0:
            frontier.flush()
    frontier.flush()
    t3 = time.perf_counter()
    frontier.close()
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)
    return {"engine": engine, "n": n, "rss": rss / n, "disk": disk / n, "enqueue": n / (t1 - t0),
            "dispatch": got / (t3 - t2), "dispatched": got, "commits": store.commits,
            "head_loads": store.head_loads}






def bench_engines(quick: bool) -> None:
    n, hosts = (200_000, 2_000) if quick else (2_000_000, 20_000)
    rows = []
    for engine in ENGINE_NAMES:
        r = in_child("disk-frontier", engine, n, hosts)
        rows.append([engine, n, r["rss"], r["disk"], r["enqueue"], r["dispatch"], r["commits"]])
    table(f"Disk frontier engines: {n:,} queued URLs over {hosts:,} hosts, the disk store under "
          f"the frontier (no admission), each engine in a process of its own",
          ["engine", "URLs", "RSS bytes per URL", "disk bytes per URL", "enqueue/s",
           "dispatch/s", "commits"], rows)
