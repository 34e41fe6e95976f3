"""A thread that takes work from a bounded queue, in order, until it is stopped: what the WARC
writer and the link graph's writer run their file writes on (zlib and file writes release
the GIL, so on a second core they overlap the crawl's Python work).  A full queue makes
``put`` wait: back-pressure, not memory."""

from __future__ import annotations

import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["QueueThread"]

_STOP = object()


class QueueThread:
    """``handle(item)`` for each item ``put``, on a daemon thread named ``name``;
    ``stopped()`` on that thread once :meth:`stop` is called, after the items before it."""

    def __init__(self, name: str, handle: Callable[[Any], None], max_queue: int,
                 stopped: Callable[[], None] = lambda: None) -> None:
        self.name = name
        self._handle = handle
        self._stopped = stopped
        self._queue: queue.Queue[Any] = queue.Queue(maxsize=max_queue)
        self._thread: threading.Thread | None = None

    @property
    def running(self) -> bool:
        return self._thread is not None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def put(self, item: Any) -> None:
        self._queue.put(item)

    def offer(self, item: Any) -> bool:
        """Queue ``item`` unless the queue is full; whether it was queued."""
        try:
            self._queue.put_nowait(item)
        except queue.Full:
            return False
        return True

    def drain(self) -> None:
        """Wait until every item put so far was handled."""
        self._queue.join()

    def stop(self) -> None:
        """Handle what was put, then end the thread (nothing if it never started)."""
        if self._thread is not None:
            self._queue.put(_STOP)
            self._thread.join()
            self._thread = None

    def _run(self) -> None:
        while True:
            item = self._queue.get()
            try:
                if item is _STOP:
                    self._stopped()
                    return
                self._handle(item)
            finally:
                self._queue.task_done()
