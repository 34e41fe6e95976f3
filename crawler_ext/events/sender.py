"""The thread that takes events from the outbox to the broker.

It reads a batch from the oldest unacknowledged event, sends it, and records the position
once the broker has it; on a failure it waits (0.5 s, doubling to 5 s) and sends the same
batch again.  An outage is logged once when it begins and once when it ends (with how long
it lasted); the crawl's thread reads the counters (``sent``, ``failures``, ``down_since``).
``drain`` waits, up to a time, for the outbox to be empty, then stops the thread.
"""

from __future__ import annotations

import logging
import threading
import time

from crawler_ext.events.outbox import Outbox
from crawler_ext.events.sinks import EventSink

__all__ = ["Sender"]

logger = logging.getLogger(__name__)

BATCH = 500


class Sender:
    def __init__(self, outbox: Outbox, sink: EventSink, where: str) -> None:
        self.outbox = outbox
        self.sink = sink
        self.where = where  # the broker, for the log (no credentials)
        self.sent = 0
        self.failures = 0
        self.down_since: float | None = None
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="crawler_ext-events",
                                        daemon=True)
        self._thread.start()

    def wake(self) -> None:
        """Events were committed: send them now rather than at the next poll."""
        self._wake.set()

    def drain(self, timeout: float) -> int:
        """Wait up to ``timeout`` seconds for every event to be sent, stop; what is left."""
        deadline = time.monotonic() + timeout
        while self.outbox.backlog() and time.monotonic() < deadline and \
                self._thread is not None and self._thread.is_alive():
            self._wake.set()
            time.sleep(0.05)
        self._stop.set()
        self._wake.set()
        if self._thread is not None:  # (a send in progress ends within its timeouts)
            self._thread.join(max(1.0, self.sink.timeout * 2))
        try:
            self.sink.close()
        except Exception:  # noqa: BLE001 - closing a broken connection
            pass
        return self.outbox.backlog()

    def _run(self) -> None:
        pause = 0.5
        while not self._stop.is_set():
            lines, position = self.outbox.read(BATCH)
            if not lines:
                self._wake.wait(0.2)
                self._wake.clear()
                continue
            try:
                self.sink.send(lines)
            except Exception as exc:  # noqa: BLE001 - any broker failure: retried
                self.failures += 1
                if self.down_since is None:
                    self.down_since = time.time()
                    logger.warning("Events: %s did not take %d event(s) (%s: %s); retrying, "
                                   "the events wait in the outbox", self.where, len(lines),
                                   type(exc).__name__, exc)
                self._stop.wait(pause)
                pause = min(pause * 2, 5.0)
                continue
            self.outbox.acked(position, len(lines))
            self.sent += len(lines)
            pause = 0.5
            if self.down_since is not None:
                logger.warning("Events: %s takes events again after %.0f s",
                               self.where, time.time() - self.down_since)
                self.down_since = None
