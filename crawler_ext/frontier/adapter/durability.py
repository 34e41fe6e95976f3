"""Completion and commits: when the frontier may forget an entry, and in which order the
journal and the seen set are written.

A flush, every ``CRAWLER_EXT_FRONTIER_FLUSH_INTERVAL`` seconds: the blocklist file is read
again, the seen set's batched answers are applied, then the *reap* completes the entries whose
responses the engine has finished (their links are admitted by then; nothing while links wait
for a host's address), ``frontier_commit`` is sent (the WARC writer makes its records durable
first), the journal is committed, and the seen set after it (it never runs ahead of the
journal).  A snapshot of the seen set follows a journal commit in the same turn, so it covers
exactly the admissions up to the position it records.  A full disk freezes it all: nothing
more is called done, so what was not stored is fetched again after a restart.
"""

from __future__ import annotations

import logging
import sqlite3
from collections.abc import Callable
from typing import Any

from scrapy.utils.asyncio import call_later

from crawler_ext.runtime.diskfull import is_disk_full, report_disk_full
from crawler_ext.frontier.adapter.engine import EngineHandle
from crawler_ext.frontier.adapter.inflight import InFlight
from crawler_ext.frontier.adapter.intake import Intake
from crawler_ext.frontier.adapter.keys import PolitenessKeys
from crawler_ext.frontier.adapter.requests import StoredRequests
from crawler_ext.frontier.adapter.roles import Gates, Stores
from crawler_ext.frontier.contract import FrontierBackend, JournaledFrontier
from crawler_ext.hosts.blocklist import Blocklist
from crawler_ext.seen import SeenSet
from crawler_ext.signals import frontier_commit

__all__ = ["STORAGE_ERRORS", "Durability"]

logger = logging.getLogger(__name__)

#: what a journal or seen-set write raises when it fails
STORAGE_ERRORS = (OSError, sqlite3.Error)


class Durability:
    def __init__(self, stores: Stores, gates: Gates, inflight: InFlight, intake: Intake,
                 requests: StoredRequests, engine: EngineHandle, jobdir: str | None,
                 flush_counts: Callable[[], None]) -> None:
        self.frontier: FrontierBackend = stores.frontier
        # the frontier, when it journals here (None: nothing to replay)
        self.journal: JournaledFrontier | None = stores.journal
        self.seen: SeenSet = stores.seen
        self.inflight = inflight
        self.intake = intake
        self.keys: PolitenessKeys = gates.keys
        self.requests = requests
        self.blocklist: Blocklist = gates.blocklist
        self.engine = engine
        self.jobdir = jobdir  # (named when its disk fills up)
        self.flush_counts = flush_counts
        self.frozen = False  # a disk filled up: the journal commits nothing more

    def open(self, inc: Callable[[str, int], None]) -> Any:
        """Resume: the seen set's snapshot, the frontier's queues (in-flight entries queued
        again), then the admissions journalled after the snapshot replayed into the seen set;
        what the seen set's ``open`` returned."""
        result = self.seen.open()
        self.frontier.open()
        if self.journal is None:
            return result
        recovered = self.journal.recover()
        fps, mark = self.journal.admitted_since(self.seen.mark)
        self.seen.replay(fps, mark)
        if fps:
            logger.info("Seen set: replayed %d admissions journalled after its snapshot",
                        len(fps))
        if recovered:
            logger.info("Frontier: resumed %d queued or in-flight requests", recovered)
            inc("frontier/recovered", recovered)
        return result

    def reap(self, final: bool = False) -> None:
        """Complete requests whose responses the engine has finished processing (their links
        are admitted by then), so a durable store forgets them only after that."""
        if self.frozen:
            return
        if self.keys.waiting() and not final:
            return  # links waiting for DNS are not journalled yet: complete nothing now
        done: list[int] = []
        # (key, band, data, fp, id, ...: InFlight's tuples, read without a view per entry)
        for flight in self.inflight.finished(self.engine.in_progress(), final):
            done.append(flight[4])
            self.requests.forget(flight[2])
            if flight[3]:
                self.intake.fetched(flight[3])
        if done:
            self.frontier.complete(done)

    def page_done(self, response: Any) -> None:
        """The spider's output for ``response`` is all taken: the page's importance flows to
        its links in the next turn of the loop (Scrapy's scraper buffers the output and
        schedules its requests after taking it all), not at the next reap (which does it for
        a page never told here)."""
        call_later(0, self._page_done, response.request)

    def _page_done(self, request: Any) -> None:
        info = self.inflight.get(request)
        if info is not None and info.fp:
            self.intake.fetched(info.fp)

    def flush(self) -> None:
        self.flush_counts()
        if self.frozen:
            return
        self.blocklist.refresh()
        self.intake.confirm()
        self.reap()
        self.engine.send(frontier_commit, durable=self.frontier.durable)
        if self.frozen:  # what the journal would call done was not all stored
            return
        try:
            self.frontier.flush()
            self.seen.flush()  # after the journal: the seen set never runs ahead of it
        except STORAGE_ERRORS as exc:
            self.storage_error(exc)

    def snapshot(self) -> None:
        """Snapshot the seen set right after a journal commit, in the same reactor turn."""
        if self.frozen:
            return
        try:
            self.frontier.flush()
            self.seen.snapshot(self._mark())
        except STORAGE_ERRORS as exc:
            self.storage_error(exc)

    def close(self, reason: str) -> None:
        """The last confirmation, reap and commits (none after a full disk)."""
        if self.frozen:  # nothing more is called done: what was not stored is fetched again
            self.frontier.close(commit=False)
            return
        self.intake.confirm()
        self.reap(final=reason == "finished")
        try:
            self.frontier.close()
            self.seen.flush()
        except STORAGE_ERRORS as exc:
            self.storage_error(exc)
        self.seen.mark = self._mark()

    def _mark(self) -> int:
        """The journal's position (0: a frontier that journals nothing here)."""
        return self.journal.admitted_mark() if self.journal is not None else 0

    def storage_error(self, exc: BaseException) -> None:
        """The journal or the seen set could not be written: a full disk stops the crawl."""
        if not is_disk_full(exc):
            raise exc
        self.frozen = True
        report_disk_full(self.engine.crawler, "jobdir", self.jobdir, exc)

    def storage_failed(self, where: str = "", **_: Any) -> None:
        """``storage_failed``: another component's disk filled up."""
        self.frozen = True
