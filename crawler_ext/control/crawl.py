"""The running crawl as the control API sees it (:class:`~crawler_ext.control.api.CrawlPort`):
figures from the stats and the frontier, keys from the ledger of fetches and the frontier,
actions handed to the frontier's control handle (``FrontierControl``).  Runs on the reactor; a shared frontier's
key state is read in a thread."""

from __future__ import annotations

import logging
import time
from collections import deque
from typing import Any

from scrapy import Request
from scrapy.utils.asyncio import call_later
from scrapy.utils.defer import deferred_from_coro
from twisted.internet import threads

from crawler_ext.frontier.contract import FrontierControl
from crawler_ext.report.timeseries import HostLedger

__all__ = ["RunningCrawl"]

logger = logging.getLogger(__name__)

#: the figures a sample of the live page's series keeps (besides the frontier's)
SERIES_STATS = ("response_received_count", "item_scraped_count", "frontier/dispatched",
                "downloader/response_bytes", "dedup/exact_duplicates",
                "dedup/near_duplicates", "log_count/ERROR", "focus/fetched",
                "focus/relevant", "focus/confidence")
_ERROR_STATS = ("downloader/exception_type_count/", "downloader/response_status_count/4",
                "downloader/response_status_count/5", "spider_exceptions/")
_DEDUP_STATS = ("dedup/",)
_ADMISSION_STATS = ("admission/", "dupefilter/")


class RunningCrawl:
    def __init__(self, crawler: Any, control: FrontierControl, history: int = 720) -> None:
        self.crawler = crawler
        self.control = control  # the frontier's, handed over by ``frontier_opened``
        self.ledger = HostLedger()
        self.samples: deque[dict[str, Any]] = deque(maxlen=history)
        self.recent_errors: deque[dict[str, Any]] = deque(maxlen=100)
        self.closing = False
        self._rate: deque[tuple[float, int]] = deque(maxlen=11)  # (time, pages): 10 s

    # -- what the crawl tells ----------------------------------------------------------------
    def released(self, key: str, status: int | None, started: float, delay: float) -> None:
        self.ledger.released(key, status, started, delay)
        if status is None or status >= 400:
            self.recent_errors.append({"time": round(time.time(), 3), "key": key,
                                       "status": status,
                                       "kind": "network" if status is None else
                                       f"http_{status // 100}xx"})

    def spider_error(self, failure: Any, response: Any) -> None:
        self.recent_errors.append({"time": round(time.time(), 3), "url": response.url,
                                   "kind": "callback",
                                   "error": failure.getErrorMessage()[:300]})

    def sample(self) -> None:
        stats = self.crawler.stats.get_stats()
        now = time.time()
        self._rate.append((now, int(stats.get("response_received_count", 0))))
        record = {"time": round(now, 3),
                  "stats": {name: stats[name] for name in SERIES_STATS if name in stats},
                  "frontier": self.control.figures(),
                  "pages_per_second": self.pages_per_second()}
        self.samples.append(record)

    def pages_per_second(self) -> float:
        if len(self._rate) < 2:
            return 0.0
        (t0, p0), (t1, p1) = self._rate[0], self._rate[-1]
        return round((p1 - p0) / (t1 - t0), 3) if t1 > t0 else 0.0

    # -- CrawlPort ---------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        stats = self.crawler.stats.get_stats()
        figures = self.control.figures()
        frontier = self.control.frontier
        state = "closing" if self.closing else (
            "paused" if self.control.paused else "running")
        return {"state": state, "pages": int(stats.get("response_received_count", 0)),
                "items": int(stats.get("item_scraped_count", 0)),
                "pages_per_second": self.pages_per_second(),
                "queued": figures["queued"], "bands": figures["bands"],
                "delayed": figures["delayed"], "active_keys": figures["active_hosts"],
                "parked_keys": len(frontier.parked), "in_flight": figures["in_flight"],
                "failing_keys": int(stats.get("frontier/hosts_failing", 0)),
                "keys_with_rules": len(self.control.controls.keys()),
                "errors": _starting(stats, _ERROR_STATS),
                "dedup": _starting(stats, _DEDUP_STATS),
                "admission": _starting(stats, _ADMISSION_STATS),
                "warc_bytes": int(stats.get("warc/bytes", 0)),
                "control": _starting(stats, ("control/",)),
                "focus": _starting(stats, ("focus/",))}

    async def keys(self, limit: int, slowest: bool, contains: str) -> list[dict[str, Any]]:
        """Keys, busiest first (or slowest: by this worker's latest delay); on a shared crawl
        the busiest by the requests of every worker (``requests``), this worker's own figures
        beside them where it fetched the key."""
        counts = self.control.counts
        # (the busiest of many keys: picked, not sorted, on the reactor)
        rows = self.ledger.rows(None if contains or slowest or counts else limit)
        if counts is not None and not slowest:
            here = {row["key"]: row for row in rows}
            top = await threads.deferToThread(counts.top, limit if not contains else 10_000)
            rows = [{**here.get(key, {}), "key": key, "requests": n,
                     "requests_here": here.get(key, {}).get("requests", 0)}
                    for key, n in top]
        if contains:
            rows = [row for row in rows if contains in row["key"]]
        if slowest:
            rows.sort(key=lambda row: -(row["delay"] or 0.0))
        controls = self.control.controls
        ruled = controls.keys()
        for row in rows[:limit]:
            if row["key"] in ruled:
                row.update(controls.rules(row["key"]))
        return rows[:limit]

    async def key(self, key: str) -> dict[str, Any] | None:
        frontier = self.control.frontier
        if frontier.inspect_blocks:
            state = await threads.deferToThread(frontier.inspect_key, key, time.time())
        else:
            state = frontier.inspect_key(key, time.time())
        if state is None and key not in self.ledger.keys and \
                key not in self.control.controls.keys():
            return None
        return self.control.key_report(key, state)

    def errors(self) -> list[dict[str, Any]]:
        return list(self.recent_errors)[::-1]

    def series(self) -> list[dict[str, Any]]:
        return list(self.samples)

    def act(self, action: dict[str, Any]) -> None:
        self.control.act(action, "control API")

    def seeds(self, urls: list[str]) -> dict[str, Any]:
        spider = self.crawler.spider
        queued = 0
        for url in urls:
            request = Request(url, callback=getattr(spider, "parse", None))
            if self.control.seed(request):
                queued += 1
        self.control.wake()
        # (not an action kept: the frontier keeps the seeds it queued)
        logger.info("Control (control API): seeds, %d URLs (%d queued)", len(urls), queued)
        self.crawler.stats.inc_value("control/actions/seeds")
        return {"queued": queued, "known": len(urls) - queued}

    def stop(self) -> None:
        logger.info("Control (control API): stop; the crawl closes (finish reason "
                    "operator_stop)")
        self.crawler.stats.inc_value("control/actions/stop")
        self.closing = True
        engine = self.crawler.engine
        # (after this answer went out)
        call_later(0, lambda: deferred_from_coro(
            engine.close_spider_async(reason="operator_stop")))

    def checkpoint(self) -> str | None:
        if not self.control.frontier.durable or self.control.journal is None:
            return "the crawl has no JOBDIR: nothing to checkpoint"
        self.control.checkpoint()
        logger.info("Control (control API): checkpoint; the frontier committed and the seen "
                    "set snapshotted")
        self.crawler.stats.inc_value("control/actions/checkpoint")
        return None


def _starting(stats: dict[str, Any], prefixes: tuple[str, ...]) -> dict[str, Any]:
    return {k: v for k, v in stats.items() if k.startswith(prefixes) and
            isinstance(v, (int, float))}
