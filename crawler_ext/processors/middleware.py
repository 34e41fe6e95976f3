"""``ProcessorMiddleware``: every fetched document through its content-type processor.

A downloader middleware (order 452: below rendering, 455, so an app shell is processed as
rendered; above content dedup, 450, which judges the document by the fingerprint computed
here).  For each 200 response it chooses the MIME type (``sniff.choose_mime``) and the
processor (``registry``), runs it in the worker pool, and puts the answer in
``response.meta["processed"]`` (a :class:`~crawler_ext.processors.contract.Processed`).
A feed entry's date goes to the recrawl as a sitemap's ``lastmod`` does.

Size caps, per content kind, act while the body downloads: a declared ``Content-Length``
above the cap stops the download at its headers, and a body that grows past the cap is cut
there (``processor/<kind>/too_large``); a cut document is never parsed.  Stats:
``processor/<kind>/processed``, ``processor/<kind>/<reason>`` for each refusal,
``processor/sniff/<how>`` where the bytes decided the type, ``processor/workers/restarted``.
"""

from __future__ import annotations

import logging
from typing import Any
from weakref import WeakKeyDictionary

from scrapy import Request, signals
from scrapy.exceptions import StopDownload
from scrapy.http import Response

from crawler_ext import config
from crawler_ext.meta import FINGERPRINT_META, ROBOTS_META
from crawler_ext.processors.contract import Document, Processed
from crawler_ext.processors.pool import ProcessorPool
from crawler_ext.processors.registry import build_table, lookup
from crawler_ext.processors.sniff import choose_mime, kind_of, media_type
from crawler_ext.signals import document_processed, sitemap_lastmod

__all__ = ["PROCESSED_META", "ProcessorMiddleware"]

logger = logging.getLogger(__name__)

PROCESSED_META = "processed"
_CUT_META = "crawler_ext_cut"  # the download was stopped at the size cap


class ProcessorMiddleware:
    def __init__(self, crawler: Any, pool: ProcessorPool, max_bytes: int,
                 by_kind: dict[str, int]) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.pool = pool
        self.max_bytes = max_bytes
        self.by_kind = by_kind
        self._received: WeakKeyDictionary[Request, int] = WeakKeyDictionary()
        self._logged: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Any) -> ProcessorMiddleware:
        s = config.enabled_settings(crawler, "CRAWLER_EXT_PROCESSORS_ENABLED")
        table = build_table(config.get(s, "CRAWLER_EXT_PROCESSORS"))
        # a focused crawl's page classifier runs in the workers too
        from crawler_ext.focus import processor_scoring

        scorer, context = processor_scoring(crawler)
        pool = ProcessorPool(config.get(s, "CRAWLER_EXT_PROCESSOR_WORKERS"), table,
                             min_words=config.get(s, "CRAWLER_EXT_DEDUP_MIN_WORDS"),
                             timeout=config.get(s, "CRAWLER_EXT_PROCESSOR_TIMEOUT"),
                             memory_mb=config.get(s, "CRAWLER_EXT_PROCESSOR_MEMORY_MB"),
                             stats=crawler.stats, scorer=scorer, link_context=context)
        by_kind = {kind: int(size) for kind, size in
                   config.get(s, "CRAWLER_EXT_PROCESSOR_MAX_BYTES_BY_KIND").items()}
        mw = cls(crawler, pool, config.get(s, "CRAWLER_EXT_PROCESSOR_MAX_BYTES"), by_kind)
        crawler.signals.connect(mw.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(mw.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(mw.headers_received, signal=signals.headers_received)
        crawler.signals.connect(mw.bytes_received, signal=signals.bytes_received)
        return mw

    def spider_opened(self, spider: Any = None) -> None:
        from scrapy.utils.reactor import is_asyncio_reactor_installed, is_reactor_installed

        # Scrapy's asyncio reactor, or its reactorless mode: an asyncio loop runs
        self.pool.start(asyncio_loop=not is_reactor_installed() or is_asyncio_reactor_installed())

    def spider_closed(self, spider: Any = None) -> None:
        self.pool.close()

    def cap(self, kind: str) -> int:
        return self.by_kind.get(kind, self.max_bytes)

    # -- size caps, while the body downloads --------------------------------------------------
    def headers_received(self, headers: Any, body_length: int, request: Request,
                         spider: Any = None) -> None:
        cap = self.cap(kind_of(media_type(headers.get(b"Content-Type"))))
        if isinstance(body_length, int) and body_length > cap:  # (unknown: Twisted's constant)
            self._cut(request)
        self._received[request] = cap  # what the body may still bring

    def bytes_received(self, data: bytes, request: Request, spider: Any = None) -> None:
        budget = self._received.get(request, self.max_bytes) - len(data)
        self._received[request] = budget
        if budget < 0:
            self._cut(request)

    def _cut(self, request: Request) -> None:
        request.meta[_CUT_META] = True
        raise StopDownload(fail=False)

    # -- processing ---------------------------------------------------------------------------
    def process_response(self, request: Request, response: Response,
                         spider: Any = None) -> Any:
        self._received.pop(request, None)
        if response.status != 200 or request.method == "HEAD" or request.meta.get(ROBOTS_META):
            return response  # (robots.txt is the frontier's, not a document)
        return self._process(request, response)  # (a coroutine: Scrapy awaits it)

    async def _process(self, request: Request, response: Response) -> Response:
        body = response.body
        mime, how = choose_mime(response.headers.get(b"Content-Type"), body)
        kind = kind_of(mime)
        if how != "header":
            self.stats.inc_value(f"processor/sniff/{how}")
            if how == "unsniffed" and "unsniffed" not in self._logged:
                self._logged.add("unsniffed")
                logger.warning("Content processors: libmagic is not installed (python-magic "
                               "needs it): documents are taken for what their Content-Type "
                               "says; counted in processor/sniff/unsniffed")
        if request.meta.pop(_CUT_META, False) or len(body) > self.cap(kind):
            processed, page = Processed(kind, "", refused="too_large"), None
        elif lookup(self.pool.table, mime) is None:  # a type no processor reads
            processed, page = Processed(kind, ""), None
        else:
            headers = {k.decode("latin-1").lower(): b", ".join(v).decode("latin-1")
                       for k, v in response.headers.items()}
            processed, page = await self.pool.process(Document(response.url, mime, headers,
                                                               body))
        self._count(response.url, processed)
        if processed.refused == "no_workers":  # no pool: as if processors were off
            return response
        request.meta[PROCESSED_META] = processed
        request.meta[FINGERPRINT_META] = page
        for url, when in (processed.metadata.get("dates") or {}).items():
            self.crawler.signals.send_catch_log(sitemap_lastmod, url=url, lastmod=when)
        if not processed.refused:
            self.crawler.signals.send_catch_log(document_processed, request=request,
                                                response=response, processed=processed)
        return response

    def _count(self, url: str, processed: Processed) -> None:
        kind = processed.content_kind
        if not processed.refused:
            if processed.processor:
                self.stats.inc_value(f"processor/{kind}/processed")
            return
        self.stats.inc_value(f"processor/{kind}/{processed.refused}")
        key = f"{kind}/{processed.refused}"
        if key not in self._logged:
            self._logged.add(key)
            detail = processed.metadata.get("error", "")
            logger.warning("Content processors: %s not read (%s%s); further ones are counted "
                           "in processor/%s", url, processed.refused,
                           f": {detail}" if detail else "", key)
