"""``KnownLinksMiddleware``: a spider middleware that refuses known links before the engine.

Real pages carry about a hundred links, and almost all of them are known: the frontier
refuses such a link at once (its exact spelling was recently admitted or found seen), but
only after the engine's round for it (the ``request_scheduled`` signal and its receivers,
such as Scrapy's offsite check, then ``enqueue_request``, then ``request_dropped``).  This
middleware, last before the engine (order 50, after depth, referer and offsite have done their
part), asks the frontier directly and drops the known ones; they are counted and credited as
inlinks exactly as ``enqueue_request`` would (``frontier/known_links``,
``dupefilter/filtered``).  Without the frontier scheduler it passes everything on.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scrapy import Request
from scrapy.spidermiddlewares.base import BaseSpiderMiddleware

from crawler_ext.signals import frontier_opened

__all__ = ["KnownLinksMiddleware"]


class KnownLinksMiddleware(BaseSpiderMiddleware):
    def __init__(self, crawler: Any) -> None:
        super().__init__(crawler)
        self.refuse: Callable[[Request], bool] | None = None
        crawler.signals.connect(self.frontier_opened, signal=frontier_opened)

    def frontier_opened(self, refuse_known: Callable[[Request], bool] | None = None,
                        **_: Any) -> None:
        self.refuse = refuse_known

    def get_processed_request(self, request: Request, response: Any) -> Request | None:
        refuse = self.refuse
        return None if refuse is not None and refuse(request) else request
