"""Helpers the distributed tests share: a worker's frontier over Redis, and crawl workers."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from conftest import ROOT

from crawler_ext.admission.urls import fingerprint
from crawler_ext.distributed.bloom import RedisBloom
from crawler_ext.distributed.frontier import RedisFrontier
from crawler_ext.distributed.shards import ShardLayout
from crawler_ext.frontier.politeness import PolitenessPolicy
from crawler_ext.frontier.storage import Entry
from distributed.conftest import REDIS_URL, Target


def _frontier(redis, lease_ttl: float = 2.0, delay: float = 0.5,
              stats: dict | None = None, client=None) -> RedisFrontier:
    """A worker over Redis (``stats``: a dict its stats are counted in; ``client``: the
    frontier's own client, the seen set keeping ``redis``)."""
    on_stat = None if stats is None else \
        (lambda name, value: stats.update({name: stats.get(name, 0) + value}))
    return RedisFrontier(client or redis, ShardLayout("t", shards=4, lease_ttl=lease_ttl),
                         PolitenessPolicy(min_delay=delay, max_delay=delay), [5, 2, 1],
                         RedisBloom(redis, "t", 10_000), buffer=8, on_stat=on_stat)


def _exchange(frontier: RedisFrontier) -> list[Entry]:
    """One exchange, synchronously; the entries leased by it."""
    return frontier.exchange_now()


def _entry(host: str, n: int, band: int = 1) -> Entry:
    url = f"http://{host}/p/{n}"
    return Entry(host, band, b"U0\x00\x00" + url.encode(), fingerprint(url))




class _Evidence:
    """A worker's trap evidence, as the scheduler answers the shared frontier."""

    def __init__(self, traps: set[str]) -> None:
        self.traps = traps

    def trap_pattern(self, url: str) -> tuple[str, bool]:
        from crawler_ext.admission.filters import url_pattern
        from crawler_ext.admission.urls import host_of

        pattern = url_pattern(url)
        return f"{host_of(url)}\t{pattern}", pattern in self.traps

    def wake(self) -> None:
        pass




def _worker(web, workdir: Path, n: int, extra: dict | None = None,
            pythonpath: str = str(ROOT), target: Target | None = None,
            args: tuple[str, ...] = ()) -> subprocess.Popen:
    settings = {"CRAWLER_EXT_FRONTIER_BACKEND": "redis", "REDIS_URL": REDIS_URL,
                **(target.settings() if target is not None else {}),
                "CRAWLER_EXT_HOSTS": web.hosts_setting,
                "CRAWLER_EXT_ALLOWED_NETWORKS": "127.0.0.0/8",
                "CRAWLER_EXT_WARC_DIR": str(workdir / f"warcs{n}"),
                "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.5, "CRAWLER_EXT_POLITENESS_MAX_DELAY": 0.5,
                "CRAWLER_EXT_REDIS_LEASE_TTL": 3, "CONCURRENT_REQUESTS": 8,
                "CRAWLER_EXT_STATS_FILE": str(workdir / f"stats{n}.json"), **(extra or {})}
    cmd = [sys.executable, "-m", "scrapy", "crawl", "web", *args, "-O",
           f"{workdir / f'items{n}.jsonl'}:jsonlines"]
    for name, value in settings.items():
        cmd += ["-s", f"{name}={value}"]
    log = (workdir / f"worker{n}.log").open("w")
    return subprocess.Popen(cmd, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                            env=dict(os.environ, PYTHONPATH=pythonpath))


def _wait_all(workers: list[subprocess.Popen], tmp_path: Path, timeout: float = 180) -> None:
    for n, w in enumerate(workers):
        assert w.wait(timeout=timeout) == 0, (tmp_path / f"worker{n}.log").read_text()[-3000:]


def _truth_pages(web) -> set[tuple[str, str]]:
    """(host, path) of every page of the test web."""
    return {(url.split("//", 1)[1].split(":")[0], "/" + url.split("/", 3)[3])
            for url in web.truth()["pages"]}


def _run_all(workers: list[subprocess.Popen], tmp_path: Path) -> None:
    """Wait for every worker to finish (exit code 0); kill what is left on the way out."""
    try:
        _wait_all(workers, tmp_path)
    finally:
        _kill_all(workers)


def _kill_all(workers: list[subprocess.Popen]) -> None:
    for w in workers:
        if w.poll() is None:
            w.kill()


