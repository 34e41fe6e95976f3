"""Content fingerprints in worker processes: the same fingerprints as in-process on real
pages, and a dead worker costs no page (pure logic, no crawl)."""

from __future__ import annotations

import asyncio
import os
import signal

import pytest

from crawler_ext.dedup.index import ContentIndex, page_fingerprint
from crawler_ext.dedup.workers import FingerprintPool
from testweb.corpus import build_corpus


@pytest.fixture(scope="module")
def corpus_sites() -> list:
    sites = build_corpus()
    if not sites:
        pytest.skip("no real-site corpus here (apt-get download of Debian docs, sphinx, mkdocs)")
    return sites


class Stats:
    def __init__(self) -> None:
        self.values: dict[str, int] = {}

    def inc_value(self, key: str, count: int = 1) -> None:
        self.values[key] = self.values.get(key, 0) + count


def _pages(corpus_sites, limit: int = 120) -> list[bytes]:
    pages = [p.read_bytes() for site in corpus_sites for p in sorted(site.root.rglob("*.htm*"))]
    return pages[::max(1, len(pages) // limit)]


def test_worker_fingerprints_equal_in_process_ones_on_real_pages(corpus_sites) -> None:
    pages = _pages(corpus_sites)
    stats = Stats()
    pool = FingerprintPool(1, 20, stats)

    async def run() -> list:
        pool.start()
        assert pool.active
        try:
            return list(await asyncio.gather(*(pool.fingerprint(p) for p in pages)))
        finally:
            pool.close()

    remote = asyncio.run(run())
    assert remote == [page_fingerprint(p, 20) for p in pages]
    assert {f.basis for f in remote} >= {"main", "full"}  # real pages of both kinds
    assert stats.values == {}  # nothing fell back
    # and the index judges them as the in-process path does
    a, b = ContentIndex(), ContentIndex()
    assert [a.classify(str(i), f).kind for i, f in enumerate(remote)] == \
        [b.check(str(i), p).kind for i, p in enumerate(pages)]


def test_a_dead_worker_falls_back_in_process_and_is_counted(corpus_sites) -> None:
    pages = _pages(corpus_sites, 20)
    stats = Stats()
    pool = FingerprintPool(1, 20, stats)

    async def run() -> list:
        pool.start()
        first = await pool.fingerprint(pages[0])  # the worker is up
        for worker in pool._pool:
            os.kill(worker.process.pid, signal.SIGKILL)
        # pages handed out as the worker dies, and after: none is lost
        rest = list(await asyncio.gather(*(pool.fingerprint(p) for p in pages[1:])))
        pool.close()
        return [first, *rest]

    got = asyncio.run(run())
    assert got == [page_fingerprint(p, 20) for p in pages]  # no page lost or misjudged
    assert not pool.active
    assert stats.values["dedup/workers/fallback"] == len(pages) - 1


def test_no_workers_or_no_asyncio_loop_fingerprint_in_process() -> None:
    for pool in (FingerprintPool(0, 20), FingerprintPool(1, 20)):
        pool.start(asyncio_loop=False)
        assert not pool.active
        html = b"<html><body><p>" + b" word" * 50 + b"</p></body></html>"
        assert asyncio.run(pool.fingerprint(html)) == page_fingerprint(html, 20)


SCRIPT = '''
import json, sys
import scrapy
from scrapy.crawler import CrawlerProcess

class Follow(scrapy.Spider):
    name = "follow"
    start_urls = [sys.argv[1]]

    def parse(self, response):
        yield {"url": response.url}
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href)

# no `if __name__ == "__main__":` guard, as Scrapy's "run from a script" examples go: the
# helper processes must not run this file again
print("SCRIPT RUN", flush=True)
process = CrawlerProcess({
    "ADDONS": {"crawler_ext.Addon": 100}, "LOG_LEVEL": "WARNING",
    "CRAWLER_EXT_HOSTS": sys.argv[2], "CRAWLER_EXT_ALLOWED_NETWORKS": "127.0.0.0/8",
    "CRAWLER_EXT_WARC_DIR": sys.argv[3], "CRAWLER_EXT_STATS_FILE": sys.argv[4],
    "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.05, "ROBOTSTXT_OBEY": False,
    "TELNETCONSOLE_ENABLED": False})
process.crawl(Follow)
process.start()
'''


@pytest.mark.slow
def test_a_crawl_run_from_a_script_without_a_main_guard_runs_once(testweb_factory,
                                                                  tmp_path) -> None:
    """The helper processes are spawned: they must not run the user's script again."""
    import json
    import subprocess
    import sys

    from conftest import ROOT

    web = testweb_factory(hosts=2, pages=4, hazards=False)
    script = tmp_path / "crawl.py"
    script.write_text(SCRIPT)
    stats = tmp_path / "stats.json"
    proc = subprocess.run([sys.executable, str(script), web.url(0), web.hosts_setting,
                           str(tmp_path / "warcs"), str(stats)], cwd=tmp_path,
                          capture_output=True, text=True, timeout=180,
                          env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert proc.stdout.count("SCRIPT RUN") == 1, proc.stdout + proc.stderr[-2000:]
    values = json.loads(stats.read_text())
    assert values.get("dedup/unique", 0) > 0 and not values.get("dedup/workers/fallback")
    assert values.get("warc/records/response", 0) > 0
    assert "Traceback" not in proc.stderr
