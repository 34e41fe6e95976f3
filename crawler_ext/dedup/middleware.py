"""Downloader middlewares of crawler_ext.

``ContentDedupMiddleware`` (after download, before the spider): exact and near-duplicate
detection.  Put it below ``HttpCompressionMiddleware`` (590) so it sees decoded bodies:

    DOWNLOADER_MIDDLEWARES = {"crawler_ext.middlewares.ContentDedupMiddleware": 450}

The verdict goes into ``response.meta["dedup"]`` (``verdict``, ``original``, ``distance``,
``simhash``, ``exact_hash``); with ``CRAWLER_EXT_DEDUP_ACTION = "drop"`` duplicates stop
there (IgnoreRequest), so their links are not extracted twice.  Each duplicate is announced
with the ``crawler_ext.signals.content_duplicate`` signal.  In a distributed crawl (the Redis
frontier) the index is shared between the workers through a log in Redis.
"""

from __future__ import annotations

import logging
import sqlite3
import struct
import uuid
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from scrapy import Request, signals
from scrapy.exceptions import IgnoreRequest
from scrapy.http import Response, TextResponse
from scrapy.utils.job import job_dir

from crawler_ext import config
from crawler_ext.dedup.index import (
    FINGERPRINT_META,
    ContentIndex,
    PageFingerprint,
    page_fingerprint,
)
from crawler_ext.dedup.workers import FingerprintPool
from crawler_ext.runtime.diskfull import is_disk_full, report_disk_full
from crawler_ext.distributed.cli import crawl_prefix, redis_from_settings
from crawler_ext.distributed.sharedlog import SharedLog
from crawler_ext.config.scrapyside import enabled_component
from crawler_ext.signals import content_checked, content_duplicate, frontier_commit

__all__ = ["ContentDedupMiddleware"]

logger = logging.getLogger(__name__)

_DOC = struct.Struct(">QQ")
PROCESSORS = "crawler_ext.processors.middleware.ProcessorMiddleware"  # exact hash, SimHash; then the URL


class ContentDedupMiddleware:
    def __init__(self, index: ContentIndex, action: str = "drop", crawler: Any = None,
                 pool: FingerprintPool | None = None) -> None:
        self.index = index
        self.pool = pool  # fingerprints off the reactor thread (None: computed in place)
        self.action = action
        self.crawler = crawler
        self.stats = crawler.stats if crawler is not None else None
        self._hosts_fetched: Counter[str] = Counter()
        self._hosts_dup: Counter[str] = Counter()
        self._logged = False
        self._shared: SharedLog | None = None

    @classmethod
    def from_crawler(cls, crawler: Any) -> ContentDedupMiddleware:
        s = crawler.settings
        distance = config.get(s, "CRAWLER_EXT_SIMHASH_DISTANCE")  # 0-3: see validate_all
        jobdir = job_dir(s)
        index = ContentIndex(distance, Path(jobdir) / "content.sqlite3" if jobdir else None,
                             min_words=config.get(s, "CRAWLER_EXT_DEDUP_MIN_WORDS"))
        workers = config.get(s, "CRAWLER_EXT_DEDUP_WORKERS")
        if config.get(s, "CRAWLER_EXT_PROCESSORS_ENABLED") and enabled_component(
                s, "DOWNLOADER_MIDDLEWARES", PROCESSORS):
            workers = 0  # the processors' workers fingerprint every document
        pool = FingerprintPool(workers, index.min_words, crawler.stats) if workers else None
        mw = cls(index, config.get(s, "CRAWLER_EXT_DEDUP_ACTION"), crawler, pool)
        if config.get(s, "CRAWLER_EXT_FRONTIER_BACKEND") == "redis" and \
                config.get(s, "CRAWLER_EXT_REDIS_SHARE_CONTENT"):
            mw.share(redis_from_settings(s), crawl_prefix(s, crawler.spidercls.name))
        crawler.signals.connect(mw.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(mw.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(mw.flush, signal=frontier_commit)
        return mw

    def share(self, redis: Any, prefix: str) -> None:
        """Distributed crawl: unique pages go to a shared log that every worker's index reads,
        so a copy of a page another worker fetched is caught too (within about a second)."""
        shared = SharedLog(redis, f"{prefix}:docs", uuid.uuid4().hex[:12],
                           on_stat=lambda k, v: self.stats and self.stats.inc_value(k, v))
        self._shared = shared
        self.index.on_new = lambda url, ex, sh: shared.publish(
            _DOC.pack(ex, sh) + url.encode("utf-8", "surrogatepass"))

    def _received(self, items: list[bytes]) -> None:
        for item in items:
            ex, sh = _DOC.unpack_from(item)
            self.index.add_remote(item[_DOC.size:].decode("utf-8", "surrogatepass"), ex, sh)

    def spider_opened(self, spider: Any = None) -> None:
        self.index.open()
        if self.pool is not None:
            from scrapy.utils.reactor import is_asyncio_reactor_installed, is_reactor_installed

            # Scrapy's asyncio reactor, or its reactorless mode: an asyncio loop runs
            self.pool.start(asyncio_loop=not is_reactor_installed()
                            or is_asyncio_reactor_installed())
        if self._shared is not None:
            self._shared.start(self._received)

    def flush(self, **_: Any) -> None:
        """Before the frontier commits its journal: the content index of what it calls done."""
        self._stored(self.index.flush)

    def _stored(self, write: Any) -> None:
        try:
            write()
        except (OSError, sqlite3.Error) as exc:
            if not is_disk_full(exc):
                raise
            report_disk_full(self.crawler, "jobdir", self.index.path, exc)

    def spider_closed(self, spider: Any = None) -> None:
        if self.pool is not None:
            self.pool.close()
        if self._shared is not None:
            self._shared.stop()
        self._stored(self.index.close)
        if self.stats is None:
            return
        rates = sorted(((self._hosts_dup[h] / n, h) for h, n in self._hosts_fetched.items()
                        if self._hosts_dup[h]), reverse=True)
        self.stats.set_value("dedup/hosts_with_duplicates", len(rates))
        for rate, host in rates[:20]:
            self.stats.set_value(f"dedup/host_rate/{host}", round(rate, 3))

    def process_response(self, request: Request, response: Response, spider: Any = None) -> Any:
        if response.status != 200:
            return response
        if FINGERPRINT_META in request.meta:  # the content processors fingerprinted it
            page = request.meta.pop(FINGERPRINT_META)
            if page is None:  # a document no processor read: no evidence to judge by
                if self.stats is not None:
                    self.stats.inc_value("dedup/unjudged")
                return response
            return self._judge(request, response, PageFingerprint(*page))
        if not isinstance(response, TextResponse):
            return response
        ctype = (response.headers.get("Content-Type") or b"").lower()
        if ctype and b"html" not in ctype:
            return response
        if self.pool is not None and self.pool.active:
            return self._judge_later(request, response)  # (a coroutine: Scrapy awaits it)
        return self._judge(request, response, page_fingerprint(response.body,
                                                               self.index.min_words))

    async def _judge_later(self, request: Request, response: Response) -> Response:
        assert self.pool is not None
        return self._judge(request, response, await self.pool.fingerprint(response.body))

    def _judge(self, request: Request, response: Response, page: PageFingerprint) -> Response:
        verdict = self.index.classify(response.url, page)
        request.meta["dedup"] = verdict.as_meta()  # response.meta once the engine links them
        host = urlsplit(response.url).netloc
        self._hosts_fetched[host] += 1
        if self.stats is not None:
            self.stats.inc_value(f"dedup/{verdict.kind}")
            if verdict.basis != "main":  # too little main text: judged on less specific evidence
                self.stats.inc_value(
                    "dedup/fallback/full_text" if verdict.basis == "full" else
                    "dedup/fallback/body_hash")
        if self.crawler is not None:
            self.crawler.signals.send_catch_log(content_checked, url=response.url,
                                                kind=verdict.kind, basis=verdict.basis)
        if verdict.kind == "unique":
            return response
        self._hosts_dup[host] += 1
        if not self._logged:
            logger.info("Duplicate content: %s is a%s duplicate of %s (further ones are counted "
                        "in dedup/... stats)", response.url,
                        "n exact" if verdict.kind == "exact" else " near", verdict.original)
            self._logged = True
        if self.crawler is not None:
            self.crawler.signals.send_catch_log(
                content_duplicate, url=response.url, original=verdict.original,
                kind=verdict.kind, distance=verdict.distance)
        if self.action == "drop":
            raise IgnoreRequest(f"{verdict.kind} duplicate of {verdict.original}")
        return response
