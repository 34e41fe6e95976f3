"""Real crawls of the test web with the frontier scheduler, judged by the server's request log."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

import pytest
from conftest import ROOT, archived_uris, run_crawl

from testweb import politeness_violations, read_log
from crawler_ext.warc.cdxj import read_index


def base_settings(web, **extra) -> dict:
    settings = {"CRAWLER_EXT_HOSTS": web.hosts_setting, "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.25,
                "CRAWLER_EXT_ALLOWED_NETWORKS": "127.0.0.0/8",
                "CRAWLER_EXT_FRONTIER_LOG_INTERVAL": 5, "LOG_LEVEL": "INFO"}
    settings.update(extra)
    return settings


@pytest.mark.slow
def test_politeness_holds_and_every_page_is_fetched_once(testweb_factory, tmp_path: Path) -> None:
    web = testweb_factory(hosts=30, pages=8, hazards=False)
    result = run_crawl("-a", f"seeds={web.url(0)}", items_path=tmp_path / "items.jsonl",
                       settings=base_settings(web, ROBOTSTXT_OBEY=False))
    assert result.returncode == 0, result.output[-3000:]
    log = read_log(web.log_path)
    pages = {(e.host, e.path) for e in log}
    assert len(pages) == 30 * 8
    assert max(Counter((e.host, e.path) for e in log).values()) == 1
    assert politeness_violations(log, min_gap=0.25) == []
    assert result.stat("frontier/dispatched") == 240


@pytest.mark.slow
def test_429_and_503_back_off_and_retry_after_is_honoured(testweb_factory, tmp_path: Path) -> None:
    # host 4 answers 429 + Retry-After: 2 when hit within 0.8 s; host 9 answers 503 +
    # Retry-After: 1 the first time for some pages
    web = testweb_factory(hosts=10, pages=10)
    result = run_crawl("-a", f"seeds={web.url(4)},{web.url(9)}",
                       "-a", "allowed_domains=h0004.web.test,h0009.web.test",
                       items_path=tmp_path / "items.jsonl",
                       settings=base_settings(web, ROBOTSTXT_OBEY=False))
    assert result.returncode == 0, result.output[-3000:]
    by_host: dict[str, list] = defaultdict(list)
    for e in read_log(web.log_path):
        by_host[e.host].append(e)
    statuses = Counter(e.status for entries in by_host.values() for e in entries)
    assert statuses[429] >= 1 and statuses[503] >= 1
    waits = {429: 2.0, 503: 1.0}
    checked = 0
    for entries in by_host.values():
        for prev, cur in zip(entries, entries[1:]):
            if prev.status in waits:
                assert cur.start - prev.end >= waits[prev.status] - 0.02, (prev, cur)
                checked += 1
    assert checked >= 2
    # every page still arrives: the frontier re-queues what was refused
    fetched_ok = {e.path for entries in by_host.values() for e in entries if e.status == 200}
    assert {"/", "/p/3.html", "/p/9.html"} <= fetched_ok
    assert result.stat("frontier/retry_after_honoured") >= 2


def durable_crawl(web, tmp_path: Path, backend: str = "disk", **extra
                  ) -> tuple[dict, list[str]]:
    """Settings and command line of a durable (JOBDIR) crawl from the web's host 0."""
    settings = base_settings(web, ROBOTSTXT_OBEY=False, JOBDIR=str(tmp_path / "job"),
                             CRAWLER_EXT_FRONTIER_BACKEND=backend,
                             CRAWLER_EXT_POLITENESS_MIN_DELAY=0.3,
                             CRAWLER_EXT_BLOOM_SNAPSHOT_INTERVAL=1,
                             CRAWLER_EXT_WARC_DIR=str(tmp_path / "warcs"), **extra)
    cmd = [sys.executable, "-m", "scrapy", "crawl", "web", "-a", f"seeds={web.url(0)}"]
    for k, v in settings.items():
        cmd += ["-s", f"{k}={v}"]
    return settings, cmd


@pytest.mark.slow
@pytest.mark.parametrize("backend", ["disk", "sqlite", "sqlite, resumed by default"])
def test_kill_9_and_resume_loses_no_url(testweb_factory, tmp_path: Path, backend: str) -> None:
    """... with the disk frontier, the sqlite one, and a JOBDIR begun with the sqlite frontier
    resumed without naming a backend (it stays sqlite: the migration path of older crawls)."""
    web = testweb_factory(hosts=20, pages=10, hazards=False)
    warcs = tmp_path / "warcs"
    settings, cmd = durable_crawl(web, tmp_path, backend.split(",")[0])
    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            env=dict(os.environ, PYTHONPATH=str(ROOT)))
    deadline = time.time() + 60
    while time.time() < deadline and len(web.log()) < 60:
        time.sleep(0.05)
    import psutil

    helpers = psutil.Process(proc.pid).children(recursive=True)  # dedup worker, WARC writer
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    before = web.log()
    assert 60 <= len(before) < 200, "the kill must land mid-crawl"
    assert len(helpers) >= 2
    gone, alive = psutil.wait_procs(helpers, timeout=10)
    assert not alive, f"helper processes outlived the killed crawl: {alive}"

    if "default" in backend:
        del settings["CRAWLER_EXT_FRONTIER_BACKEND"]
    result = run_crawl("-a", f"seeds={web.url(0)}", items_path=tmp_path / "items.jsonl",
                       settings=settings)
    assert result.returncode == 0, result.output[-3000:]
    if "default" in backend:
        assert "JOBDIR holds a sqlite frontier; resuming it" in result.output
        assert not (tmp_path / "job" / "frontier").exists()
    assert result.stat("frontier/recovered") > 0
    log = web.log()
    fetched = Counter((e.host, e.path) for e in log)
    assert len(fetched) == 200, "a URL admitted before the kill was lost"
    twice = [k for k, n in fetched.items() if n > 1]
    # only requests in flight (or not yet committed as done) at the kill are fetched again
    assert len(twice) <= 64
    assert politeness_violations([e for e in log if e.start > before[-1].end + 0.5], 0.3) == []
    # the WARC file the kill left open was closed at restart; every record reads back
    assert not list(warcs.glob("*.open"))
    assert len(sorted(warcs.glob("*.warc.gz"))) == 2
    archived = archived_uris(warcs)
    indexed = set()
    for path in warcs.glob("*.cdxj"):
        indexed |= {data["url"] for _, _, data in read_index(path)
                    if data["mime"] != "warc/metadata"}
    assert archived == indexed and len(archived) >= 200


@pytest.mark.slow
def test_crash_campaign_twenty_kills_lose_nothing(testweb_factory, tmp_path: Path) -> None:
    """kill -9 at 20 random moments of a durable crawl, restarting each time: no admitted URL
    lost, re-fetches bounded by what was in flight, every WARC valid, the learned state kept."""
    import random

    web = testweb_factory(hosts=30, pages=10, hazards=False)
    warcs = tmp_path / "warcs"
    settings, cmd = durable_crawl(web, tmp_path, CRAWLER_EXT_FRONTIER_LOG_INTERVAL=0)
    rng = random.Random(7)
    kills = 0
    refetch_bound = 0
    for _ in range(20):
        before = len(web.log())
        proc = subprocess.Popen(cmd, cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL,
                                env=dict(os.environ, PYTHONPATH=str(ROOT)))
        # a random moment: during start-up, recovery, or after some fetches
        wait_fetches = rng.choice([0, 1, 3, 8, 15])
        deadline = time.time() + 30
        while time.time() < deadline and len(web.log()) < before + wait_fetches and \
                proc.poll() is None:
            time.sleep(0.02)
        time.sleep(rng.uniform(0, 0.6))
        if proc.poll() is not None:
            break  # the crawl finished between kills
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        kills += 1
        refetch_bound += 64  # at most CONCURRENT_REQUESTS in flight (uncommitted) per kill
    assert kills >= 10, "the crawl finished before most of the kills"
    result = run_crawl("-a", f"seeds={web.url(0)}", items_path=tmp_path / "items.jsonl",
                       settings=settings)
    assert result.returncode == 0, result.output[-3000:]
    log = web.log()
    fetched = Counter((e.host, e.path) for e in log)
    assert len(fetched) == 300, "a URL admitted before a kill was lost"
    extra = sum(n - 1 for n in fetched.values())
    assert extra <= refetch_bound
    assert not list(warcs.glob("*.open"))
    assert len(archived_uris(warcs)) >= 300
    print(f"kills: {kills}, fetches: {len(log)}, re-fetches: {extra}")
