"""Internet scale, simulated: the pure frontier driven by a simulated clock (no network, no
Scrapy) at the seed design's 4,000 dispatches a second, over 10 k, 100 k and 1 M hosts.

Each simulated second, 4,000 fetches are dispatched (``Frontier.next``), answered 0.3 s later
(``Frontier.done``: the host rests 10 x 0.3 s, at least 2 s) and each brings 5 new links to
random hosts (``Frontier.add``), so the queues neither drain nor run away.  Measured, in one
process of its own per size (a clean RSS): CPU microseconds per dispatch (its ``next``,
``done`` and five ``add``s), bytes of memory per host (RSS growth over the hosts' first
entries and the run), the ready heap's size and the active hosts, dispatches a simulated
second reached (the hosts' politeness allows it or not).  The memory store holds the queues
up to 100 k hosts; the disk store (RocksDB) at 1 M hosts, as a crawl of that size would keep
them (``CRAWLER_EXT_FRONTIER_MAX_ACTIVE_HOSTS`` raised to 20,000: 4,000 fetches a second at
3 s a host need 12,000 hosts ready).
"""

from __future__ import annotations

import gc
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import in_child, rss_bytes, table

RATE = 4_000  # dispatches a simulated second
LATENCY = 0.3
LINKS = 5  # new links per fetch
ACTIVE = 20_000


def simulate(hosts: int, seconds: int, store_kind: str) -> dict[str, Any]:
    """One size, in this process: the figures as a dict (``in_child``)."""
    from crawler_ext.frontier import Frontier, MemoryStore, Outcome, PolitenessPolicy
    from crawler_ext.frontier.storage import Entry

    rng = random.Random(1)
    tmp = tempfile.mkdtemp(prefix="capacity-")
    if store_kind == "disk":
        from crawler_ext.frontier.disk import DiskStore
        from crawler_ext.frontier.kv import make_engine

        store: Any = DiskStore(str(Path(tmp) / "frontier"), 3, make_engine("rocksdb"))
    else:
        store = MemoryStore(3)
    store.open()
    policy = PolitenessPolicy(min_delay=2.0, max_delay=60.0, latency_factor=10.0)
    frontier = Frontier(store, policy, [5, 2, 1], max_active_keys=ACTIVE)
    serial = 0

    def entry(host: int) -> Entry:
        nonlocal serial
        serial += 1
        key = f"h{host}.example.com"
        return Entry(key, serial % 3, b"U0\x00\x00http://" + key.encode() + b"/p/" +
                     str(serial).encode(), fp=serial)

    gc.collect()
    rss0 = rss_bytes()
    for start in range(0, hosts, 10_000):  # every host known: two URLs each
        frontier.add([entry(h) for h in range(start, min(hosts, start + 10_000))
                      for _ in range(2)])
    now = 0.0
    answering: list[tuple[float, Entry]] = []  # (when its answer comes, entry)
    dispatched = 0
    heap_max = active_max = 0
    cpu = 0.0
    per_tick = RATE // 10
    for tick in range(seconds * 10):  # ticks of 0.1 simulated seconds
        now = tick / 10
        t0 = time.process_time()
        keep = []
        for when, done in answering:
            if when <= now:
                frontier.done(done, Outcome(200, LATENCY), when)
                frontier.add([entry(rng.randrange(hosts)) for _ in range(LINKS)])
            else:
                keep.append((when, done))
        answering = keep
        for _ in range(per_tick):
            got = frontier.next(now)
            if got is None:
                break
            dispatched += 1
            answering.append((now + LATENCY, got))
        cpu += time.process_time() - t0
        if tick % 50 == 0:
            heap_max = max(heap_max, store.heap_size())
            active_max = max(active_max, frontier.active_keys())
    gc.collect()
    rss = rss_bytes() - rss0
    store.close()
    return {"hosts": hosts, "store": store_kind, "dispatched": dispatched,
            "per_second": dispatched / seconds, "cpu_us": cpu / max(1, dispatched) * 1e6,
            "bytes_per_host": rss / hosts, "queued": frontier.pending(),
            "bytes_per_url": rss / max(1, frontier.pending()),
            "heap_max": heap_max, "active_max": active_max}


def bench_capacity(quick: bool) -> None:
    sizes = [(10_000, "memory"), (100_000, "memory")] if quick else \
        [(10_000, "memory"), (100_000, "memory"), (1_000_000, "memory"), (1_000_000, "disk")]
    seconds = 20 if quick else 60
    rows = []
    base = None
    for hosts, kind in sizes:
        result = in_child("capacity", hosts, seconds, kind)
        base = base or result["cpu_us"]
        rows.append([f"{hosts:,}", kind, result["per_second"], result["cpu_us"],
                     result["cpu_us"] / base, result["bytes_per_host"],
                     result["bytes_per_url"], result["queued"],
                     result["heap_max"], result["active_max"]])
    table(f"The pure frontier at {RATE:,} dispatches a simulated second ({seconds} simulated "
          f"s; each fetch answered in {LATENCY} s, a host resting 3 s, {LINKS} new links a "
          f"fetch)", ["hosts", "store", "dispatches per simulated s", "CPU us per dispatch",
                      "x the 10 k figure", "memory B per host", "memory B per queued URL",
                      "queued at the end",
                      "ready heap max", "active hosts max"], rows)
