"""WARC writing off the reactor thread: a ``WarcFileWriter`` driven by a thread of its own.

The pipeline builds each record on the reactor thread (headers, digest, ids) and hands it to
a bounded queue; one writer thread serialises, gzips and appends records in the order they
came (zlib and file writes release the GIL, so on a second core they overlap the crawl's
Python work).  ``flush`` waits until the queue is empty and the file flushed: the frontier
calls it before committing its journal, so a kill -9 loses only records of requests the
journal does not call done (they are fetched again).  A write error (a full disk) stops the
thread's writing and is raised by the next ``write``/``flush`` on the caller's thread.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from crawler_ext.runtime.worker import QueueThread
from crawler_ext.warc.plans import RecordPlan
from crawler_ext.warc.writer import WarcFileWriter

__all__ = ["BackgroundWriter"]

_FLUSH = object()
_PLAN = object()  # (_PLAN, plan): a record plan, built on the thread


class BackgroundWriter:
    """The interface of :class:`WarcFileWriter` (``builder``, ``open``, ``write``, ``flush``,
    ``close``, the counters), writing in a thread; ``max_queue`` records may wait (a full
    queue makes ``write`` wait: back-pressure, not memory)."""

    def __init__(self, writer: WarcFileWriter, max_queue: int = 256) -> None:
        self.writer = writer
        self._thread = QueueThread("crawler_ext-warc", self._write, max_queue)
        self.broken: OSError | None = None
        self._raised = False  # the caller has been told of ``broken``

    # -- what the pipeline reads -------------------------------------------------------------
    @property
    def builder(self) -> Any:
        return self.writer.builder

    @property
    def directory(self) -> Path:
        return self.writer.directory

    @property
    def files(self) -> list[Path]:
        return self.writer.files

    @property
    def records(self) -> int:
        return self.writer.records

    @property
    def bytes_written(self) -> int:
        return self.writer.bytes_written

    def take_located(self) -> list[tuple[str, str, int]]:
        """The places of the response and revisit records written since the last call."""
        return self.writer.take_located()

    # -- lifecycle ---------------------------------------------------------------------------
    def open(self) -> None:
        self.writer.open()
        self._thread.start()

    def _raise(self) -> None:
        if self.broken is not None:
            self._raised = True
            raise self.broken

    def write(self, record: Any) -> None:
        self._raise()
        if not self._thread.running:  # not opened (or closed): write in place
            self.writer.write(record)
            return
        self.writer.prepare(record)
        self._thread.put(record)

    def write_plan(self, plan: RecordPlan) -> None:
        self._raise()
        if not self._thread.running:
            self.writer.write_plan(plan)
            return
        self._thread.put((_PLAN, plan))

    def new_id(self) -> str:
        return self.writer.new_id()

    def new_date(self, same_as: str | None = None) -> str:
        return self.writer.new_date(same_as)

    def flush(self, wait: bool = True, **_: Any) -> None:
        """Wait until every record handed over is in the file, then flush it; with ``wait``
        False (no durable journal to keep in step with) the thread flushes once it has
        written what came before, and the caller goes on at once."""
        if not wait and self._thread.running:
            self._raise()
            self._thread.offer(_FLUSH)  # (full: the thread is busy anyway; it flushes too)
            return
        self._thread.drain()
        self._raise()
        self.writer.flush()  # the thread is idle: nothing else touches the file now

    def close(self) -> None:
        self._thread.stop()
        self.writer.close()
        if not self._raised:  # a failure in the last records: the caller must still hear it
            self._raise()

    def _write(self, record: Any) -> None:  # (on the writer thread)
        if self.broken is not None:
            return
        try:
            if record is _FLUSH:
                self.writer.flush()
            elif isinstance(record, tuple) and record[0] is _PLAN:
                self.writer.write_plan(record[1])
            else:
                self.writer.write_prepared(record)
        except OSError as exc:
            self.broken = exc  # raised on the caller's thread by its next write or flush
