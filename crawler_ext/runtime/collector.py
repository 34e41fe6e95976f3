"""Python's garbage collector tuned for a crawl process (``CRAWLER_EXT_GC_THRESHOLD``).

With Python's thresholds (700, 10, 10) the young generation is collected every 700
allocations, so a request in flight, its response and their Deferreds -- alive for the second
or so of a fetch -- are promoted to the oldest generation before they die, and the oldest
generation (the crawl's whole heap, 400,000 objects and more) is collected again each time a
quarter of it was promoted.  On the broad web at 1,000 requests in flight that was 51 full
collections in 90 s at 400 ms each: a third of the crawl process's CPU, and the reactor
stalled for each (``docs/broad.md``).  A larger young generation lets those objects die
young; the objects of start-up (modules, classes, settings) are moved out of the collector's
sight once (``gc.freeze``).  Reference counting frees everything that is not in a cycle at
once, whatever the thresholds: what waits longer is cyclic garbage only.

The cost is memory: cyclic garbage that reaches the oldest generation waits longer for a
full collection (peak RSS 582 against 392 MiB in that crawl).  So the threshold is 0 (Python's
collector as it is) unless set; ``docs/broad.md``'s preset sets 10,000.  At the engine's
start, unless the threshold is 0: ``gc.collect()``, ``gc.freeze()``,
``gc.set_threshold(CRAWLER_EXT_GC_THRESHOLD, 10, 10)``.  At the spider's close, the
collections of each generation go to the stats (``gc/collections/0`` ... ``/2``), tuned or
not.  The collector is the process's: a project that tunes it itself leaves the setting 0.
"""

from __future__ import annotations

import gc
import logging
from typing import Any

from scrapy import signals

from crawler_ext import config

__all__ = ["CollectorTuning", "tune"]

logger = logging.getLogger(__name__)


def tune(threshold: int) -> bool:
    """Freeze what exists and set the young generation's threshold (0: nothing done)."""
    if threshold <= 0:
        return False
    gc.collect()
    gc.freeze()
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(threshold, older, oldest)
    return True


class CollectorTuning:
    """The extension (the add-on enables it)."""

    def __init__(self, crawler: Any) -> None:
        self.crawler = crawler
        self.threshold = config.get(crawler.settings, "CRAWLER_EXT_GC_THRESHOLD")
        self._before: list[int] = []
        crawler.signals.connect(self.engine_started, signal=signals.engine_started)
        crawler.signals.connect(self.spider_closed, signal=signals.spider_closed)

    @classmethod
    def from_crawler(cls, crawler: Any) -> CollectorTuning:
        return cls(crawler)

    def engine_started(self) -> None:
        if tune(self.threshold):
            logger.info("Garbage collector: %d start-up objects frozen, young generation "
                        "collected every %d allocations (CRAWLER_EXT_GC_THRESHOLD)",
                        gc.get_freeze_count(), self.threshold)
        self._before = [generation["collections"] for generation in gc.get_stats()]

    def spider_closed(self, spider: Any = None, reason: str | None = None) -> None:
        stats = self.crawler.stats
        if stats is None or not self._before:
            return
        for n, generation in enumerate(gc.get_stats()):
            stats.set_value(f"gc/collections/{n}", generation["collections"] - self._before[n])
