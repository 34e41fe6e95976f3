"""``KnownLinksMiddleware``: a spider middleware that refuses known links before the engine.

Real pages carry about a hundred links, and almost all of them are known: the frontier
refuses such a link at once (its exact spelling was recently admitted or found seen), but
only after the engine's round for it (the ``request_scheduled`` signal and its receivers,
such as Scrapy's offsite check, then ``enqueue_request``, then ``request_dropped``).  This
middleware, last before the engine (order 50, after depth, referer and offsite have done their
part), asks the frontier directly and drops the known ones; they are counted and credited to
the page importance exactly as ``enqueue_request`` would (``frontier/known_links``,
``dupefilter/filtered``).  When a response's output is exhausted it tells the frontier
(``page_done``), so the page's importance flows to its links at once.  Without the frontier
scheduler it passes the links on.

It also caps the links one page may add: past ``CRAWLER_EXT_MAX_OUTLINKS_PER_PAGE`` requests
from one response the rest are dropped (``admission/rejected/max_outlinks``; logged once per
host), so one page cannot queue a budget sink of 200,000 URLs.

``KnownLinkFilter`` goes one step earlier, for a spider that yields its links as plain GET
requests (the reference spider): it refuses a known link before a request is made for it,
credited to the page as the path through Scrapy's depth and referer middlewares would credit
it (``frontier/known_links/before_request``).  It steps aside wherever that path could decide
otherwise: a focused crawl (its middleware scores a page's links together), a referrer policy
or a depth or referer middleware other than Scrapy's defaults, a depth limit passed, a link
from https to http (no Referer), ``DUPEFILTER_DEBUG`` or ``DEPTH_STATS_VERBOSE``.
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware
from scrapy.spidermiddlewares.referer import DefaultReferrerPolicy
from scrapy.utils.conf import build_component_list

from crawler_ext import config
from crawler_ext.signals import frontier_opened

__all__ = ["KnownLinkFilter", "KnownLinksMiddleware"]

logger = logging.getLogger(__name__)


class KnownLinksMiddleware(BaseSpiderMiddleware):
    def __init__(self, crawler: Any) -> None:
        super().__init__(crawler)
        self.refuse: Callable[[Request], bool] | None = None
        self.page_done: Callable[[Any], None] | None = None
        self.max_outlinks = config.get(crawler.settings, "CRAWLER_EXT_MAX_OUTLINKS_PER_PAGE")
        self._outlinks: weakref.WeakKeyDictionary[Any, int] = weakref.WeakKeyDictionary()
        self._capped_hosts: set[str] = set()
        crawler.signals.connect(self.frontier_opened, signal=frontier_opened)

    def frontier_opened(self, refuse_known: Callable[[Request], bool] | None = None,
                        page_done: Callable[[Any], None] | None = None, **_: Any) -> None:
        self.refuse = refuse_known
        self.page_done = page_done

    def process_spider_output(self, response: Any, result: Iterable[Any],
                              spider: Any = None) -> Iterable[Any]:
        yield from super().process_spider_output(response, result)
        if self.page_done is not None and response is not None:
            self.page_done(response)  # (the engine has taken every output by now)

    async def process_spider_output_async(self, response: Any, result: AsyncIterator[Any],
                                          spider: Any = None) -> AsyncIterator[Any]:
        async for o in super().process_spider_output_async(response, result):
            yield o
        if self.page_done is not None and response is not None:
            self.page_done(response)

    def get_processed_request(self, request: Request, response: Any) -> Request | None:
        if self.max_outlinks and response is not None and not self._within_cap(response):
            return None
        refuse = self.refuse
        return None if refuse is not None and refuse(request) else request

    def _within_cap(self, response: Any) -> bool:
        n = self._outlinks.get(response, 0) + 1
        self._outlinks[response] = n
        if n <= self.max_outlinks:
            return True
        if self.crawler.stats is not None:
            self.crawler.stats.inc_value("admission/rejected/max_outlinks")
        host = urlsplit(response.url).hostname or ""
        if n == self.max_outlinks + 1 and host not in self._capped_hosts and \
                len(self._capped_hosts) < 10_000:
            self._capped_hosts.add(host)
            logger.info("Out-links cap: %s has more than %d links, the rest are not followed "
                        "(CRAWLER_EXT_MAX_OUTLINKS_PER_PAGE; further ones are counted in "
                        "admission/rejected/max_outlinks)", response.url[:200],
                        self.max_outlinks)
        return False


#: Scrapy's default referrer policy, as the setting may name it: a link's request gets its
#: page's URL as Referer, except from https to http
_DEFAULT_POLICY = ("scrapy-default", "scrapy.spidermiddlewares.referer.DefaultReferrerPolicy",
                   DefaultReferrerPolicy)


#: Scrapy's own depth and referer middlewares, whose path the filter stands in for
_DEPTH = "scrapy.spidermiddlewares.depth.DepthMiddleware"
_REFERER = "scrapy.spidermiddlewares.referer.RefererMiddleware"


class KnownLinkFilter:
    """``for_page(response)``: a predicate (url) -> True for a link of that page the frontier
    knows, refused and credited at once; None where refusing before the spider middlewares
    could differ from refusing after them (module docstring)."""

    def __init__(self, crawler: Any) -> None:
        settings = crawler.settings
        self.crawler = crawler  # (its stats are set once the crawl starts)
        self.depth_limit = settings.getint("DEPTH_LIMIT")
        self.depth_priority = settings.getint("DEPTH_PRIORITY")
        self.usable = self._usable(settings)
        self.refuse: Callable[[str, str, int, int], bool] | None = None
        crawler.signals.connect(self.frontier_opened, signal=frontier_opened)

    @staticmethod
    def _usable(settings: Any) -> bool:
        if config.get(settings, "CRAWLER_EXT_FOCUS_ENABLED"):
            return False
        if settings.getbool("DUPEFILTER_DEBUG") or settings.getbool("DEPTH_STATS_VERBOSE"):
            return False
        if not settings.getbool("REFERER_ENABLED") or \
                settings.get("REFERRER_POLICY") not in _DEFAULT_POLICY:
            return False
        # compared by path: nothing of the project's is imported here (Scrapy does it, and
        # reports what does not import)
        paths = {config.component_path(m)
                 for m in build_component_list(settings.getwithbase("SPIDER_MIDDLEWARES"))}
        return _DEPTH in paths and _REFERER in paths

    def frontier_opened(self, refuse_known_link: Callable[[str, str, int, int], bool] | None
                        = None, **_: Any) -> None:
        self.refuse = refuse_known_link if self.usable else None

    def for_page(self, response: Any) -> Callable[[str], bool] | None:
        refuse = self.refuse
        page = response.url
        if refuse is None or b"Referrer-Policy" in response.headers or "#" in page or \
                "@" in page.partition("://")[2].partition("/")[0]:
            return None  # (the Referer would not be the page's URL as it is)
        depth = response.meta.get("depth", 0) + 1
        if self.depth_limit and depth > self.depth_limit:
            return None  # the depth middleware drops these links: nothing to credit
        priority = -depth * self.depth_priority
        downgrade = page.startswith("https:")
        counted = False

        def known(url: str) -> bool:
            nonlocal counted
            if downgrade and url.startswith("http:"):
                return False
            if not refuse(url, page, depth, priority):
                return False
            if not counted:  # as the depth middleware would
                self.crawler.stats.max_value("request_depth_max", depth)
                counted = True
            return True
        return known
