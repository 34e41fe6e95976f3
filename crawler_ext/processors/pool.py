"""Processing in worker processes, each document under a time and a memory cap.

``ProcessorPool`` runs documents in ``CRAWLER_EXT_PROCESSOR_WORKERS`` processes
(``spawn``ed like the dedup workers, fed through pipes the event loop watches), one document
per worker at a time so that a cap costs exactly the document that broke it:

* time: a document not answered within ``timeout`` seconds has its worker killed
  (``refused = "timeout"``);
* memory: each worker's address space is capped at its size after start-up plus
  ``memory_mb`` (``RLIMIT_AS``); a processor that runs out gets a ``MemoryError``
  (``refused = "memory"``) or, inside C code, dies (``refused = "crashed"``).

A killed or dead worker is replaced at once.  If workers keep dying without answering
anything (a broken installation), or the reactor is not asyncio's, the pool gives up: logged
once, and documents are answered ``refused = "no_workers"`` from then on -- never processed
on the reactor thread; the middleware then lets them go on as if processors were off.
"""

from __future__ import annotations

import asyncio
import logging
import os
import resource
from collections import deque
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from crawler_ext.processors.contract import Document, Processed, RelevanceScorer
from crawler_ext.processors.sniff import kind_of
from crawler_ext.runtime.spawn import start_helper

__all__ = ["ProcessorPool"]

logger = logging.getLogger(__name__)

MAX_FRUITLESS_STARTS = 5  # workers dead in a row without one answer: the pool gives up


def _address_space() -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmSize:"):
                return int(line.split()[1]) * 1024
    return 0


def _serve(conn: Any, table: Mapping[str, str], min_words: int, memory_mb: int,
           scorer: RelevanceScorer | None = None, link_context: bool = False) -> None:
    """A worker: documents in, ``(Processed, fingerprint)`` out, until the pipe closes."""
    os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    from crawler_ext.processors.work import Runner

    runner = Runner(table, min_words, scorer, link_context)
    for mime in ("text/html", "application/pdf", "application/rss+xml", "image/png"):
        try:  # import the libraries before the cap, so the cap is for documents
            runner.processor(mime)
        except Exception:  # noqa: BLE001,S112 -- a bad processor fails its documents instead
            continue
    if memory_mb > 0:
        limit = _address_space() + memory_mb * 1024 * 1024
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    conn.send(("ready", None))
    while True:
        try:
            document = conn.recv()
        except (EOFError, OSError):
            return
        conn.send(runner.run(Document(*document)))


@dataclass
class _Job:
    document: Document
    future: asyncio.Future


class _Worker:
    def __init__(self, conn: Any, process: Any) -> None:
        self.conn = conn
        self.process = process
        self.job: _Job | None = None
        self.ready = False
        self.timer: asyncio.TimerHandle | None = None


class ProcessorPool:
    """``await pool.process(document)`` gives ``(Processed, fingerprint or None)``."""

    def __init__(self, workers: int, table: Mapping[str, str], min_words: int = 20,
                 timeout: float = 30.0, memory_mb: int = 512, stats: Any = None,
                 scorer: RelevanceScorer | None = None, link_context: bool = False) -> None:
        self.size = workers
        self.scorer = scorer  # a focused crawl's page classifier, run on each text
        self.link_context = link_context  # and the words around each link, for its scorer
        self.table = dict(table)
        self.min_words = min_words
        self.timeout = timeout
        self.memory_mb = memory_mb
        self.stats = stats
        self._loop: asyncio.AbstractEventLoop | None = None
        self._workers: list[_Worker] = []
        self._waiting: deque[_Job] = deque()
        self._fruitless = 0
        self.failed = ""

    def start(self, asyncio_loop: bool = True) -> None:
        """Start the workers; without an asyncio event loop (``asyncio_loop``: Scrapy's
        asyncio reactor, or its reactorless mode) the pool gives up at once."""
        if not asyncio_loop:
            self._give_up("the installed reactor is not asyncio's")
            return
        self._loop = asyncio.get_event_loop()
        for _ in range(self.size):
            self._spawn()

    def _spawn(self) -> None:
        assert self._loop is not None
        try:
            conn, process = start_helper(_serve, (self.table, self.min_words, self.memory_mb,
                                                  self.scorer, self.link_context),
                                         f"crawler_ext-processor-{len(self._workers)}")
        except OSError as exc:
            self._give_up(f"{type(exc).__name__}: {exc}")
            return
        worker = _Worker(conn, process)
        self._workers.append(worker)
        self._loop.add_reader(conn.fileno(), self._receive, worker)

    async def process(self, document: Document) -> tuple[Processed, Any]:
        if self.failed or self._loop is None:
            return self._refused(document, "no_workers"), None
        job = _Job(document, self._loop.create_future())
        self._waiting.append(job)
        self._hand_out()
        return await job.future

    def _hand_out(self) -> None:
        for worker in self._workers:
            if not self._waiting:
                return
            if worker.ready and worker.job is None:
                job = self._waiting.popleft()
                worker.job = job
                try:
                    worker.conn.send(tuple(job.document))
                except (OSError, ValueError):
                    self._lost(worker, "crashed")
                    continue
                assert self._loop is not None
                worker.timer = self._loop.call_later(self.timeout, self._lost, worker, "timeout")

    def _receive(self, worker: _Worker) -> None:
        try:
            while worker.conn.poll():
                answer = worker.conn.recv()
                if not worker.ready:
                    worker.ready = True
                    continue
                job, worker.job = worker.job, None
                if worker.timer is not None:
                    worker.timer.cancel()
                self._fruitless = 0
                if job is not None and not job.future.done():
                    job.future.set_result(answer)
        except (EOFError, OSError):
            self._lost(worker, "crashed")
            return
        except Exception as exc:  # noqa: BLE001 -- an answer that cannot be read
            self._lost(worker, "crashed", f"{type(exc).__name__}")
            return
        self._hand_out()

    def _lost(self, worker: _Worker, why: str, detail: str = "") -> None:
        """A worker timed out or died: its document is refused, the worker replaced."""
        if worker not in self._workers:
            return
        self._workers.remove(worker)
        self._close(worker)
        if worker.job is not None:
            job, worker.job = worker.job, None
            if not job.future.done():
                job.future.set_result((self._refused(job.document, why, detail), None))
        else:
            self._fruitless += 1
        if self.stats is not None:
            self.stats.inc_value("processor/workers/restarted")
        if self._fruitless >= MAX_FRUITLESS_STARTS:
            self._give_up(f"{self._fruitless} workers ended before their first answer")
            return
        self._spawn()
        self._hand_out()

    def _refused(self, document: Document, why: str, detail: str = "") -> Processed:
        return Processed(kind_of(document.mime), "", refused=why,
                         metadata={"error": detail} if detail else {})

    def _give_up(self, why: str) -> None:
        if not self.failed:
            logger.error("Content processors: no worker process can run (%s); documents go "
                         "on unprocessed from now on (links by the spider, dedup on the "
                         "reactor thread), counted in processor/<kind>/no_workers", why)
        self.failed = why
        self.close()
        while self._waiting:
            job = self._waiting.popleft()
            if not job.future.done():
                job.future.set_result((self._refused(job.document, "no_workers"), None))

    def _close(self, worker: _Worker) -> None:
        if worker.timer is not None:
            worker.timer.cancel()
        if self._loop is not None:
            try:
                self._loop.remove_reader(worker.conn.fileno())
            except (OSError, ValueError):
                pass
        worker.conn.close()
        if worker.process.is_alive():
            worker.process.kill()
        worker.process.join(timeout=0)  # reaped now if it is gone, else by multiprocessing

    def close(self) -> None:
        for worker in list(self._workers):
            job, worker.job = worker.job, None
            self._close(worker)
            if job is not None and not job.future.done():
                job.future.set_result((self._refused(job.document, "no_workers"), None))
        self._workers = []
