"""``RecrawlMiddleware``: continuous crawling (``CRAWLER_EXT_RECRAWL_ENABLED = True``).

A downloader middleware (order 440: it sees a response after content dedup has fingerprinted
it).  Every fetched HTML page (and every document a content processor read: PDF, feed,
text, image) is recorded in the :class:`~crawler_ext.recrawl.policy.RefreshPolicy`
(fetch time, ``ETag``, ``Last-Modified``, the dedup middleware's exact content hash) and gets
a due time; the frontier queues its refresh as a delayed entry in the page's host queue, so a
refresh shares the host's politeness slot with discovery, and robots.txt and the SSRF guard
apply to it as to any fetch.  A refresh is a conditional GET (``If-None-Match``,
``If-Modified-Since`` from the last response): a 304 is not parsed again (Scrapy's
HttpError middleware stops it before the spider; the WARC keeps it as a revisit record,
profile server-not-modified) and counts as unchanged, as does a 200 whose content hash did
not move.  The frontier keeps refreshes queued, so the crawl runs until it is stopped
(``CLOSESPIDER_TIMEOUT``, a signal, scrapyd's cancel).  Recrawls come from this policy only,
never from rediscovering a link (the seen set still refuses those).

Stats: ``recrawl/due`` (refreshes scheduled), ``recrawl/fetched``, ``recrawl/not_modified``,
``recrawl/changed``, ``recrawl/estimated_freshness``.
"""

from __future__ import annotations

import hashlib
import logging
import os
import time
from collections.abc import Callable
from email.utils import formatdate, parsedate_to_datetime
from typing import Any

from scrapy import signals
from scrapy.http import Request, Response
from scrapy.utils.job import job_dir

from crawler_ext import config
from crawler_ext.admission.urls import host_of
from crawler_ext.frontier.delays import KeyDelays
from crawler_ext.meta import IMPORTANCE_META, REFRESH_META
from crawler_ext.recrawl.history import HISTORY_NAME, HistoryLog, from_snapshot, snapshot
from crawler_ext.recrawl.policy import RefreshPolicy
from crawler_ext.signals import frontier_commit, frontier_opened, host_released, sitemap_lastmod

__all__ = ["REFRESH_META", "RecrawlMiddleware"]

logger = logging.getLogger(__name__)

def _http_time(value: bytes | None) -> float | None:
    if not value:
        return None
    try:
        return parsedate_to_datetime(value.decode("latin-1")).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


class RecrawlMiddleware:
    def __init__(self, crawler: Any, policy: RefreshPolicy) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.policy = policy
        self.schedule: Callable[..., bool] | None = None
        # a shared frontier: a refresh may be fetched by another worker, so the page's
        # history travels in the refresh entry (``REFRESH_META``'s value)
        self.carry_history = config.get(crawler.settings,
                                        "CRAWLER_EXT_FRONTIER_BACKEND") == "redis"
        self.log: HistoryLog | None = None
        self._delays = KeyDelays()
        self._default_delay = config.get(crawler.settings, "CRAWLER_EXT_POLITENESS_MIN_DELAY")

    @classmethod
    def from_crawler(cls, crawler: Any) -> RecrawlMiddleware:
        s = config.enabled_settings(crawler, "CRAWLER_EXT_RECRAWL_ENABLED")
        policy = RefreshPolicy(config.get(s, "CRAWLER_EXT_RECRAWL_MIN_INTERVAL"),
                               config.get(s, "CRAWLER_EXT_RECRAWL_MAX_INTERVAL"),
                               config.get(s, "CRAWLER_EXT_RECRAWL_SHARE"))
        mw = cls(crawler, policy)
        crawler.signals.connect(mw.frontier_opened, signal=frontier_opened)
        crawler.signals.connect(mw._delays.released, signal=host_released)
        crawler.signals.connect(mw.sitemap_lastmod, signal=sitemap_lastmod)
        jobdir = job_dir(s)
        if jobdir:  # the histories survive a restart (and a kill -9, to the last commit)
            mw.log = HistoryLog(os.path.join(jobdir, HISTORY_NAME))
            crawler.signals.connect(mw.spider_opened, signal=signals.spider_opened)
            crawler.signals.connect(mw.spider_closed, signal=signals.spider_closed)
            crawler.signals.connect(mw.log.flush, signal=frontier_commit)
        return mw

    def spider_opened(self, spider: Any = None) -> None:
        assert self.log is not None
        pages = self.log.load(self.policy)
        self.log.open(self.policy)
        if pages:
            logger.info("Recrawl: resumed the change histories of %d pages from %s", pages,
                        self.log.path)

    def spider_closed(self, spider: Any = None, reason: str = "") -> None:
        if self.log is not None:
            try:
                self.log.close(self.policy)
            except OSError as exc:  # a full disk: the histories are as of the last commit
                logger.warning("Recrawl: could not write %s (%s)", self.log.path, exc)

    def sitemap_lastmod(self, url: str, lastmod: float, **_: Any) -> None:
        """A sitemap says ``url`` changed at ``lastmod``: after its last fetch, fetch it now."""
        history = self.policy.history(url)
        if history is None or history.last_fetch is None or lastmod <= history.last_fetch:
            return
        if self.schedule is not None and self._schedule(url, _now()):
            self.stats.inc_value("recrawl/due")
            self.stats.inc_value("recrawl/sitemap_lastmod")

    def frontier_opened(self, schedule_refresh: Callable[..., bool] | None = None,
                        **_: Any) -> None:
        self.schedule = schedule_refresh
        if schedule_refresh is None:
            logger.warning("Recrawl: the frontier scheduler is not in use; pages will not be "
                           "refreshed")
        else:
            logger.info("Recrawl: every page and document is fetched again when its estimated change "
                        "rate and its host's budget say so (intervals %g s to %g s, %d%% of a "
                        "host's fetches); the crawl runs until stopped",
                        self.policy.min_interval, self.policy.max_interval,
                        round(self.policy.share * 100))

    def process_request(self, request: Request, spider: Any = None) -> None:
        carried = request.meta.get(REFRESH_META)
        if not carried:
            return None
        history = self.policy.history(request.url)
        if isinstance(carried, dict) and (history is None or (history.last_fetch or 0) <
                                          (carried.get("f") or 0)):
            # scheduled by another worker (or before a restart): its history comes along
            history = from_snapshot(carried)
            self.policy.restore(request.url, host_of(request.url), history)
        if history is not None:
            if history.etag:
                request.headers.setdefault("If-None-Match", history.etag)
            if history.last_modified is not None:
                request.headers.setdefault("If-Modified-Since",
                                           formatdate(history.last_modified, usegmt=True))
        return None

    def process_response(self, request: Request, response: Response,
                         spider: Any = None) -> Response:
        refresh = bool(request.meta.get(REFRESH_META))
        not_modified = response.status == 304 and refresh
        # an HTML page, or any document a content processor read (PDF, feed, text, image)
        processed = request.meta.get("processed")
        html = b"html" in (response.headers.get("Content-Type") or b"").lower() or (
            processed is not None and not processed.refused and bool(processed.processor))
        if request.method != "GET" or not (not_modified or (response.status == 200 and html)):
            if refresh:  # a refresh that failed (404, 5xx after retries): try again later
                self._again(request.url)
            return response
        exact = None
        if not not_modified:
            dedup = request.meta.get("dedup") or {}
            exact = int(dedup["exact_hash"], 16) if dedup.get("exact_hash") else \
                int.from_bytes(hashlib.blake2b(response.body, digest_size=8).digest(), "big")
        url = request.url
        host = host_of(url)
        etag = response.headers.get("ETag")
        when = _now()
        etag_text = etag.decode("latin-1") if etag else None
        last_modified = _http_time(response.headers.get("Last-Modified"))
        weight = request.meta.get(IMPORTANCE_META)  # (the frontier's, for a discovered page)
        key = host.partition(":")[0]
        verdict = self.policy.observe(
            url, host, when, exact, etag=etag_text, last_modified=last_modified,
            not_modified=not_modified,
            delay=self._delays.get(key, self._default_delay) or 0.1,
            weight=weight, discovery=self._delays.discovery(key))
        if self.log is not None:
            self.log.append(url, host, when, exact, etag_text, last_modified, not_modified,
                            weight)
        if refresh:
            self.stats.inc_value("recrawl/fetched")
            if not_modified:
                self.stats.inc_value("recrawl/not_modified")
            elif verdict.changed:
                self.stats.inc_value("recrawl/changed")
        if self.schedule is not None and self._schedule(url, _now() + verdict.interval):
            self.stats.inc_value("recrawl/due")
            self.stats.set_value("recrawl/estimated_freshness",
                                 round(self.policy.estimated_freshness(), 4))
        return response

    def process_exception(self, request: Request, exception: Exception,
                          spider: Any = None) -> None:
        if request.meta.get(REFRESH_META):  # unreachable now: the page stays in the cycle
            self._again(request.url)
        return None

    def _again(self, url: str) -> None:
        history = self.policy.history(url)
        if history is None or self.schedule is None:
            return
        if self._schedule(url, _now() + self.policy.max_interval):
            self.stats.inc_value("recrawl/due")

    def _schedule(self, url: str, due: float) -> bool:
        assert self.schedule is not None
        history = self.policy.history(url) if self.carry_history else None
        if history is None:
            return self.schedule(url, due)
        return self.schedule(url, due, snapshot(history))


def _now() -> float:
    return time.time()
