"""The frontier's figures now, for the progress line in the log
(``CRAWLER_EXT_FRONTIER_LOG_INTERVAL``) and the crawl report."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from crawler_ext.frontier.adapter.inflight import InFlight
from crawler_ext.frontier.contract import FrontierBackend, SharedFrontier

__all__ = ["Progress"]

logger = logging.getLogger("crawler_ext.frontier.adapter.scheduler")


class Progress:
    def __init__(self, frontier: FrontierBackend, shared: SharedFrontier | None,
                 inflight: InFlight, stats: Any, interval: float,
                 flush_counts: Callable[[], None]) -> None:
        self.frontier = frontier
        self.shared = shared  # the frontier, when shared: its workers' stats summed at close
        self.inflight = inflight
        self.stats = stats
        self.interval = interval
        self.flush_counts = flush_counts
        self._dispatched_at_last_log = 0

    def now(self) -> dict[str, Any]:
        return {"queued": self.frontier.pending(), "bands": self.frontier.band_sizes(),
                "delayed": self.frontier.delayed(), "active_hosts": self.frontier.active_keys(),
                "in_flight": len(self.inflight)}

    def log(self) -> None:
        self.flush_counts()
        dispatched = self.stats.get_value("frontier/dispatched", 0) if self.stats else 0
        rate = (dispatched - self._dispatched_at_last_log) * 60.0 / self.interval
        self._dispatched_at_last_log = dispatched
        now = self.now()
        bands = now["bands"]
        harvest = self.stats.get_value("focus/harvest_rate") if self.stats else None
        logger.info(
            "Frontier: %d queued (bands %s; %d delayed), %d active hosts, %d in flight, %d "
            "dispatched (%.0f/min)%s", now["queued"], "/".join(map(str, bands))
            if bands is not None else "shared", now["delayed"], now["active_hosts"],
            now["in_flight"], dispatched, rate,
            f", harvest rate {harvest:.3f}" if harvest is not None else "")  # a focused crawl

    def final(self) -> None:
        """At close: what is left queued, and the hosts parked with their URLs."""
        frontier = self.frontier
        self.stats.set_value("frontier/pending", frontier.pending())
        parked = frontier.parked_pending(time.time())
        if parked:
            self.stats.set_value("frontier/parked", len(frontier.parked))
            self.stats.set_value("frontier/parked_pending", parked)
            logger.info("Frontier: %d hosts parked with %d queued URLs (they asked to wait "
                        "longer than CRAWLER_EXT_POLITENESS_BACKOFF_MAX, or their robots.txt "
                        "failed and waits for its retry): %s",
                        len(frontier.parked), parked, ", ".join(sorted(frontier.parked)[:20]))
        if self.shared is not None:
            self.shared.publish_stats(self.stats.get_stats())
