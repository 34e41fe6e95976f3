"""WARC writing in a process of its own: records serialised, gzipped and appended off the
reactor's interpreter.

The writer thread (``BackgroundWriter``) moves zlib and the file writes off the reactor
thread, but warcio's serialisation is Python code that holds the GIL: on a CPU-bound crawl
the thread took 13 % of the crawl's rate (real-site corpus, 8 requests in flight per host).
``ProcessWriter`` keeps the same interface and order: the pipeline builds each record on the
reactor thread (headers, digest, ids, dates) and sends it, pickled, through a pipe to one
``spawn``ed process that writes it with a ``WarcFileWriter``; a full pipe makes ``write`` wait
(back-pressure, not memory).  ``flush()`` waits until the process has written and flushed
everything sent before it (the frontier calls it before committing its journal);
``flush(wait=False)`` does not wait.  A write error in the process (a full disk) is raised
by the caller's next ``write``/``flush``/``close``, as the thread does.  If the crawl dies
(kill -9), the process flushes what it received and ends, leaving the file ``.open`` for the
next start's recovery.  If the process cannot start, the thread writes instead (logged).
"""

from __future__ import annotations

import errno
import logging
import pickle
from pathlib import Path
from typing import Any

from crawler_ext.runtime.spawn import start_helper
from crawler_ext.warc.background import BackgroundWriter
from crawler_ext.warc.plans import RecordPlan
from crawler_ext.warc.writer import WarcFileWriter

__all__ = ["ProcessWriter"]

logger = logging.getLogger(__name__)


def _serve(conn: Any, config: dict[str, Any]) -> None:
    """The process: write what comes, report the state when asked, until told to close."""
    writer = WarcFileWriter(**config)
    while True:
        try:
            message = conn.recv()
        except (EOFError, OSError):  # the crawl is gone: keep what came, leave the file .open
            try:
                writer.flush()
            except OSError:
                pass
            return
        kind = message[0]
        try:
            if kind == "w":
                if writer.broken is None:
                    writer.write_prepared(message[1])
            elif kind == "p":
                if writer.broken is None:
                    writer.write_plan(message[1])
            elif kind == "f":
                if writer.broken is None:
                    writer.flush()
            else:
                writer.close()
        except OSError:
            pass  # ``writer.broken`` holds it: reported with the next state
        if kind in ("w", "p"):
            continue
        conn.send((message[1], writer.records, writer.bytes_written,
                   [str(p) for p in writer.files], writer.broken, writer.take_located()))
        if kind == "c":
            return


class ProcessWriter(BackgroundWriter):
    """The interface of :class:`WarcFileWriter` (``builder``, ``open``, ``write``, ``flush``,
    ``close``, the counters); the writing happens in a child process (the thread's if that
    process cannot start)."""

    def __init__(self, writer: WarcFileWriter, max_queue: int = 256) -> None:
        super().__init__(writer, max_queue)
        self._conn: Any = None
        self._proc: Any = None
        self._sent = self._acked = 0
        self._state: tuple[int, int, list[Path]] = (0, 0, [])
        self._remote = False  # the process writes (not the thread)
        self._located: list[tuple[str, str, int]] = []  # the process's reports, not yet taken

    # the counters: the process's, once it writes (the thread's writer's otherwise)
    @property
    def files(self) -> list[Path]:
        return self._state[2] if self._remote else self.writer.files

    @property
    def records(self) -> int:
        return self._state[0] if self._remote else self.writer.records

    @property
    def bytes_written(self) -> int:
        return self._state[1] if self._remote else self.writer.bytes_written

    def open(self) -> None:
        try:
            config = self.writer.config()
            self.writer.open()  # recovers files a crash left .open, before anything is written
            self._conn, self._proc = start_helper(_serve, (config,), "crawler_ext-warc")
            self._remote = True
        except (OSError, ValueError, TypeError, AttributeError, pickle.PicklingError) as exc:
            logger.warning("WARC: no writer process (%s); writing in a thread instead", exc)
            self._conn = self._proc = None
            super().open()

    def write(self, record: Any) -> None:
        if self._proc is None:
            super().write(record)
            return
        self.writer.prepare(record)
        self._send(("w", record))

    def write_plan(self, plan: RecordPlan) -> None:
        """A record plan (``crawler_ext.warc.plans``): its records are built in the
        process."""
        if self._proc is None:
            super().write_plan(plan)
            return
        self._send(("p", plan))

    def _send(self, message: tuple) -> None:
        self._collect()
        self._raise()
        try:
            self._conn.send(message)
        except OSError as exc:
            self._ended(exc)
            self._raise()

    def flush(self, wait: bool = True, **_: Any) -> None:
        if self._proc is None:
            super().flush(wait=wait)
            return
        self._ask("f", wait)

    def close(self) -> None:
        if self._proc is None:
            super().close()
            return
        if self.broken is None:
            self._ask("c", wait=True, raise_now=False)
        self._conn.close()  # (after a failure the process ends on the closed pipe)
        self._proc.join(10)
        self._proc = None
        if not self._raised:  # a failure in the last records: the caller must still hear it
            self._raise()

    def _ask(self, kind: str, wait: bool, raise_now: bool = True) -> None:
        self._collect()
        if self.broken is None:
            self._sent += 1
            try:
                self._conn.send((kind, self._sent))
                while wait and self._acked < self._sent:
                    self._take(self._conn.recv())
            except (OSError, EOFError) as exc:
                self._ended(exc)
        if raise_now:
            self._raise()

    def _collect(self) -> None:
        """Take the states the process sent since (never waits)."""
        try:
            while self._conn.poll():
                self._take(self._conn.recv())
        except (OSError, EOFError) as exc:
            self._ended(exc)

    def take_located(self) -> list[tuple[str, str, int]]:
        if not self._remote:
            return super().take_located()
        if self._proc is not None:
            self._collect()
        located, self._located = self._located, []
        return located

    def _take(self, state: tuple) -> None:
        self._acked, records, written, files, broken, located = state
        self._located += located
        self._state = (records, written, [Path(p) for p in files])
        if broken is not None and self.broken is None:
            self.broken = broken

    def _ended(self, exc: BaseException) -> None:
        if self.broken is None:
            self.broken = OSError(errno.EPIPE, f"the WARC writer process ended ({exc!r})")
