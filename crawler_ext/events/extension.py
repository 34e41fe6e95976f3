"""``EventsExtension``: one event per fetch outcome and per admission decision, to a broker.

    CRAWLER_EXT_EVENTS_URL = "redis://127.0.0.1:6379/0"   # or nats://127.0.0.1:4222

A fetch's event is begun when its response comes out of the download handler (Scrapy's
``response_downloaded``, the signal the WARC pipeline archives from: redirects, errors and
robots.txt included) or when its request leaves the downloader without one, and completed
once the engine has finished with the request: by then the dedup verdict, the document's
links and the WARC record's place (file and offset, which the WARC writer reports when it
flushes) are known.  It goes to the outbox (:mod:`~crawler_ext.events.outbox`) before the
frontier commits its journal (``frontier_commit``), so a request the journal calls done has its
event kept (under JOBDIR: after a kill -9 the next start sends it); a thread sends the outbox
to the broker (:mod:`~crawler_ext.events.sender`), never the crawl's thread.

When the broker falls behind by ``CRAWLER_EXT_EVENTS_MAX_BACKLOG`` events,
``CRAWLER_EXT_EVENTS_OVERFLOW`` decides: ``block`` (the default) pauses the crawl (requests in
flight finish, none starts) until half the backlog has gone out, so nothing is lost; ``drop``
keeps crawling and drops new events, counted in ``events/dropped``.  At the end the crawl
waits up to ``CRAWLER_EXT_EVENTS_CLOSE_TIMEOUT`` seconds for the backlog to go out.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.defer import maybe_deferred_to_future
from scrapy.utils.job import job_dir
from twisted.internet import task, threads

from crawler_ext import config
from crawler_ext.admission.urls import InvalidURL, canonicalize, fingerprint_hex
from crawler_ext.events.outbox import FileOutbox, MemoryOutbox, Outbox
from crawler_ext.events.record import decision_event, encode, fetch_event
from crawler_ext.events.sender import Sender
from crawler_ext.events.sinks import sink_for
from crawler_ext.frontier.adapter.engine import EngineHandle, engine_of
from crawler_ext.frontier.contract import FrontierControl
from crawler_ext.meta import REFRESH_META, WARC_META
from crawler_ext.signals import frontier_commit, frontier_opened, warc_written
from crawler_ext.warc.pipeline import payload_digest

__all__ = ["EventsExtension"]

logger = logging.getLogger(__name__)

#: how long a completed fetch's event waits for its WARC record's place before it goes without
LOCATE_WAIT = 10.0


class EventsExtension:
    def __init__(self, crawler: Any, outbox: Outbox, sender: Sender, overflow: str,
                 max_backlog: int, close_timeout: float) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.outbox = outbox
        self.sender = sender
        self.overflow = overflow
        self.max_backlog = max_backlog
        self.close_timeout = close_timeout
        self.spider = ""
        self.canonical: Callable[[str], str] = canonicalize  # the frontier's, once it opened
        self._control: FrontierControl | None = None
        self.engine = EngineHandle(crawler)
        # request -> (url, status, fetched_at, content type, length, digest, WARC record id,
        # lane, reason, begun): fetches whose events wait for the engine to finish with them
        self._drafts: dict[Any, tuple] = {}
        self._located: dict[str, tuple[str, int]] = {}  # WARC record id -> (file, offset)
        self._blocked_at: float | None = None
        self._dropped_logged = False
        self._loop: Any = None

    @classmethod
    def from_crawler(cls, crawler: Any) -> EventsExtension:
        s = crawler.settings
        url = config.get(s, "CRAWLER_EXT_EVENTS_URL")
        if not url:
            raise NotConfigured
        sink = sink_for(url, config.get(s, "CRAWLER_EXT_EVENTS_STREAM"),
                        config.get(s, "CRAWLER_EXT_EVENTS_JETSTREAM_NAME"),
                        config.get(s, "CRAWLER_EXT_EVENTS_MAXLEN"))
        jobdir = job_dir(s)
        outbox: Outbox = FileOutbox(Path(jobdir) / "events") if jobdir else MemoryOutbox()
        where = url.split("@")[-1]  # (no credentials in the log)
        ext = cls(crawler, outbox, Sender(outbox, sink, where),
                  config.get(s, "CRAWLER_EXT_EVENTS_OVERFLOW"),
                  config.get(s, "CRAWLER_EXT_EVENTS_MAX_BACKLOG"),
                  config.get(s, "CRAWLER_EXT_EVENTS_CLOSE_TIMEOUT"))
        crawler.signals.connect(ext.frontier_opened, signal=frontier_opened)
        crawler.signals.connect(ext.spider_opened, signal=signals.spider_opened)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        return ext

    # -- lifecycle -----------------------------------------------------------------------------
    def frontier_opened(self, report_decisions: Callable[..., None] | None = None,
                        canonical: Callable[[str], str] | None = None,
                        control: FrontierControl | None = None, **_: Any) -> None:
        """The frontier scheduler opened: its decisions, its spelling of URLs (learned
        parameters dropped) and its control handle (the operator's pause)."""
        if report_decisions is not None:
            report_decisions(self.decided)
        if canonical is not None:
            self.canonical = canonical
        self._control = control

    def spider_opened(self, spider: Any) -> None:
        self.spider = getattr(spider, "name", "") or ""
        # connected now, after the WARC pipeline's receivers: a response's record id is in its
        # request's meta when it is read here, and its place known when the frontier commits
        sig = self.crawler.signals
        sig.connect(self.response_downloaded, signal=signals.response_downloaded)
        sig.connect(self.request_left_downloader, signal=signals.request_left_downloader)
        sig.connect(self.commit, signal=frontier_commit)
        sig.connect(self.warc_written, signal=warc_written)
        backlog = self.outbox.backlog()
        if backlog:
            logger.info("Events: %d event(s) the last run did not deliver are sent first",
                        backlog)
        self.sender.start()
        self._loop = task.LoopingCall(self.commit)
        self._loop.start(1.0, now=False)
        logger.info("Events: to %s (overflow policy: %s past %d waiting)", self.sender.where,
                    self.overflow, self.max_backlog)

    async def spider_closed(self, spider: Any, reason: str) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        self._complete(final=True)
        self.outbox.commit()
        self._unblock()
        left = await maybe_deferred_to_future(
            threads.deferToThread(self.sender.drain, self.close_timeout))
        self.outbox.close()
        self._figures()
        self.stats.set_value("events/undelivered", left)
        if left:
            kept = self.outbox.durable
            logger.error("Events: %d event(s) not delivered to %s within "
                         "CRAWLER_EXT_EVENTS_CLOSE_TIMEOUT; %s", left, self.sender.where,
                         "kept in JOBDIR/events, sent when the crawl resumes" if kept else
                         "lost (without JOBDIR nothing is kept)")

    # -- fetches -------------------------------------------------------------------------------
    def response_downloaded(self, response: Any, request: Any, spider: Any = None) -> None:
        # taken out: a redirect's or a retry's copy of the request must not carry it
        record_id, digest = request.meta.pop(WARC_META, None) or ("", "")
        body = response.body
        ctype = response.headers.get(b"Content-Type") or b""
        self._drafts[request] = (
            response.url, response.status, time.time(), ctype.decode("latin-1"), len(body),
            digest or payload_digest(body), record_id, _lane(request), "", time.monotonic())

    def request_left_downloader(self, request: Any, spider: Any = None) -> None:
        if request not in self._drafts:  # no response: a failed fetch
            self._drafts[request] = (request.url, "", time.time(), "", "", "", "",
                                     _lane(request), "no_response", time.monotonic())

    def warc_written(self, records: list[tuple[str, str, int]], **_: Any) -> None:
        for record_id, path, offset in records:
            self._located[record_id] = (path, offset)

    def commit(self, durable: bool = False, **_: Any) -> None:
        """Complete the events of fetches the engine is done with, into the outbox (before
        the frontier's journal commit, which ``frontier_commit`` precedes)."""
        self._complete(final=False)
        self.outbox.commit()
        self.sender.wake()
        self._police()
        self._figures()

    def _complete(self, final: bool) -> None:
        in_progress = self.engine.in_progress()
        now = time.monotonic()
        for request, draft in list(self._drafts.items()):
            if not final and in_progress is not None and request in in_progress:
                continue
            url, status, at, ctype, length, digest, record_id, lane, reason, begun = draft
            place = self._located.pop(record_id, None) if record_id else None
            if record_id and place is None and not final and now - begun < LOCATE_WAIT:
                continue  # its WARC record's place comes with the writer's next report
            del self._drafts[request]
            if record_id and place is None:
                self.stats.inc_value("events/unlocated")
            try:
                canonical = self.canonical(url)
            except InvalidURL:
                canonical = url
            verdict = request.meta.get("dedup") or {}
            processed = request.meta.get("processed")
            self._emit(fetch_event(
                url=url, canonical_url=canonical, fingerprint=fingerprint_hex(canonical),
                status=status, fetched_at=at, content_type=ctype, length=length,
                payload_digest=digest, lane=lane, spider=self.spider, record_id=record_id,
                warc_file=place[0] if place else "", warc_offset=place[1] if place else "",
                duplicate_of=verdict.get("original") or ""
                if verdict.get("verdict") not in (None, "unique") else "",
                outlinks=len(processed.links) if processed is not None else "",
                reason=reason))

    # -- decisions -----------------------------------------------------------------------------
    def decided(self, kind: str, subject: str, reason: str, until: float | None = None) -> None:
        """The frontier's report: a URL ``refused`` (``subject`` the URL), or a politeness key
        ``parked`` (``subject`` the key) until ``until``."""
        if kind == "refused":
            try:
                canonical = self.canonical(subject)
                fp = fingerprint_hex(canonical)
            except InvalidURL:
                canonical = fp = ""
            self._emit(decision_event(kind, reason=reason, spider=self.spider, url=subject,
                                      canonical_url=canonical, fingerprint=fp))
        else:
            self._emit(decision_event(kind, reason=reason, spider=self.spider, key=subject,
                                      until=until))

    # -- the outbox and its policy ---------------------------------------------------------------
    def _emit(self, event: dict[str, Any]) -> None:
        if self.overflow == "drop" and self.outbox.backlog() >= self.max_backlog:
            self.stats.inc_value("events/dropped")
            if not self._dropped_logged:
                self._dropped_logged = True
                logger.warning("Events: %s is %d events behind (CRAWLER_EXT_EVENTS_MAX_BACKLOG)"
                               "; CRAWLER_EXT_EVENTS_OVERFLOW=drop: new events are dropped, "
                               "counted in events/dropped", self.sender.where,
                               self.outbox.backlog())
            return
        self.outbox.append(encode(event))
        self.stats.inc_value(f"events/{event['kind']}")

    def _police(self) -> None:
        """``block``: the crawl waits while the broker is too far behind."""
        if self.overflow != "block":
            return
        backlog = self.outbox.backlog()
        if self._blocked_at is None and backlog >= self.max_backlog:
            engine = engine_of(self.crawler)
            if engine is None:
                return
            self._blocked_at = time.monotonic()
            engine.pause()
            self.stats.inc_value("events/blocked")
            logger.warning("Events: %s is %d events behind (CRAWLER_EXT_EVENTS_MAX_BACKLOG); "
                           "CRAWLER_EXT_EVENTS_OVERFLOW=block: the crawl waits until half of "
                           "them are delivered", self.sender.where, backlog)
        elif self._blocked_at is not None and backlog <= self.max_backlog // 2:
            self._unblock()

    def _unblock(self) -> None:
        if self._blocked_at is None:
            return
        waited = time.monotonic() - self._blocked_at
        self._blocked_at = None
        self.stats.inc_value("events/blocked_seconds", round(waited, 3))
        logger.warning("Events: the crawl goes on after waiting %.0f s for %s", waited,
                       self.sender.where)
        engine = engine_of(self.crawler)
        paused = self._control is not None and self._control.paused  # (by the operator)
        if engine is not None and not paused:
            engine.unpause()

    def _figures(self) -> None:
        stats = self.stats
        stats.set_value("events/sent", self.sender.sent)
        stats.set_value("events/broker_errors", self.sender.failures)
        backlog = self.outbox.backlog()
        stats.set_value("events/backlog", backlog)
        stats.max_value("events/backlog_max", backlog)


def _lane(request: Any) -> str:
    return "refresh" if request.meta.get(REFRESH_META) else "discovery"
