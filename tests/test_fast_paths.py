"""The CPU fast paths (#20) change no answer: a crawl whose known links are refused by the
reference spider before a request is made for them, or by the known-links spider middleware
before the engine, fetches exactly the URLs the same crawl fetches without either, with the
same politeness, and refuses the same known links."""

from __future__ import annotations

import pytest

from pathlib import Path

from conftest import run_crawl

from testweb import politeness_violations, read_log

OFF = '{"crawler_ext.frontier.adapter.knownlinks.KnownLinksMiddleware": null}'


#: the reference spider's known-link filter steps aside with DUPEFILTER_DEBUG (every refused
#: request logged): the middleware's path then
MIDDLEWARE = {"DUPEFILTER_DEBUG": True}


@pytest.mark.slow
def test_refusing_known_links_before_the_engine_fetches_the_same_urls(testweb_factory,
                                                                       tmp_path: Path) -> None:
    fetched, results = [], []
    for name, extra in (("spider", {}), ("middleware", MIDDLEWARE),
                        ("off", {"SPIDER_MIDDLEWARES": OFF, **MIDDLEWARE})):
        web = testweb_factory(hosts=8, pages=10, hazards=False)
        result = run_crawl("-a", f"seeds={web.seeds_path}",
                           items_path=tmp_path / f"{name}.jsonl",
                           settings={"CRAWLER_EXT_HOSTS": web.hosts_setting,
                                     "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.05, **extra})
        assert result.returncode == 0, result.output[-3000:]
        log = read_log(web.log_path)
        assert politeness_violations(log, min_gap=0.05) == []
        fetched.append(sorted((e.host.split(".")[0], e.path) for e in log))
        results.append(result)
        web.stop()
    spider, middleware, off = results
    assert fetched[0] == fetched[1] == fetched[2] and len(fetched[0]) > 80
    # the same links were refused as known: by the spider before a request was made for
    # them, by the middleware before the engine's round, or by the scheduler
    for name in ("frontier/known_links", "dupefilter/filtered", "scheduler/enqueued"):
        assert spider.stat(name) == middleware.stat(name) == off.stat(name), name
    known = spider.stat("frontier/known_links")
    assert known > 100
    assert spider.stat("frontier/known_links/before_request") > known * 0.9
    assert spider.stat("frontier/known_links/before_request") + \
        spider.stat("frontier/known_links/before_engine") == known
    assert middleware.stat("frontier/known_links/before_engine") == known
    assert middleware.stat("frontier/known_links/before_request") == 0
    assert off.stat("frontier/known_links/before_engine") == 0
    assert off.stat("frontier/known_links/before_request") == 0


def test_the_known_link_filter_steps_aside_where_the_middlewares_path_could_differ() -> None:
    from scrapy.http import HtmlResponse, Request
    from scrapy.statscollectors import MemoryStatsCollector
    from scrapy.utils.test import get_crawler

    from crawler_ext.frontier.knownlinks import KnownLinkFilter

    def usable(**settings: object) -> bool:
        return KnownLinkFilter(get_crawler(settings_dict=settings)).usable

    assert usable()
    assert not usable(CRAWLER_EXT_FOCUS_ENABLED=True)  # links scored together
    assert not usable(DUPEFILTER_DEBUG=True)
    assert not usable(DEPTH_STATS_VERBOSE=True)
    assert not usable(REFERER_ENABLED=False)
    assert not usable(REFERRER_POLICY="same-origin")
    assert not usable(SPIDER_MIDDLEWARES={
        "scrapy.spidermiddlewares.referer.RefererMiddleware": None})

    crawler = get_crawler(settings_dict={"DEPTH_LIMIT": 3, "DEPTH_PRIORITY": 1})
    crawler.stats = MemoryStatsCollector(crawler)
    told: list[tuple] = []
    known_links = KnownLinkFilter(crawler)
    known_links.frontier_opened(refuse_known_link=lambda *a: told.append(a) or True)

    def page(url: str, depth: int = 0, **headers: str) -> HtmlResponse:
        return HtmlResponse(url, body=b"<html></html>", headers=headers,
                            request=Request(url, meta={"depth": depth}))

    known = known_links.for_page(page("https://a.example/p", depth=1))
    assert known is not None
    assert not known("http://b.example/x")  # https to http: no Referer on that path
    assert known("https://b.example/x")
    # credited to the page, at its links' depth, with the depth middleware's priority
    assert told == [("https://b.example/x", "https://a.example/p", 2, -2)]
    assert crawler.stats.get_value("request_depth_max") == 2  # as the depth middleware keeps it
    assert known_links.for_page(page("https://a.example/p", depth=3)) is None  # past the limit
    assert known_links.for_page(page("https://a.example/p", **{"Referrer-Policy": "origin"})) \
        is None
    assert known_links.for_page(page("https://u:p@a.example/p")) is None
