"""The hostile web: hazards survived and pages kept, against stock Scrapy."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from benchmarks.harness import ROOT, table
from testweb import read_log

STOCK_SPIDER = """
import scrapy

class Follow(scrapy.Spider):
    name = "follow"

    def __init__(self, seeds="", **kw):
        super().__init__(**kw)
        self.seeds = seeds.split(",")

    async def start(self):
        for url in self.seeds:
            yield scrapy.Request(url)

    def parse(self, response):
        yield {"url": response.url, "status": response.status}
        if hasattr(response, "xpath"):
            for href in response.xpath("//a/@href").getall():
                yield response.follow(href)
"""


def bench_hostile(quick: bool) -> None:
    sys.path.insert(0, str(ROOT / "tests"))
    from test_hostile import Hostile

    from testweb.hostile import HAZARDS

    kinds = ["hazards", "robots5mb", "robotsbinary", "robotshtml", "robotsslow", "normal",
             "cookiebomb", "robots", "redirects", "retryafter", "crawldelay", "hops"]
    common = {"DOWNLOAD_TIMEOUT": 5, "RETRY_TIMES": 1, "DOWNLOAD_MAXSIZE": 10 * 1024 * 1024,
              "ROBOTSTXT_OBEY": True, "CRAWLER_EXT_HOSTS": "*.hostile.test=127.0.0.1",
              "LOG_LEVEL": "WARNING"}
    rows = []
    for name in ("crawler_ext (reference project)", "stock Scrapy (runspider, no project)"):
        with tempfile.TemporaryDirectory() as tmp:
            tmp_path = Path(tmp)
            server = Hostile(tmp_path)
            seeds = ",".join(server.url(k) for k in kinds)
            stats_file = tmp_path / "stats.json"
            if name.startswith("crawler_ext"):
                settings = {**common, "CRAWLER_EXT_ALLOWED_NETWORKS": "127.0.0.1/32",
                            "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.05,
                            "CRAWLER_EXT_POLITENESS_BACKOFF_MAX": 5,
                            "CRAWLER_EXT_HOST_PAGE_BUDGET": 100,
                            "CRAWLER_EXT_WARC_DIR": str(tmp_path / "warcs"),
                            "CRAWLER_EXT_STATS_FILE": str(stats_file)}
                cmd = [sys.executable, "-m", "scrapy", "crawl", "web", "-a", f"seeds={seeds}"]
                cwd = ROOT
            else:  # outside the checkout: no project settings; names pinned, nothing else
                (tmp_path / "follow.py").write_text(STOCK_SPIDER)
                settings = {**common, "DOWNLOAD_DELAY": 0.05,
                            "TWISTED_DNS_RESOLVER": "crawler_ext.hosts.HostsOverrideResolver",
                            "CRAWLER_EXT_ALLOWED_NETWORKS": "0.0.0.0/0,::/0",
                            "CLOSESPIDER_TIMEOUT": 120,
                            "EXTENSIONS": json.dumps({"crawler_ext.statsfile.StatsFile": 0}),
                            "CRAWLER_EXT_STATS_FILE": str(stats_file)}
                cmd = [sys.executable, "-m", "scrapy", "runspider", "follow.py", "-a",
                       f"seeds={seeds}"]
                cwd = tmp_path
            for key, value in settings.items():
                cmd += ["-s", f"{key}={value}"]
            started = time.time()
            try:
                proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=900,
                                      env=dict(os.environ, PYTHONPATH=str(ROOT)))
                code = proc.returncode
            except subprocess.TimeoutExpired:
                code = "timed out (900 s)"
            elapsed = time.time() - started
            log = read_log(server.log_path)
            forbidden = len(server.forbidden_connections())
            server.stop()
            stats = json.loads(stats_file.read_text()) if stats_file.exists() else {}
            fetched = {(e.host.split(".")[0], e.path) for e in log}
            ok_kinds = ("hazards", "robots5mb", "robotsbinary", "robotshtml", "normal",
                        "redirects")
            ok_pages = sum((k, f"/ok/{i}") in fetched for k in ok_kinds for i in range(5))
            tried = sum(("hazards", f"/h/{h}") in fetched for h in HAZARDS)
            rows.append([name, code, round(elapsed, 1), f"{tried}/{len(HAZARDS)}",
                         f"{ok_pages}/{5 * len(ok_kinds)}", forbidden,
                         round(stats.get("memusage/max", 0) / 1e6),
                         stats.get("finish_reason", "")])
    table("The hostile web: one crawl of 12 misbehaving hosts (15 hazards on one host, robots.txt "
          "of 5 MB/binary/HTML/no answer, redirects to a forbidden address in 9 spellings, "
          "Retry-After 999999, Crawl-delay 86400, 10,000 cookies, robots.txt redirected 6 times)",
          ["crawler", "exit", "seconds", "hazards fetched", "ordinary pages kept",
           "forbidden connections", "max RSS MB", "finish reason"], rows)
