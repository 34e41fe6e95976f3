"""Content fingerprints in worker processes, off the reactor thread.

A page's fingerprint (main-content extraction, normalisation, BLAKE2b, SimHash) is pure CPU
work of about 3 ms a page that holds the GIL (Resiliparse does not release it: two threads
run no faster than one), so on the reactor thread it is time the crawl does nothing else.
``FingerprintPool`` runs it in ``CRAWLER_EXT_DEDUP_WORKERS`` processes (``spawn``ed, so no
state of the crawl is forked), each fed through a pipe that the event loop watches: no
thread of ours in the crawler's interpreter, nothing pickled but the answer.  A worker has
at most two pages at a time (the rest wait here), so sending never waits on a busy worker.
The content index itself -- lookups and inserts, which must happen in one order -- stays on
the reactor thread.  If the pool cannot be used (no asyncio reactor, a worker died) the
pages are fingerprinted in-process from then on, those a dead worker held included: logged
once, counted in ``dedup/workers/fallback``; no page is lost or judged differently.
"""

from __future__ import annotations

import asyncio
import logging
from collections import deque
from dataclasses import dataclass, field
from typing import Any

from crawler_ext.dedup.index import PageFingerprint, page_fingerprint
from crawler_ext.runtime.spawn import start_helper

__all__ = ["FingerprintPool"]

logger = logging.getLogger(__name__)

PER_WORKER = 2  # pages handed to one worker at once


def _serve(conn: Any, min_words: int) -> None:
    """A worker: a page's body in, its fingerprint out, until the pipe closes."""
    while True:
        try:
            body = conn.recv_bytes()
        except (EOFError, OSError):
            return
        conn.send(tuple(page_fingerprint(body, min_words)))


@dataclass
class _Worker:
    conn: Any
    process: Any
    sent: deque = field(default_factory=deque)  # (future, body), in the worker's order


class FingerprintPool:
    """``await pool.fingerprint(body)`` gives :func:`page_fingerprint` of it, computed in a
    worker process while the reactor goes on."""

    def __init__(self, workers: int, min_words: int, stats: Any = None) -> None:
        self.workers = workers
        self.min_words = min_words
        self.stats = stats
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pool: list[_Worker] = []
        self._waiting: deque = deque()  # (future, body) not handed to a worker yet
        self._failed = workers <= 0

    def start(self, asyncio_loop: bool = True) -> None:
        """Start the workers (they import the extractor once, then wait for pages); without
        an asyncio event loop (``asyncio_loop``: Scrapy's asyncio reactor) pages are
        fingerprinted in-process."""
        if self._failed:
            return
        if not asyncio_loop:
            self._fail("the installed reactor is not asyncio's")
            return
        self._loop = asyncio.get_event_loop()
        try:
            for i in range(self.workers):
                conn, process = start_helper(_serve, (self.min_words,), f"crawler_ext-dedup-{i}")
                worker = _Worker(conn, process)
                self._pool.append(worker)
                self._loop.add_reader(conn.fileno(), self._receive, worker)
        except OSError as exc:
            self._fail(f"{type(exc).__name__}: {exc}")

    @property
    def active(self) -> bool:
        return bool(self._pool) and not self._failed

    async def fingerprint(self, body: bytes) -> PageFingerprint:
        if not self.active:
            return self._in_process(body)
        assert self._loop is not None
        future = self._loop.create_future()
        self._waiting.append((future, body))
        self._hand_out()
        return await future

    def _in_process(self, body: bytes) -> PageFingerprint:
        if self.workers > 0 and self.stats is not None:  # (0: in-process by choice)
            self.stats.inc_value("dedup/workers/fallback")
        return page_fingerprint(body, self.min_words)

    def _hand_out(self) -> None:
        while self._waiting and not self._failed:
            worker = min(self._pool, key=lambda w: len(w.sent))
            if len(worker.sent) >= PER_WORKER:
                return
            future, body = self._waiting.popleft()
            worker.sent.append((future, body))
            try:
                worker.conn.send_bytes(body)
            except OSError as exc:
                self._fail(f"{type(exc).__name__}: {exc}")

    def _receive(self, worker: _Worker) -> None:
        """The event loop's callback: a worker's pipe is readable."""
        try:
            while worker.conn.poll():
                answer = PageFingerprint(*worker.conn.recv())
                future, _ = worker.sent.popleft()
                if not future.done():
                    future.set_result(answer)
        except (EOFError, OSError) as exc:
            self._fail(f"a worker ended ({type(exc).__name__})")
            return
        self._hand_out()

    def _fail(self, why: str) -> None:
        if not self._failed:
            logger.warning("Content dedup: fingerprinting pages on the reactor thread from now "
                           "on (%s); counted in dedup/workers/fallback", why)
        self._failed = True
        # the pages no worker will answer: fingerprinted here, none lost
        pending = [item for w in self._pool for item in w.sent] + list(self._waiting)
        self._waiting.clear()
        self.close()
        for future, body in pending:
            if not future.done():
                future.set_result(self._in_process(body))

    def close(self) -> None:
        for worker in self._pool:
            worker.sent.clear()
            if self._loop is not None:
                self._loop.remove_reader(worker.conn.fileno())
            worker.conn.close()  # the worker's recv ends: it exits
        self._pool = []
