"""Priority: the share of the top pages by true PageRank fetched early, on the test web (priority)
and on the real-site corpus (priority_real)."""

from __future__ import annotations

import re
import tempfile
from collections import defaultdict
from pathlib import Path

from benchmarks.harness import STOCK, crawl, table
from testweb import TestWebServer, politeness_violations, read_log


def bench_priority(quick: bool) -> None:
    hosts, pages = (100, 10) if quick else (300, 10)
    total = hosts * pages
    budget = total // 5
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        with TestWebServer(hosts=hosts, pages=pages, hazards=False, latency=0.002,
                           workdir=Path(tmp) / "web") as web:
            truth = web.truth()
            ranks = truth["pagerank"]
            top = {u.split("//", 1)[1] for u in sorted(ranks, key=ranks.get, reverse=True)[
                :total // 10]}
            host_rank: dict[str, float] = defaultdict(float)
            for url, r in ranks.items():
                host_rank[url.split("//")[1].split(":")[0]] += r
            best = max(host_rank.values())
            rank_file = Path(tmp) / "hostranks.csv"
            rank_file.write_text("".join(f"{h},{r / best:.4f}\n" for h, r in host_rank.items()))
            seeds = ",".join(web.url(i) for i in range(0, hosts, max(1, hosts // 10)))
            common = {"ROBOTSTXT_OBEY": False, "CONCURRENT_REQUESTS": 8,
                      "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.02}
            configs = [
                ("stock Scrapy, FIFO (BFS)", {**STOCK, "DEPTH_PRIORITY": 1,
                                              "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
                                              "SCHEDULER_DISK_QUEUE": "scrapy.squeues.PickleFifoDiskQueue",
                                              "DOWNLOAD_DELAY": 0.02,
                                              "CONCURRENT_REQUESTS_PER_DOMAIN": 1}),
                ("crawler_ext, score (OPIC importance + depth), 16 bands",
                 {"CRAWLER_EXT_FRONTIER_MAX_ACTIVE_HOSTS": 16}),
                ("crawler_ext, score + host-rank file, 16 bands", {
                    "CRAWLER_EXT_FRONTIER_MAX_ACTIVE_HOSTS": 16,
                    "CRAWLER_EXT_FRONTIER_HOST_RANK_FILE": str(rank_file)}),
                ("crawler_ext, score, 3 bands 5:2:1 (the old default)", {
                    "CRAWLER_EXT_FRONTIER_MAX_ACTIVE_HOSTS": 16, "CRAWLER_EXT_FRONTIER_BANDS": 3,
                    "CRAWLER_EXT_FRONTIER_BAND_WEIGHTS": "5,2,1"}),
            ]
            for name, settings in configs:
                web.clear_log()
                crawl(web, {**common, **settings}, seeds, Path(tmp), "-a", f"max_pages={budget}")
                log = read_log(web.log_path)[:budget]
                fetched = {f"{e.host}:{web.port}{e.path}" for e in log}
                share = len(fetched & top) / len(top)
                # (stock's DOWNLOAD_DELAY is randomised: 0.5 to 1.5 x the delay)
                rows.append([name, len(log), share,
                             len(politeness_violations(read_log(web.log_path), 0.02,
                                                       tolerance=0.005))])
    base = rows[0][2] or 1e-9
    table(f"Priority: share of the top 10 % pages by true PageRank fetched in the first 20 % "
          f"({budget} fetches) of a {total}-page crawl",
          ["order", "fetches counted", "share of top 10 %", "gap < 15 ms on a host",
           "ratio to FIFO/BFS"],
          [r + [r[2] / base] for r in rows])


def bench_priority_real(quick: bool) -> None:
    """The priority measure on real content: the real-site corpus (documentation sites of
    several generators), PageRank of its own link graph as the truth, all start pages as
    seeds, the first 20 % of fetches judged."""
    from urllib.parse import urljoin, urlsplit

    from testweb.corpus import _hrefs, build_corpus, reachable, resolve_path
    from testweb.model import pagerank
    from testweb.static import RealWebServer

    sites = build_corpus()
    graph: dict[str, list[str]] = {}
    for site in sites:
        pages = reachable(site.root, site.start)
        for path in pages:
            file = resolve_path(site.root, path)
            links = []
            if file is not None and file.suffix.lower() in (".html", ".htm"):
                for href in _hrefs(file.read_bytes()):
                    parts = urlsplit(urljoin("http://site" + path, href.strip()))
                    if parts.netloc == "site" and (parts.path or "/") in pages:
                        links.append(f"{site.host()}{parts.path or '/'}")
            graph[f"{site.host()}{path}"] = sorted(set(links))
    nodes = list(graph)
    rank = pagerank(graph)
    top = set(sorted(nodes, key=rank.get, reverse=True)[:len(nodes) // 10])
    budget = len(nodes) // 5
    configs = [
        ("stock Scrapy, FIFO (BFS)", {**STOCK, "DEPTH_PRIORITY": 1,
                                      "SCHEDULER_MEMORY_QUEUE": "scrapy.squeues.FifoMemoryQueue",
                                      "DOWNLOAD_DELAY": 0.02,
                                      "CONCURRENT_REQUESTS_PER_DOMAIN": 1}),
        ("crawler_ext, score (OPIC importance + depth), 16 bands", {}),
        ("crawler_ext, score, 3 bands 5:2:1 (the old default)", {
            "CRAWLER_EXT_FRONTIER_BANDS": 3, "CRAWLER_EXT_FRONTIER_BAND_WEIGHTS": "5,2,1"}),
        # with every host active at once (16 hosts, the default bound 10,000) links go to
        # their host's back queue at once (promoted there); with the bound at 4, most wait
        # in front queues, where the bands order them across hosts
        ("crawler_ext, 16 bands, at most 4 hosts active", {
            "CRAWLER_EXT_FRONTIER_MAX_ACTIVE_HOSTS": 4}),
    ]
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name, settings in configs:
            with RealWebServer(sites, workdir=Path(tmp) / re.sub(r"\W+", "_", name)) as web:
                seeds = ",".join(web.url(n) for n in web.sites)
                crawl(web, {"CONCURRENT_REQUESTS": 8, "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.02,
                            **settings}, seeds, Path(tmp), "-a", "allowed_domains=real.test",
                      "-a", f"max_pages={budget}")
                log = read_log(web.log_path)
            html = [e for e in log if f"{e.host}{e.path}" in graph][:budget]
            fetched = {f"{e.host}{e.path}" for e in html}
            rows.append([name, len(html), len(fetched & top) / len(top),
                         len(politeness_violations(log, 0.02, tolerance=0.005))])
    base = rows[0][2] or 1e-9
    table(f"Priority on real content: share of the top 10 % pages by PageRank of the corpus' "
          f"own link graph ({len(top)} of {len(nodes)} pages, {len(sites)} sites) in the first "
          f"20 % ({budget}) of the HTML fetches",
          ["order", "fetches counted", "share of top 10 %", "gap < 15 ms on a host",
           "ratio to FIFO/BFS"], [r + [r[2] / base] for r in rows])
