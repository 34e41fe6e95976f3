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


# -- Scrapy's offsite and meta-refresh middlewares, cheaper, deciding the same ------------------

def _stock_pair(name: str, settings: dict | None = None, allowed: list | None = None):
    """Scrapy's middleware and the pack's, each on its own crawler with the same spider."""
    from scrapy import Spider
    from scrapy.downloadermiddlewares.offsite import OffsiteMiddleware as Offsite
    from scrapy.downloadermiddlewares.redirect import MetaRefreshMiddleware as MetaRefresh
    from scrapy.utils.test import get_crawler

    from crawler_ext.runtime import stock

    pair = []
    for cls in ((Offsite, stock.OffsiteMiddleware) if name == "offsite" else
                (MetaRefresh, stock.MetaRefreshMiddleware)):
        crawler = get_crawler(Spider, settings or {})
        crawler.spider = crawler._create_spider("s")
        if allowed is not None:
            crawler.spider.allowed_domains = allowed
        middleware = cls.from_crawler(crawler)
        if name == "offsite":
            middleware.spider_opened(crawler.spider)
        pair.append((middleware, crawler))
    return pair


def _offsite_answer(middleware, url: str) -> str:
    from scrapy import Request
    from scrapy.exceptions import IgnoreRequest

    answers = []
    for path in ("downloader middleware", "request_scheduled"):
        try:
            if path == "request_scheduled":
                middleware.request_scheduled(Request(url), None)
            else:
                middleware.process_request(Request(url))
            answers.append("go")
        except IgnoreRequest:
            answers.append("ignored")
    return "/".join(answers)


def test_the_offsite_replacement_filters_as_scrapys_does() -> None:
    urls = ["http://a.test/", "http://sub.a.test/x", "http://b.test/", "http://1.2.3.4/",
            "https://a.test.evil/"]
    for allowed in (None, [], ["a.test"]):
        (scrapy_mw, scrapy_crawler), (ours, our_crawler) = _stock_pair("offsite", allowed=allowed)
        for url in urls:
            assert _offsite_answer(ours, url) == _offsite_answer(scrapy_mw, url), (allowed, url)
        assert our_crawler.stats.get_stats() == scrapy_crawler.stats.get_stats()
        # allowed_domains set during the crawl: filtered from then on, as Scrapy filters
        for crawler in (scrapy_crawler, our_crawler):
            crawler.spider.allowed_domains = ["b.test"]
        for url in urls:
            assert _offsite_answer(ours, url) == _offsite_answer(scrapy_mw, url), (allowed, url)
    assert _offsite_answer(ours, "http://a.test/") == "ignored/ignored"


REFRESH = '<meta http-equiv="{word}" content="0;url={url}">'


def _pages():
    """(body, Content-Type) pairs, a meta refresh in some, spelled in every way Scrapy finds."""
    plain = "<html><head><title>t</title></head><body>" + "<p>words and words</p>" * 50
    yield plain.encode(), "text/html; charset=utf-8"
    for word in ("refresh", "REFRESH", "Refresh", "&#82;efresh", "&#x72;efresh"):
        page = plain.replace("<title>", REFRESH.format(word=word, url="/next") + "<title>")
        yield page.encode(), "text/html; charset=utf-8"
        yield page.encode("latin-1"), "text/html; charset=iso-8859-1"
        yield page.encode("utf-16"), "text/html; charset=utf-16"
        yield page.encode("cp500"), "text/html; charset=cp500"  # EBCDIC: no ASCII bytes
        yield page.encode("utf-16"), "text/html"  # found by its byte-order mark
    in_script = plain.replace("<title>", "<script>" + REFRESH.format(word="refresh", url="/s")
                              + "</script><title>")
    yield in_script.encode(), "text/html"
    late = plain + "x" * 20_000 + REFRESH.format(word="refresh", url="/late")
    yield late.encode(), "text/html; charset=utf-8"
    yield ("é" * 3000 + REFRESH.format(word="refresh", url="/utf8")).encode(), "text/html"
    yield b"&#" + plain.encode(), "text/html; charset=utf-8"
    # the real page layouts kept for the rendering tests (WordPress, Gatsby, Next.js, app
    # shells): none refreshes; each is compared as it is
    for page in sorted((Path(__file__).parent / "data" / "render").glob("*.html")):
        yield page.read_bytes(), "text/html; charset=utf-8"
    for end in (4096, 4097):  # the meta's last character Scrapy's 4,096th, or the next
        meta = REFRESH.format(word="refresh", url="/edge")
        yield ("x" * (end - len(meta)) + meta).encode(), "text/html; charset=utf-8"


def test_the_meta_refresh_replacement_follows_what_scrapys_follows() -> None:
    from scrapy import Request
    from scrapy.http import HtmlResponse

    from crawler_ext.runtime.stock import may_refresh

    (scrapy_mw, _), (ours, _) = _stock_pair("metarefresh")
    followed, skipped = 0, 0
    for body, ctype in _pages():
        answers = []
        for middleware in (scrapy_mw, ours):
            request = Request("http://a.test/page")
            response = HtmlResponse("http://a.test/page", body=body,
                                    headers={"Content-Type": ctype}, request=request)
            answer = middleware.process_response(request, response)
            answers.append(answer.url if isinstance(answer, Request) else "response")
        assert answers[0] == answers[1], (body[:120], ctype)
        followed += answers[0] != "response"
        skipped += not may_refresh(HtmlResponse("http://a.test/", body=body,
                                                headers={"Content-Type": ctype}))
    # every spelling in every encoding Scrapy decodes (not cp500: Scrapy reads it as ASCII
    # and finds nothing), the page of non-ASCII text and the meta that ends at the
    # 4,096th character (not the one a character later); the plain pages skipped undecoded
    assert followed == 5 * 4 + 1 + 1 and skipped >= 3


def test_the_add_on_replaces_scrapys_two_middlewares_unless_the_project_lists_them() -> None:
    from scrapy.settings import Settings

    from crawler_ext.addon import Addon
    from crawler_ext.runtime.stock import REPLACED

    settings = Settings()
    Addon().update_settings(settings)
    middlewares = settings.getdict("DOWNLOADER_MIDDLEWARES")
    base = settings.getdict("DOWNLOADER_MIDDLEWARES_BASE")
    for scrapys, ours in REPLACED.items():
        assert middlewares[scrapys] is None and middlewares[ours] == base[scrapys]
    offsite = "scrapy.downloadermiddlewares.offsite.OffsiteMiddleware"
    settings = Settings({"DOWNLOADER_MIDDLEWARES": {offsite: 55}})
    Addon().update_settings(settings)
    middlewares = settings.getdict("DOWNLOADER_MIDDLEWARES")
    assert middlewares[offsite] == 55 and REPLACED[offsite] not in middlewares
