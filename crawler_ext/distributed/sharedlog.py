"""An append-only log in a Redis list that every worker of a distributed crawl reads: how
the learned per-host rules and the SimHash index are shared.

Each worker appends what it learned (batched) and reads what the others appended, in one
pipelined round trip per ``interval`` in a thread -- never a Redis call per page on the
reactor thread.  A worker that starts late (or restarts) reads the log from its beginning,
so the log is also the shared state's persistence.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from twisted.internet import task, threads

from crawler_ext.distributed.health import health_of

__all__ = ["SharedLog"]

logger = logging.getLogger(__name__)

_SEP = b"\x1f"


class SharedLog:
    def __init__(self, redis: Any, key: str, worker: str, interval: float = 1.0,
                 on_stat: Callable[[str, float], None] | None = None) -> None:
        self.redis, self.key, self.interval = redis, key, interval
        self.on_items: Callable[[list[bytes]], None] = lambda items: None  # (given at start)
        self.worker = worker.encode()
        self._stat = on_stat or (lambda name, value: None)
        self._out: list[bytes] = []
        self._offset = 0
        self._busy = False
        self._loop: task.LoopingCall | None = None
        self._health = health_of(redis)  # one log line per outage for all components
        self._name = key.rsplit(":", 1)[-1]

    def publish(self, item: bytes) -> None:
        self._out.append(self.worker + _SEP + item)

    def start(self, on_items: Callable[[list[bytes]], None]) -> None:
        """Read the log from its beginning, every ``interval`` seconds: what other workers
        wrote goes to ``on_items``."""
        self.on_items = on_items
        self._loop = task.LoopingCall(self.sync)
        self._loop.start(self.interval, now=True)

    def stop(self) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        if self._out:  # the last items, synchronously: the crawl is closing
            try:
                self.redis.rpush(self.key, *self._out)
            except Exception as exc:  # noqa: BLE001
                logger.warning("Shared log %s: last items not written (%s)", self.key, exc)
            self._out = []

    def sync(self) -> None:
        if self._busy:
            return
        out, self._out = self._out, []
        self._busy = True
        d = threads.deferToThread(self._exchange, out, self._offset)
        d.addCallbacks(self._received, self._failed, errbackArgs=(out,))

    def _exchange(self, out: list[bytes], offset: int) -> list[bytes]:
        pipe = self.redis.pipeline(transaction=False)
        if out:
            pipe.rpush(self.key, *out)
        pipe.lrange(self.key, offset, offset + 99_999)
        return pipe.execute()[-1]

    def _received(self, items: list[bytes]) -> None:
        self._busy = False
        self._health.answered(f"shared log {self.key}")
        self._stat(f"shared/{self._name}/commands", 2)
        self._offset += len(items)
        prefix = self.worker + _SEP
        theirs = [item.split(_SEP, 1)[1] for item in items
                  if not item.startswith(prefix) and _SEP in item]
        if theirs:
            self._stat(f"shared/{self._name}/received", len(theirs))
            self.on_items(theirs)

    def _failed(self, failure: Any, out: list[bytes]) -> None:
        self._busy = False
        self._out = out + self._out
        self._stat(f"shared/{self._name}/redis/errors", 1)
        self._health.failed(f"shared log {self.key}", failure.getErrorMessage())
