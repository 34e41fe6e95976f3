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
"""

from __future__ import annotations

import logging
import weakref
from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from crawler_ext import config
from crawler_ext.signals import frontier_opened

__all__ = ["KnownLinksMiddleware"]

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
