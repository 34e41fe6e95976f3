"""The politeness-bound crawl: per-host delays bound the crawl; the pace reached and the request
log's violations, against stock Scrapy and scrapy-redis."""

from __future__ import annotations

import re
import tempfile
from collections import Counter, defaultdict
from pathlib import Path

from benchmarks.harness import REDIS, STOCK, crawl, table
from testweb import TestWebServer, politeness_violations, read_log


def bench_politeness(quick: bool) -> None:
    # at 0.25 s over 100+ hosts this machine's CPU (about 250 pages/s for Scrapy) is the bound;
    # at 1 s the per-host delays are, which is what the scheduler is judged on
    scenarios = [(100, 8, 0.25)] if quick else [(120, 20, 0.25), (150, 12, 1.0)]
    for hosts, pages, delay in scenarios:
        _politeness_scenario(hosts, pages, delay, latency=0.01)


def _politeness_scenario(hosts: int, pages: int, delay: float, latency: float) -> None:
    configs = [
        # a fixed delay (latency factor 0), so that the ideal is known exactly
        ("crawler_ext frontier", {"CRAWLER_EXT_POLITENESS_MIN_DELAY": delay,
                                  "CRAWLER_EXT_POLITENESS_LATENCY_FACTOR": 0}),
        ("stock Scrapy, DOWNLOAD_DELAY", {**STOCK, "DOWNLOAD_DELAY": delay,
                                          "CONCURRENT_REQUESTS_PER_DOMAIN": 1}),
        ("stock Scrapy, AutoThrottle", {**STOCK, "AUTOTHROTTLE_ENABLED": True,
                                        "AUTOTHROTTLE_START_DELAY": delay,
                                        "DOWNLOAD_DELAY": delay,
                                        "AUTOTHROTTLE_TARGET_CONCURRENCY": 1.0,
                                        "CONCURRENT_REQUESTS_PER_DOMAIN": 1}),
        ("scrapy-redis scheduler", {**REDIS, "DOWNLOAD_DELAY": delay,
                                    "CONCURRENT_REQUESTS_PER_DOMAIN": 1}),
        # no politeness at all: the machine's ceiling for this crawl
        ("stock Scrapy, no delay (ceiling)", {**STOCK, "CONCURRENT_REQUESTS_PER_DOMAIN": 64}),
    ]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, settings in configs:
            with TestWebServer(hosts=hosts, pages=pages, hazards=False, latency=latency,
                               workdir=Path(tmp) / re.sub(r"\W+", "_", name)) as web:
                settings = {"ROBOTSTXT_OBEY": False, "CONCURRENT_REQUESTS": 64, **settings}
                try:
                    crawl(web, settings, str(web.seeds_path), Path(tmp))
                except RuntimeError as exc:
                    rows.append([name, "failed", str(exc)[:80], "", "", "", "", ""])
                    continue
                log = read_log(web.log_path)
            per_host = Counter(e.host for e in log)
            span = max(e.end for e in log) - min(e.start for e in log)
            # ideal: every host fetched back to back, each fetch followed by the delay
            ideal_time = max(n * (latency + delay) - delay + latency for n in per_host.values())
            gap_bad = len(politeness_violations(log, delay))
            start_bad = _start_violations(log, delay)
            overlap = _overlaps(log)
            rows.append([name, len(log), round(span, 2), len(log) / span,
                         len(log) / ideal_time, (len(log) / span) / (len(log) / ideal_time),
                         gap_bad, start_bad, overlap])
    ceiling = rows[-1][3] if isinstance(rows[-1][3], float) else float("inf")
    for row in rows[:-1]:
        if isinstance(row[3], float):
            row.insert(6, row[3] / min(row[4], ceiling))
    rows[-1].insert(6, "")
    table(f"Politeness-bound crawl: {hosts} hosts x {pages} pages, delay {delay} s, latency "
          f"{latency} s, all home pages as seeds",
          ["scheduler", "fetches", "span s", "pages/s", "ideal pages/s", "ratio to ideal",
           "ratio to min(ideal, ceiling)", "gap < delay", "start-to-start < delay",
           "two at once"], rows)


def _start_violations(log: list, delay: float) -> int:
    by_host: dict[str, list] = defaultdict(list)
    for e in log:
        by_host[e.host].append(e.start)
    return sum(1 for starts in by_host.values() for a, b in zip(starts, starts[1:])
               if b - a < delay - 0.02)


def _overlaps(log: list) -> int:
    by_host: dict[str, list] = defaultdict(list)
    for e in log:
        by_host[e.host].append(e)
    return sum(1 for es in by_host.values() for a, b in zip(es, es[1:]) if b.start < a.end)
