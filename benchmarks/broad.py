"""The broad crawl: the pack against stock Scrapy set up as Scrapy's "Broad Crawls" page says,
on the broad test web (``testweb/broad.py``: 10,000 hosts over shared addresses, its own DNS
server, lognormal latencies, dead hosts, robots.txt variants), the same duration each,
alternated runs, at ``CONCURRENT_REQUESTS`` 100 and 1,000.

Figures, from the server's request log unless said: pages/s after the warm-up, pages per
CPU-second of the crawler's whole process tree (``getrusage`` of the reaped crawl), peak RSS
(Scrapy's ``memusage/max``) and RSS per host met (all of it, and beyond the RSS at start-up,
``memusage/startup``), hosts with a page, time to 1,000 hosts,
politeness gaps under 1.8 s on one host (both crawls ask for 2 s), robots.txt violations
(RFC 9309: 5xx and unreachable mean disallow all), DNS queries per name (the DNS server's
log), the reactor's lag p99 (a probe extension beside both crawls, ``LagProbe`` below).
"""

from __future__ import annotations

import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import ROOT, table
from testweb import politeness_violations, read_log
from testweb.broad import BroadWebServer, robots_violations

STOCK_SPIDER = """
import scrapy


class Follow(scrapy.Spider):
    name = "follow"

    def __init__(self, seeds="", **kw):
        super().__init__(**kw)
        self.seeds_file = seeds

    async def start(self):
        with open(self.seeds_file) as fh:
            for line in fh:
                if line.strip():
                    yield scrapy.Request(line.strip())

    def parse(self, response):
        yield {"url": response.url, "status": response.status}
        if hasattr(response, "xpath"):
            for href in response.xpath("//a/@href").getall():
                yield response.follow(href)
"""

#: Scrapy's "Broad Crawls" page, word for word, plus robots.txt, a 2 s delay and one request
#: a host at a time
BROAD_CRAWLS_PAGE = {
    "SCHEDULER_PRIORITY_QUEUE": "scrapy.pqueues.DownloaderAwarePriorityQueue",
    "REACTOR_THREADPOOL_MAXSIZE": 20, "LOG_LEVEL": "INFO", "COOKIES_ENABLED": False,
    "RETRY_ENABLED": False, "DOWNLOAD_TIMEOUT": 15, "REDIRECT_ENABLED": False,
    "DEPTH_PRIORITY": 1, "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
    "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
    "ROBOTSTXT_OBEY": True, "DOWNLOAD_DELAY": 2, "CONCURRENT_REQUESTS_PER_DOMAIN": 1,
}
#: the pack as a user sets it for a broad crawl (docs/broad.md)
PACK = {"CRAWLER_EXT_POLITENESS_MIN_DELAY": 2, "LOG_LEVEL": "INFO", "DOWNLOAD_TIMEOUT": 15,
        "CRAWLER_EXT_WARC_GZIP_LEVEL": 1, "CRAWLER_EXT_GC_THRESHOLD": 10_000,
        "CRAWLER_EXT_ROBOTS_TIMEOUT": 5}
GAP = 1.8  # seconds: a shorter gap between two fetches of one host is a politeness violation


class LagProbe:
    """An extension measuring the reactor's lag: a call every 10 ms, how late it ran;
    ``reactor/lag_p99_ms`` and ``reactor/lag_max_ms`` in the stats at close; and the crawl
    process's own CPU seconds (its workers' not counted), ``benchmark/crawl_process_cpu_s``."""

    def __init__(self, crawler: Any) -> None:
        from scrapy import signals

        self.crawler = crawler
        self.lags: list[float] = []
        self._loop: Any = None
        crawler.signals.connect(self.opened, signal=signals.spider_opened)
        crawler.signals.connect(self.closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Any) -> LagProbe:
        return cls(crawler)

    def opened(self, spider: Any = None) -> None:
        from twisted.internet import task

        self._last = time.monotonic()
        self._loop = task.LoopingCall(self.tick)
        self._loop.start(0.01, now=False)

    def tick(self) -> None:
        now = time.monotonic()
        self.lags.append(max(0.0, now - self._last - 0.01))
        self._last = now

    def closed(self, spider: Any = None) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        own = resource.getrusage(resource.RUSAGE_SELF)
        self.crawler.stats.set_value("benchmark/crawl_process_cpu_s",
                                     round(own.ru_utime + own.ru_stime, 2))
        if self.lags:
            lags = sorted(self.lags)
            stats = self.crawler.stats
            stats.set_value("reactor/lag_p99_ms", round(lags[int(len(lags) * 0.99)] * 1000, 1))
            stats.set_value("reactor/lag_max_ms", round(lags[-1] * 1000, 1))


def _run(kind: str, server: BroadWebServer, concurrency: int, duration: int,
         workdir: Path, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    """One crawl (``extra``: settings over the pack's or stock's)."""
    stats_file = workdir / "stats.json"
    extensions = {"crawler_ext.statsfile.StatsFile": 0, "benchmarks.broad.LagProbe": 0}
    if kind == "pack":
        settings = {**PACK, "CONCURRENT_REQUESTS": concurrency,
                    "CRAWLER_EXT_DNS_SERVERS": f"127.0.0.1:{server.dns_port}",
                    "CRAWLER_EXT_ALLOWED_NETWORKS": "127.0.0.0/8",
                    "CRAWLER_EXT_WARC_DIR": str(workdir / "warcs")}
        cmd = [sys.executable, "-m", "scrapy", "crawl", "web", "-a",
               f"seeds={server.seeds_path}"]
        cwd = ROOT
    else:  # outside the checkout: no project settings
        (workdir / "follow.py").write_text(STOCK_SPIDER)
        settings = {**BROAD_CRAWLS_PAGE, "CONCURRENT_REQUESTS": concurrency,
                    "TWISTED_DNS_RESOLVER": "testweb.dns.PlainResolver",
                    "TESTWEB_DNS_SERVER": f"127.0.0.1:{server.dns_port}"}
        cmd = [sys.executable, "-m", "scrapy", "runspider", "follow.py", "-a",
               f"seeds={server.seeds_path}"]
        cwd = workdir
    # peak RSS (Scrapy's memusage/max) read every second: at Scrapy's 60 s a crawl shorter
    # than a minute reported its RSS at start-up, and a longer one missed its last minute
    settings.update({"CLOSESPIDER_TIMEOUT": duration, "CRAWLER_EXT_STATS_FILE": str(stats_file),
                     "MEMUSAGE_CHECK_INTERVAL_SECONDS": 1,
                     "EXTENSIONS": json.dumps(extensions), **(extra or {})})
    for name, value in settings.items():
        cmd += ["-s", f"{name}={value}"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.time()
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=duration + 300,
                          env=dict(os.environ, PYTHONPATH=str(ROOT)))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    stats = json.loads(stats_file.read_text()) if stats_file.exists() else {}
    output = proc.stdout + proc.stderr
    return {"code": proc.returncode, "cpu": cpu, "stats": stats, "started": started,
            "errors": output.count(" ERROR: "), "tracebacks": output.count("Traceback")}


def _figures(run: dict[str, Any], server: BroadWebServer, warmup: float) -> dict[str, Any]:
    log = [e for e in read_log(server.log_path) if e.start >= run["started"]]
    pages = sorted(e.end for e in log if e.status == 200 and e.path != "/robots.txt")
    end = max((e.end for e in log), default=run["started"])
    after = [t for t in pages if t >= run["started"] + warmup]
    rate = len(after) / max(1e-9, end - run["started"] - warmup)
    first: dict[str, float] = {}
    for e in sorted(log, key=lambda e: e.end):
        if e.status == 200 and e.path != "/robots.txt":
            first.setdefault(e.host, e.end)
    times = sorted(first.values())
    to_1000 = times[999] - run["started"] if len(times) >= 1000 else None
    met = {e.host for e in log}
    queries = server.dns_queries()
    rss = run["stats"].get("memusage/max", 0)
    base = run["stats"].get("memusage/startup", 0)  # the process before it meets a host
    return {"pages_s": rate, "pages_cpu_s": len(pages) / run["cpu"] if run["cpu"] else 0.0,
            "cpu_cores": run["cpu"] / max(1e-9, end - run["started"]),
            "rss_mib": rss / 2 ** 20, "rss_per_host": rss / max(1, len(met)),
            "rss_beyond_base": (rss - base) / max(1, len(met)),
            "hosts": len(first), "to_1000": to_1000,
            "gaps": len(politeness_violations(log, GAP)),
            "robots": len(robots_violations(log, server.web)),
            "dns_per_name": sum(queries.values()) / max(1, len(queries)),
            "lag_p99": run["stats"].get("reactor/lag_p99_ms"),
            # the crawl process's own CPU a page, ms (its workers' not counted)
            "crawl_ms_page": 1000 * run["stats"].get("benchmark/crawl_process_cpu_s", 0)
            / max(1, len(pages)),
            "errors": run["errors"], "tracebacks": run["tracebacks"], "code": run["code"]}


def bench_broad(quick: bool, concurrencies: list[int] | None = None,
                runs: int | None = None) -> None:
    """(``concurrencies`` and ``runs`` narrow the full run, e.g. ``bench_broad(False, [1000],
    1)``: one run each at 1,000 in flight.)"""
    hosts = 2_000 if quick else 10_000
    duration = 60 if quick else 300
    warmup = 15 if quick else 60
    concurrencies = concurrencies or ([100] if quick else [100, 1000])
    runs = runs or (1 if quick else 2)
    for concurrency in concurrencies:
        results: dict[str, list[dict]] = {"stock": [], "pack": []}
        for n in range(runs):
            for kind in (("stock", "pack") if n % 2 == 0 else ("pack", "stock")):
                with tempfile.TemporaryDirectory(prefix="broad-bench-") as tmp:
                    with BroadWebServer(Path(tmp) / "web", hosts=hosts) as server:
                        run = _run(kind, server, concurrency, duration, Path(tmp))
                        results[kind].append(_figures(run, server, warmup))
                print(f"{kind} c={concurrency} run {n}: {results[kind][-1]}", flush=True)
        rows = []
        for kind, name in (("stock", "stock Scrapy (Broad Crawls page)"),
                           ("pack", "crawler_ext")):
            figures = results[kind]

            def med(key: str) -> Any:
                values = [f[key] for f in figures if f[key] is not None]
                return statistics.median(values) if values else "-"
            rows.append([name, med("pages_s"), med("pages_cpu_s"), med("crawl_ms_page"),
                         med("cpu_cores"),
                         med("rss_mib"), med("rss_per_host"), med("rss_beyond_base"),
                         med("hosts"), med("to_1000"),
                         sum(f["gaps"] for f in figures), sum(f["robots"] for f in figures),
                         med("dns_per_name"), med("lag_p99"),
                         sum(f["errors"] for f in figures),
                         sum(f["tracebacks"] for f in figures)])
        table(f"Broad crawl, {hosts:,} hosts, CONCURRENT_REQUESTS {concurrency}, {duration} s "
              f"each, median of {runs} alternated run(s)",
              ["crawler", "pages/s after warm-up", "pages per CPU-s",
               "crawl process's CPU ms a page", "cores", "peak RSS MiB",
               "RSS B per host met", "RSS B per host beyond start-up", "hosts with a page",
               "s to 1,000 hosts",
               f"gaps < {GAP} s", "robots.txt violations", "DNS queries per name",
               "reactor lag p99 ms", "ERROR lines", "tracebacks"], rows)


def _redis_cpu(client: Any) -> float:
    info = client.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def _run_workers(n: int, server: BroadWebServer, concurrency: int, duration: int,
                 workdir: Path, redis_url: str) -> dict[str, Any]:
    """The pack as ``python -m crawler_ext.workers -n N`` on one shared frontier in Redis;
    the CPU of the whole process tree and of the Redis server."""
    import redis as redis_lib

    client = redis_lib.Redis.from_url(redis_url)
    client.flushdb()
    settings = {**PACK, "CONCURRENT_REQUESTS": concurrency, "CLOSESPIDER_TIMEOUT": duration,
                "CRAWLER_EXT_DNS_SERVERS": f"127.0.0.1:{server.dns_port}",
                "CRAWLER_EXT_ALLOWED_NETWORKS": "127.0.0.0/8",
                "CRAWLER_EXT_WARC_DIR": str(workdir / "warcs")}
    cmd = [sys.executable, "-m", "crawler_ext.workers", "-n", str(n), "--redis-url", redis_url,
           "--crawl", "broadbench", "--log-dir", str(workdir / "logs"), "--",
           "crawl", "web", "-a", f"seeds={server.seeds_path}"]
    for name, value in settings.items():
        cmd += ["-s", f"{name}={value}"]
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    redis_before = _redis_cpu(client)
    started = time.time()
    proc = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True,
                          timeout=duration + 300, env=dict(os.environ, PYTHONPATH=str(ROOT)))
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    redis_used = _redis_cpu(client) - redis_before
    client.flushdb()
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    logs = "".join(p.read_text(errors="replace") for p in (workdir / "logs").glob("*.log"))
    return {"code": proc.returncode, "cpu": cpu + redis_used, "redis_cpu": redis_used,
            "stats": {}, "started": started, "errors": logs.count(" ERROR: "),
            "tracebacks": logs.count("Traceback")}


def bench_broad_workers(quick: bool) -> None:
    """``python -m crawler_ext.workers -n 2`` against one worker, the same way (both on the
    shared frontier in Redis, whose CPU counts), alternated, on the broad web."""
    hosts = 2_000 if quick else 10_000
    duration = 60 if quick else 300
    warmup = 15 if quick else 60
    runs = 1 if quick else 2
    redis_url = os.environ.get("CRAWLER_EXT_BENCH_REDIS", "redis://127.0.0.1:6379/7")
    # 0: one process with its own frontier in memory (no Redis), the same concurrency
    results: dict[int, list[dict]] = {0: [], 1: [], 2: []}
    for r in range(runs):
        for n in ((0, 1, 2) if r % 2 == 0 else (2, 1, 0)):
            with tempfile.TemporaryDirectory(prefix="broad-workers-") as tmp:
                with BroadWebServer(Path(tmp) / "web", hosts=hosts) as server:
                    run = _run_workers(n, server, 200, duration, Path(tmp), redis_url) if n \
                        else {**_run("pack", server, 200, duration, Path(tmp)), "redis_cpu": 0.0}
                    figures = _figures(run, server, warmup)
                    figures["redis_cpu"] = run["redis_cpu"]
                    results[n].append(figures)
            print(f"workers={n} run {r}: {results[n][-1]}", flush=True)

    def med(n: int, key: str) -> float:
        return statistics.median(f[key] for f in results[n])
    rows = [["one process, frontier in memory" if n == 0 else f"-n {n} (Redis)",
             med(n, "pages_s"), med(n, "pages_cpu_s"), med(n, "cpu_cores"),
             med(n, "redis_cpu"), sum(f["gaps"] for f in results[n]),
             sum(f["robots"] for f in results[n]), sum(f["tracebacks"] for f in results[n])]
            for n in (0, 1, 2)]
    table(f"python -m crawler_ext.workers on the broad web, {hosts:,} hosts, 200 in flight a "
          f"worker, {duration} s each, median of {runs} alternated run(s); CPU includes "
          f"Redis's",
          ["workers", "pages/s after warm-up", "pages per CPU-s", "cores", "Redis CPU-s",
           f"gaps < {GAP} s", "robots.txt violations", "tracebacks"], rows)
    for n, name in ((1, "-n 1 (Redis)"), (0, "one process")):
        print(f"-n 2 / {name}: pages/s {med(2, 'pages_s') / med(n, 'pages_s'):.2f}, pages per "
              f"CPU-s {med(2, 'pages_cpu_s') / med(n, 'pages_cpu_s'):.2f}")
