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
scheduler it passes everything on.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable
from typing import Any

from scrapy import Request
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from crawler_ext.signals import frontier_opened

__all__ = ["KnownLinksMiddleware"]


class KnownLinksMiddleware(BaseSpiderMiddleware):
    def __init__(self, crawler: Any) -> None:
        super().__init__(crawler)
        self.refuse: Callable[[Request], bool] | None = None
        self.page_done: Callable[[Any], None] | None = None
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
        refuse = self.refuse
        return None if refuse is not None and refuse(request) else request
