"""Memory a broad crawl spends per host it knows, beyond a fixed base: the pack alone on two
sizes of the broad web (``testweb/broad.py``), the same concurrency and pages, alternated.

Both crawls stop at the same number of pages (``CLOSESPIDER_ITEMCOUNT``).  They do not admit
the same URLs: on the wider web more of a page's links are new (about 1.5 times the URLs at
4,000 hosts), and the bounded caches (the promotion and trap-chain memories, the queue heads)
fill with them, so the slope holds a per-URL part too (the table shows the URLs admitted).
The peak is read every second (see ``benchmarks.broad._run``).  The figure is the slope of peak RSS (Scrapy's
``memusage/max``) over the hosts known -- the names the crawl asked the web's DNS server for,
which the pack resolves as a host's first URL is admitted (``CRAWLER_EXT_DNS_PREFETCH``) -- and
the fixed base is what the slope leaves at zero hosts.  Two setups: the frontier in memory, and on disk (``JOBDIR``,
as ``docs/broad.md``'s settings block has it).
"""

from __future__ import annotations

import statistics
import tempfile
from pathlib import Path
from typing import Any

from benchmarks.broad import _figures, _run
from benchmarks.harness import table
from testweb.broad import BroadWebServer

#: docs/broad.md's settings block, as far as a benchmark run takes it
PRESET: dict[str, Any] = {}


def _one(hosts: int, concurrency: int, pages: int, on_disk: bool) -> dict[str, Any]:
    duration = 600  # a bound: the crawl stops at its pages
    with tempfile.TemporaryDirectory(prefix="broad-memory-") as tmp:
        extra = {**PRESET, "CLOSESPIDER_ITEMCOUNT": pages,
                 **({"JOBDIR": str(Path(tmp) / "job")} if on_disk else {})}
        with BroadWebServer(Path(tmp) / "web", hosts=hosts) as server:
            run = _run("pack", server, concurrency, duration, Path(tmp), extra)
            figures = _figures(run, server, warmup=10)
            figures["known"] = len(server.dns_queries())
    figures["rss"] = run["stats"].get("memusage/max", 0)
    figures["pages"] = run["stats"].get("item_scraped_count", 0)
    # more hosts, more of a page's links are new: URLs admitted grow with the hosts too
    figures["admitted"] = run["stats"].get("scheduler/enqueued", 0)
    return figures


def bench_broad_memory(quick: bool, runs: int | None = None,
                       setups: tuple[bool, ...] = (False, True)) -> None:
    """(``runs`` and ``setups`` narrow or widen it, e.g. ``bench_broad_memory(True, 3,
    (True,))``: three runs of each size, the frontier on disk only.)"""
    small, large = (1_000, 4_000) if quick else (2_000, 10_000)
    pages = 6_000 if quick else 20_000
    concurrency = 100 if quick else 300
    runs = runs or (1 if quick else 2)
    rows = []
    for on_disk in setups:
        results: dict[int, list[dict[str, Any]]] = {small: [], large: []}
        for r in range(runs):
            for hosts in ((small, large) if r % 2 == 0 else (large, small)):
                results[hosts].append(_one(hosts, concurrency, pages, on_disk))
                print(f"hosts={hosts} on_disk={on_disk} run {r}: {results[hosts][-1]}",
                      flush=True)

        def med(hosts: int, key: str, results: dict = results) -> float:
            return statistics.median(f[key] for f in results[hosts])
        slope = (med(large, "rss") - med(small, "rss")) / max(
            1, med(large, "known") - med(small, "known"))
        base = med(small, "rss") - slope * med(small, "known")
        rows.append(["on disk (JOBDIR)" if on_disk else "in memory",
                     f"{med(small, 'known'):,.0f} / {med(large, 'known'):,.0f}",
                     f"{med(small, 'pages'):,.0f} / {med(large, 'pages'):,.0f}",
                     f"{med(small, 'admitted'):,.0f} / {med(large, 'admitted'):,.0f}",
                     f"{med(small, 'rss') / 2 ** 20:,.0f} / {med(large, 'rss') / 2 ** 20:,.0f}",
                     slope, base / 2 ** 20,
                     sum(f["gaps"] + f["robots"] for fs in results.values() for f in fs)])
    table(f"Broad crawl memory: the pack on {small:,} and {large:,} hosts, "
          f"CONCURRENT_REQUESTS {concurrency}, {pages:,} pages each, median of {runs} "
          f"alternated run(s)",
          ["frontier", "hosts known", "pages", "URLs admitted", "peak RSS MiB", "RSS B per known host",
           "fixed base MiB", "gaps + robots.txt violations"], rows)
