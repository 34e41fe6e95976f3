"""Scale: millions of queued URLs over 100,000 hosts through the disk frontier against stock
Scrapy's queues (scale, scale50), and the dispatch probe (dispatch)."""

from __future__ import annotations

import gc
import os
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.harness import disk_usage, in_child, rss_bytes, table


def scale_run(kind: str, n: int, hosts: int, dispatch_max: int | None = None,
               collector: str = "on") -> dict:
    """One scheduler fed ``n`` new links over ``hosts`` hosts through ``enqueue_request`` (a
    Request built per link, as a spider does), then drained through ``next_request``; RSS growth
    and disk use after the enqueue.  ``kind``: ``disk`` (crawler_ext's disk frontier, admission
    and the Bloom seen set included), ``stock-memory``, ``stock-disk`` (Scrapy's scheduler with
    its disk queues and RFPDupeFilter under JOBDIR).  ``collector``: ``on``, ``off`` (the
    garbage collector switched off while dispatching), or ``census`` (after ``dispatch_max``
    dispatches, the objects the collector tracks that each request in flight keeps alive,
    counted over the next 9,999 dispatches, before their reap; nothing is timed)."""
    from scrapy import Request, Spider
    from scrapy.utils.reactor import install_reactor, is_reactor_installed

    if not is_reactor_installed():  # the scheduler arms its wake-up timers on it
        install_reactor("twisted.internet.asyncioreactor.AsyncioSelectorReactor")
    tmp = Path(tempfile.mkdtemp(prefix="scale-bench-"))
    spider = Spider("bench")
    gc.collect()
    rss0 = rss_bytes()
    store = None
    if kind == "disk":
        from crawler_ext.frontier import Frontier, PolitenessPolicy
        from crawler_ext.frontier.adapter.roles import SchedulerOptions
        from crawler_ext.frontier.adapter.scheduler import FrontierScheduler
        from crawler_ext.frontier.disk import DiskStore
        from crawler_ext.frontier.kv import RocksEngine
        from crawler_ext.frontier.scoring import Scorer
        from crawler_ext.frontier.strategy import DefaultStrategy
        from crawler_ext.seen.bloom import BloomDupeFilter

        store = DiskStore(tmp / "frontier", 3, RocksEngine())
        # no politeness wait, so that dispatch is measured: every host ready at once
        frontier = Frontier(store, PolitenessPolicy(min_delay=0, max_delay=0), [5, 2, 1],
                            max_active_keys=10_000, max_in_flight=1)
        sched = FrontierScheduler(frontier, BloomDupeFilter(capacity=n), DefaultStrategy(Scorer(3)),
                                  SchedulerOptions(flush_interval=3600, log_interval=0))
        sched.spider = spider
        store.open()
        left = sched.parts.inflight.left
    else:
        from scrapy.core.scheduler import Scheduler
        from scrapy.utils.test import get_crawler

        settings = {"SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.ScrapyPriorityQueue"}
        if kind == "stock-disk":
            settings["JOBDIR"] = str(tmp / "job")
        sched = Scheduler.from_crawler(get_crawler(Spider, settings))
        sched.open(spider)
        left = None
    # the spider's part (a Request per link) is built in batches outside the scheduler's
    # time; both are reported
    t0 = time.perf_counter()
    in_scheduler = 0.0
    for start in range(0, n, 10_000):
        batch = [Request(f"http://h{i % hosts}.example.com/section/{i // hosts}/page-{i}.html")
                 for i in range(start, min(n, start + 10_000))]
        t = time.perf_counter()
        for request in batch:
            sched.enqueue_request(request)
        if store is not None:
            sched.parts.durability.flush()  # what the scheduler's flush loop does every 0.2 s
        in_scheduler += time.perf_counter() - t
        done = start + len(batch)
        if done % 2_000_000 == 0:
            print(f"  [{kind}] {done:,} queued in {time.perf_counter() - t0:.0f} s "
                  f"({done / in_scheduler:,.0f}/s in the scheduler), "
                  f"RSS +{(rss_bytes() - rss0) / 2**20:.1f} MiB ({(rss_bytes() - rss0) / done:.1f} B/URL)",
                  file=sys.stderr, flush=True)
    del batch
    t1 = time.perf_counter()
    gc.collect()
    rss = rss_bytes() - rss0
    disk = disk_usage(tmp)
    full = [0, 0.0, 0.0]  # full collections while dispatching, their time, the last start

    def on_collection(phase: str, info: dict) -> None:
        if info["generation"] == 2:
            if phase == "start":
                full[2] = time.perf_counter()
            else:
                full[0] += 1
                full[1] += time.perf_counter() - full[2]

    flushing = [0.0]

    def drain(limit: int, reap: bool = True) -> int:
        got = 0
        while got < limit and (request := sched.next_request()) is not None:
            got += 1
            if left is not None:
                left(request)  # the download returns at once: the host is free again
            if reap and store is not None and got % 10_000 == 0:
                t = time.perf_counter()
                sched.parts.durability.flush()  # completes what was processed, commits, flushes the seen set
                flushing[0] += time.perf_counter() - t
        return got

    kept = None
    if collector == "census":  # after the dispatches asked for, the next 9,999 before a reap
        drain(dispatch_max or 0)
        sched.parts.durability.flush()
        before = _tracked_types()
        extra = drain(9_999, reap=False)
        kept = {name: count / extra
                for name, count in (_tracked_types() - before).most_common(5)}
    gc.callbacks.append(on_collection)
    if collector == "off":
        gc.disable()
    t2 = time.perf_counter()
    got = drain((dispatch_max or n) if collector != "census" else 0)
    if store is not None:  # the last flush, in the time as the others
        t = time.perf_counter()
        sched.parts.durability.flush()
        flushing[0] += time.perf_counter() - t
    t3 = time.perf_counter()
    gc.enable()
    gc.callbacks.remove(on_collection)
    gc.collect()
    rss_after = rss_bytes() - rss0
    import shutil

    shutil.rmtree(tmp, ignore_errors=True)
    return {"kind": kind, "n": n, "rss": rss / n, "disk": disk / n, "enqueue": n / in_scheduler,
            "enqueue_with_requests": n / (t1 - t0),
            "dispatch": got / (t3 - t2) if got else 0.0, "dispatched": got,
            "rss_after_dispatch": rss_after / n,
            "flush_share": flushing[0] / (t3 - t2) if got else 0.0,
            "full_collections": full[0], "collection_share": full[1] / (t3 - t2) if got else 0.0,
            "kept_per_request": kept}


def _tracked_types() -> Counter:
    """The objects the garbage collector tracks, by type, after a collection."""
    gc.collect()
    return Counter(type(o).__name__ for o in gc.get_objects())


def _build() -> str:
    """Which build of crawler_ext this run measures (setup.py)."""
    import crawler_ext

    return "compiled" if crawler_ext.compiled() else "Python (nothing compiled in this install)"


def bench_dispatch(quick: bool) -> None:
    """Where the disk frontier's dispatch goes: the scale run's dispatch loop at a tenth of
    its size (the same hosts), compiled (setup.py) and as Python, with the collector as it is
    and switched off, side by side, and what each request in flight keeps alive for the
    collector (counted after as many dispatches, so that every host has been seen)."""
    n, hosts, m = (200_000, 20_000, 60_000) if quick else (1_000_000, 100_000, 300_000)
    build = _build()
    runs = [(f"{build}, collector as it is", in_child("scale", "disk", n, hosts, m, "on")),
            (f"{build}, collector off while dispatching",
             in_child("scale", "disk", n, hosts, m, "off")),
            ("Python (CRAWLER_EXT_PURE_PYTHON=1), collector as it is",
             in_child("scale", "disk", n, hosts, m, "on", python=True))]
    census = in_child("scale", "disk", n, hosts, m, "census")
    kept = ", ".join(f"{name} {per:.2f}" for name, per in census["kept_per_request"].items()
                     if per >= 0.05)
    python = runs[-1][1]["dispatch"]
    table(f"Dispatch probe: {m:,} dispatches after {n:,} URLs over {hosts:,} hosts were "
          f"enqueued (crawler_ext's disk frontier; a reap every 10,000); objects kept alive "
          f"per request in flight: {kept}",
          ["build, collector", "dispatch/s", "share in the flush (reap, commit)",
           "full collections", "share in full collections", "enqueue/s (scheduler)",
           "dispatch vs Python"],
          [[name, r["dispatch"], r["flush_share"], r["full_collections"],
            r["collection_share"], r["enqueue"], r["dispatch"] / python] for name, r in runs])


def bench_scale(quick: bool) -> None:
    n, hosts = (200_000, 2_000) if quick else (10_000_000, 100_000)
    names = {"disk": "crawler_ext, disk frontier (RocksDB)",
             "stock-memory": "stock Scrapy scheduler (memory)",
             "stock-disk": "stock Scrapy scheduler (disk queues, JOBDIR)"}
    rows = [in_child("scale", kind, n, hosts) for kind in names]
    base = rows[1]
    build = _build()
    table(f"Scale: {n:,} queued URLs over {hosts:,} hosts (enqueue through admission and the "
          f"seen set, then dispatch everything; memory is the process RSS growth; each "
          f"scheduler in a process of its own; crawler_ext: {build})",
          ["frontier", "URLs", "memory bytes per URL", "disk bytes per URL",
           "enqueue/s (scheduler)", "enqueue/s (with the spider's Request)", "dispatch/s",
           "dispatched", "memory vs stock memory", "enqueue rate vs stock"],
          [[names[r["kind"]], r["n"], r["rss"], r["disk"], r["enqueue"],
            r["enqueue_with_requests"], r["dispatch"], r["dispatched"], r["rss"] / base["rss"],
            r["enqueue"] / base["enqueue"]] for r in rows])


def bench_scale50(quick: bool) -> None:
    """The disk frontier at 10 M and 50 M queued URLs: RSS should stay flat (dispatch sampled
    over the first 2 M)."""
    sizes = [(1_000_000, 10_000), (5_000_000, 50_000)] if quick else \
        [(10_000_000, 100_000), (50_000_000, 100_000)]
    if os.environ.get("SCALE50_ONLY"):  # the 10 M row taken from `scale` (same code and size)
        sizes = sizes[1:]
    rows = []
    for n, hosts in sizes:
        r = in_child("scale", "disk", n, hosts, 2_000_000, timeout=4 * 3600)
        rows.append([n, hosts, r["rss"] * n / 2**20, r["rss"], r["disk"], r["enqueue"],
                     r["dispatch"]])
    table("Disk frontier at scale: RSS growth after enqueue (through admission and the seen "
          "set), dispatch over the first 2,000,000",
          ["URLs", "hosts", "RSS growth MiB", "RSS bytes per URL", "disk bytes per URL",
           "enqueue/s (scheduler)", "dispatch/s"],
          rows + ([["50 M vs 10 M RSS", "", rows[-1][2] / rows[0][2], "", "", "", ""]]
                  if len(rows) > 1 else []))
