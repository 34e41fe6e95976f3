"""Sitemaps (``CRAWLER_EXT_SITEMAPS_ENABLED``): the test web lists its pages in a sitemap
index, a plain sitemap with lastmod and a gzip sitemap of orphan pages no page links to; a
host without robots.txt serves junk at /sitemap.xml.  Judged by the request log."""

from __future__ import annotations

from pathlib import Path

import pytest
from conftest import run_crawl

from crawler_ext.recrawl.sitemaps import parse_lastmod
from testweb import politeness_violations, read_log


def test_lastmod_in_the_protocols_forms() -> None:
    assert parse_lastmod("2024-05-01") == 1714521600.0
    assert parse_lastmod("2024-05-01T02:00:00+02:00") == 1714521600.0
    assert parse_lastmod("2024-05-01T00:00:00Z") == 1714521600.0
    assert parse_lastmod("yesterday") is None and parse_lastmod(None) is None


@pytest.mark.slow
def test_sitemaps_bring_orphan_pages_and_a_bad_one_is_skipped(testweb_factory,
                                                              tmp_path: Path) -> None:
    web = testweb_factory(hosts=10, pages=6, hazards=True)  # host 3: no robots.txt, junk map
    result = run_crawl("-a", f"seeds={web.seeds_path}", items_path=tmp_path / "items.jsonl",
                       settings={"CRAWLER_EXT_HOSTS": web.hosts_setting,
                                 "CRAWLER_EXT_SITEMAPS_ENABLED": True,
                                 "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.05,
                                 "CRAWLER_EXT_POLITENESS_LATENCY_FACTOR": 0,
                                 "CLOSESPIDER_TIMEOUT": 30})
    assert result.returncode == 0, result.output[-3000:]
    log = read_log(web.log_path)
    fetched = {(e.host.split(".")[0], e.path) for e in log}
    # 1: robots.txt 503 disallows all; 3: the junk sitemap; 4: a rate limit (429s) slows it
    healthy = [h for h in range(10) if h not in (1, 3, 4)]
    for h in healthy:  # the orphans are reachable only through the gzip sitemap
        name = f"h{h:04d}"
        assert {(name, f"/orphan/{k}.html") for k in range(3)} <= fetched, name
        assert (name, "/sitemap-orphans.xml.gz") in fetched
    assert result.stat("sitemaps/errors") >= 1  # host 3's junk /sitemap.xml
    assert result.stat("sitemaps/fetched") >= 3 * len(healthy)
    orphans = [i for i in result.items if "/orphan/" in i["url"]]
    assert len(orphans) >= 3 * len(healthy)
    assert not any("sitemap" in i["url"] for i in result.items)  # not for the spider
    assert not any("sitemap" in e.path for e in log if e.host.startswith("h0001"))
    assert politeness_violations(log, min_gap=0.05) == []


def test_the_real_mkdocs_sitemaps_are_read_without_error() -> None:
    """The MkDocs sites of the real-site corpus ship sitemap.xml and sitemap.xml.gz (built
    without site_url, so their urlsets are empty): both are read, nothing is counted as bad."""
    from collections import Counter

    from crawler_ext.recrawl.sitemaps import SitemapMiddleware
    from testweb.corpus import build_corpus

    maps = [p for site in build_corpus() if site.generator.startswith("MkDocs")
            for p in sorted(site.root.glob("sitemap.xml*"))]
    if not maps:
        pytest.skip("no MkDocs site in the real-site corpus here (apt-get download failed?)")

    class Stats(Counter):
        def inc_value(self, key: str, count: int = 1) -> None:
            self[key] += count

    class Crawler:
        stats = Stats()

    mw = SitemapMiddleware(Crawler(), max_urls=50_000, max_bytes=50 << 20, max_depth=2)
    for path in maps:
        mw._read(path.as_uri(), path.read_bytes(), 0)
    assert Crawler.stats["sitemaps/fetched"] == len(maps) >= 2
    assert Crawler.stats["sitemaps/errors"] == 0
