"""CPU: the whole pack against stock Scrapy when the crawler's CPU is the bound, and engine-fed
enqueue."""

from __future__ import annotations

import itertools
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from benchmarks.harness import ROOT, crawl, in_child, table
from testweb import read_log

#: stock Scrapy with the reference spider: the add-on off, Scrapy's scheduler, dupefilter and
#: robots.txt middleware; only name resolution (*.real.test, *.bench.test) by the pack
STOCK_CPU = {"ADDONS": '{"crawler_ext.Addon": null}',
             "SCHEDULER": "scrapy.core.scheduler.Scheduler",
             "DUPEFILTER_CLASS": "scrapy.dupefilters.RFPDupeFilter",
             "TWISTED_DNS_RESOLVER": "crawler_ext.hosts.HostsOverrideResolver",
             "EXTENSIONS": '{"crawler_ext.statsfile.StatsFile": 0}',  # the figures only
             "DOWNLOAD_DELAY": 0}
PACK_CPU = {"CRAWLER_EXT_POLITENESS_MAX_IN_FLIGHT": 8, "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0,
            "CRAWLER_EXT_POLITENESS_LATENCY_FACTOR": 0}


def _rate95(log: list) -> float:
    """Requests per second over the first 95 % of the crawl's requests (the tail, a few slow
    hosts, would measure the sites rather than the crawler)."""
    n = int(len(log) * 0.95)
    return (n - 1) / (log[n - 1].start - log[0].start)


def corpus_rates(modes: dict[str, dict], runs: int,
                 around: Any = None) -> tuple[int, dict[str, list[float]], dict[str, dict]]:
    """The CPU-bound crawl of the real-site corpus once per mode (its extra settings, where a
    string's ``{work}`` is the run's folder), the modes alternated ``runs`` times so the
    machine's drift hits them alike: (sites, pages/s per mode, each mode's last stats).
    ``around(mode)``, a context manager, runs around each crawl (a poller, say)."""
    import contextlib
    import tempfile

    from benchmarks.harness import crawl
    from testweb import read_log
    from testweb.corpus import build_corpus
    from testweb.static import RealWebServer

    sites = build_corpus()
    rates: dict[str, list[float]] = {mode: [] for mode in modes}
    last: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(runs):
            for mode, extra in modes.items():
                run = Path(tmp) / f"{round_}-{''.join(c for c in mode if c.isalnum())}"
                with RealWebServer(sites, workdir=run) as web:
                    seeds = ",".join(web.url(n) for n in web.sites)
                    settings = {**PACK_CPU, "CONCURRENT_REQUESTS": 64,
                                **{k: v.format(work=run) if isinstance(v, str) else v
                                   for k, v in extra.items()}}
                    with (around(mode) if around else contextlib.nullcontext()):
                        last[mode] = crawl(web, settings, seeds, run,
                                           "-a", "allowed_domains=real.test")
                    rates[mode].append(_rate95(read_log(web.log_path)))
    return len(sites), rates, last


def _profile_summary(stats_path: Path, top: int = 15) -> list[list]:
    import pstats

    stats = pstats.Stats(str(stats_path))
    total = sum(v[2] for v in stats.stats.values())  # tottime over all functions
    rows = []
    for (file, line, name), (_, calls, tottime, cumtime, _) in sorted(
            stats.stats.items(), key=lambda kv: -kv[1][2])[:top]:
        where = re.sub(r"^.*/(site-packages|lib/python3\.\d+)/", "", file)
        where = where.replace(str(ROOT) + "/", "")
        rows.append([f"{where}:{line} {name}", calls, tottime / total, cumtime / total])
    return rows


def engine_feed(kind: str, n: int, hosts: int, distinct: int) -> dict:
    """``n`` links over ``hosts`` hosts (``distinct`` different URLs, offered in turn, so the
    rest are repeats as on real pages) fed through Scrapy's engine (``engine.crawl``) of a
    real crawler with the reference settings, stock or the pack."""
    from scrapy import Request, Spider, signals
    from scrapy.crawler import CrawlerProcess
    from scrapy.utils.project import get_project_settings

    os.chdir(ROOT)
    settings = get_project_settings()
    extra = dict(STOCK_CPU) if kind == "stock" else dict(PACK_CPU)
    extra.update({"LOG_LEVEL": "WARNING", "CRAWLER_EXT_HOSTS": "*.bench.test=127.0.0.1",
                  "CRAWLER_EXT_ALLOWED_NETWORKS": "127.0.0.0/8",
                  "CRAWLER_EXT_WARC_DIR": "", "TELNETCONSOLE_ENABLED": False})
    for name, value in extra.items():
        settings.set(name, json.loads(value) if name == "ADDONS" else value, priority="cmdline")
    urls = [f"http://h{i % hosts}.bench.test/docs/section-{i // hosts}/page-{i}.html"
            for i in range(distinct)]
    result: dict = {}

    class Feed(Spider):
        name = "feed"

        async def start(self):
            return
            yield

    def opened(spider: Spider) -> None:
        engine = process_crawler.engine
        profile = None
        if os.environ.get("ENGINE_FEED_PROFILE"):
            import cProfile

            profile = cProfile.Profile()
            profile.enable()
        t0 = time.perf_counter()
        for i in range(n):
            engine.crawl(Request(urls[i % distinct]))
        result["rate"] = n / (time.perf_counter() - t0)
        if profile is not None:
            profile.disable()
            profile.dump_stats(os.environ["ENGINE_FEED_PROFILE"])
        result["queued"] = len(engine._slot.scheduler)
        from scrapy.utils.defer import deferred_from_coro
        from twisted.internet import reactor

        reactor.callLater(0, lambda: deferred_from_coro(
            engine.close_spider_async(reason="finished")))

    process = CrawlerProcess(settings)
    process_crawler = process.create_crawler(Feed)
    process_crawler.signals.connect(opened, signal=signals.spider_opened)
    process.crawl(process_crawler)
    process.start()
    return {"kind": kind, **result}


def bench_cpu(quick: bool) -> None:
    import cProfile  # noqa: F401 - the profiled run below uses it in a subprocess

    from testweb.corpus import build_corpus
    from testweb.static import RealWebServer

    sites = build_corpus()
    configs = [("stock Scrapy (no add-on), 8 per host", {**STOCK_CPU,
                                                         "CONCURRENT_REQUESTS_PER_DOMAIN": 8}),
               ("crawler_ext add-on, every component, 8 per host", PACK_CPU)]
    rounds = 1 if quick else 2
    best: dict[str, list] = {}
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        runs = itertools.count()
        for _ in range(rounds):
            for name, settings in configs:
                with RealWebServer(sites, workdir=work / f"run{next(runs)}") as web:
                    seeds = ",".join(web.url(n) for n in web.sites)
                    stats = crawl(web, {**settings, "CONCURRENT_REQUESTS": 64}, seeds, work,
                                  "-a", "allowed_domains=real.test")
                    log = read_log(web.log_path)
                rate = _rate95(log)
                if name not in best or rate > best[name][2]:
                    best[name] = [name, len(log), rate, stats.get("item_scraped_count", 0)]
        rows = list(best.values())
        rows = [r + [r[2] / rows[0][2]] for r in rows]
        table(f"CPU-bound crawl of the real-site corpus ({len(sites)} sites, no delay, 8 requests "
              f"in flight per host; rate over the first 95 % of requests, best of {rounds})",
              ["crawl", "fetches", "pages/s", "items", "ratio to stock"], rows)

        # where the pack's time goes: the same crawl under cProfile
        with RealWebServer(sites, workdir=work / "profiled") as web:
            seeds = ",".join(web.url(n) for n in web.sites)
            prof = work / "crawl.prof"
            cmd = [sys.executable, "-m", "cProfile", "-o", str(prof), "-m", "scrapy", "crawl",
                   "web", "-a", f"seeds={seeds}", "-a", "allowed_domains=real.test",
                   "-s", f"CRAWLER_EXT_HOSTS={web.hosts_setting}", "-s", "LOG_LEVEL=WARNING",
                   "-s", "CRAWLER_EXT_ALLOWED_NETWORKS=127.0.0.0/8",
                   "-s", f"CRAWLER_EXT_WARC_DIR={work / 'warcs-prof'}"]
            for key, value in PACK_CPU.items():
                cmd += ["-s", f"{key}={value}"]
            subprocess.run(cmd, cwd=ROOT, capture_output=True, timeout=900,
                           env=dict(os.environ, PYTHONPATH=str(ROOT)), check=True)
        table("Profile of the pack's CPU-bound crawl (cProfile; shares of the profiled time, "
              "inflated by the profiler)",
              ["function", "calls", "own time share", "cumulative share"],
              _profile_summary(prof))

    n, hosts, distinct = (50_000, 500, 5_000) if quick else (200_000, 2_000, 20_000)
    rows = []
    for label, count, kinds in ((f"{n:,} new URLs", n, n),
                                (f"{n:,} links, {distinct:,} distinct (repeats as on real "
                                 "pages)", n, distinct)):
        pair = [in_child("engine-feed", kind, count, hosts, kinds)
                for kind in ("stock", "pack")]
        rows += [[label, "stock Scrapy scheduler + RFPDupeFilter", pair[0]["rate"], 1.0],
                 [label, "crawler_ext frontier + Bloom seen set", pair[1]["rate"],
                  pair[1]["rate"] / pair[0]["rate"]]]
    table(f"Engine-fed enqueue: links through engine.crawl of a real crawler over {hosts:,} "
          f"hosts (each side in a process of its own)",
          ["links", "scheduler", "links/s", "ratio to stock"], rows)
