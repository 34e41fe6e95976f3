"""``CrawlTimeSeries`` extension: the crawl's figures as JSON lines while it runs.

Every ``CRAWLER_EXT_REPORT_INTERVAL`` seconds one ``sample`` line (the numeric stats, the
frontier's sizes by band, active hosts, requests in flight, and the busiest politeness keys
with their delay, pages, backoffs and smallest gap between two requests), framed by a
``start`` line (the crawl's settings) and a ``final`` line (the full stats dump, every key's
politeness figures).  The file is ``CRAWLER_EXT_REPORT_FILE``, by default
``JOBDIR/crawl_report.jsonl`` when ``JOBDIR`` is set (a resumed crawl appends a new run);
``python -m crawler_ext.report JOBDIR -o report.html`` draws it.

Writing is one short append per interval (a few KB), flushed, on the reactor thread.
"""

from __future__ import annotations

import heapq
import json
import logging
import os
import time
from datetime import datetime
from typing import IO, Any, Callable

from scrapy import signals
from scrapy.exceptions import NotConfigured
from scrapy.utils.job import job_dir

from crawler_ext import config
from crawler_ext.frontier.politeness import BACKOFF_STATUSES
from crawler_ext.signals import frontier_opened, host_released

__all__ = ["CrawlTimeSeries", "HostLedger", "REPORT_NAME", "report_path"]

logger = logging.getLogger(__name__)

REPORT_NAME = "crawl_report.jsonl"
#: politeness keys in a sample (the busiest); the final line holds all tracked keys
TOP_HOSTS = 20
#: stats whose names carry a host: left out of samples (the final dump has them)
_PER_HOST_STATS = ("dedup/host_rate/",)
#: settings recorded in the start line besides every CRAWLER_EXT_* one
_SCRAPY_SETTINGS = ("BOT_NAME", "JOBDIR", "CONCURRENT_REQUESTS",
                    "CONCURRENT_REQUESTS_PER_DOMAIN", "ROBOTSTXT_OBEY", "USER_AGENT")


def report_path(settings: Any) -> str | None:
    """Where the time series goes: the setting, else JOBDIR's file, else nowhere."""
    path = config.get(settings, "CRAWLER_EXT_REPORT_FILE")
    if path:
        return path
    jobdir = job_dir(settings)
    return os.path.join(jobdir, REPORT_NAME) if jobdir else None


class HostLedger:
    """Per politeness key: requests, responses, backoffs, the latest and largest delay, and
    the smallest gap between two successive requests beside the delay the first one's
    response asked for (the gap's slack; negative would be a politeness violation).

    Bounded to ``max_keys`` keys; further keys are counted, not tracked."""

    __slots__ = ("keys", "max_keys", "untracked")

    def __init__(self, max_keys: int = 100_000) -> None:
        # key -> [requests, responses, backoffs, delay, max_delay, last_started, min_gap,
        #         min_slack]
        self.keys: dict[str, list[Any]] = {}
        self.max_keys = max_keys
        self.untracked = 0

    def released(self, key: str, status: int | None, started: float, delay: float) -> None:
        row = self.keys.get(key)
        if row is None:
            if len(self.keys) >= self.max_keys:
                self.untracked += 1
                return
            row = self.keys[key] = [0, 0, 0, 0.0, 0.0, None, None, None]
        row[0] += 1
        if status is not None:
            row[1] += 1
        if status is None or status in BACKOFF_STATUSES:
            row[2] += 1
        last_started, required = row[5], row[3]
        if last_started is not None:
            gap = started - last_started
            if row[6] is None or gap < row[6]:
                row[6] = gap
            slack = gap - required
            if row[7] is None or slack < row[7]:
                row[7] = slack
        if last_started is None or started >= last_started:
            row[5] = started
        row[3] = delay
        row[4] = max(row[4], delay)

    def rows(self, limit: int | None = None) -> list[dict[str, Any]]:
        """The keys as dicts, busiest (most requests) first; ``limit`` of them."""
        items = self.keys.items()
        chosen = (heapq.nlargest(limit, items, key=lambda kv: kv[1][0]) if limit is not None
                  else sorted(items, key=lambda kv: -kv[1][0]))
        return [{"key": key, "requests": r[0], "responses": r[1], "backoffs": r[2],
                 "delay": round(r[3], 3), "max_delay": round(r[4], 3),
                 "min_gap": None if r[6] is None else round(r[6], 3),
                 "min_slack": None if r[7] is None else round(r[7], 3)}
                for key, r in chosen]


class CrawlTimeSeries:
    def __init__(self, crawler: Any, path: str, interval: float) -> None:
        self.crawler = crawler
        self.path = path
        self.interval = interval
        self.ledger = HostLedger()
        self._progress: Callable[[], dict[str, Any]] | None = None
        self._file: IO[str] | None = None
        self._loop: Any = None

    @classmethod
    def from_crawler(cls, crawler: Any) -> CrawlTimeSeries:
        interval = config.get(crawler.settings, "CRAWLER_EXT_REPORT_INTERVAL")
        path = report_path(crawler.settings)
        if not path or not interval:
            raise NotConfigured  # off without JOBDIR or CRAWLER_EXT_REPORT_FILE (no log line)
        ext = cls(crawler, path, interval)
        sig = crawler.signals
        sig.connect(ext.spider_opened, signal=signals.spider_opened)
        sig.connect(ext.spider_closed, signal=signals.spider_closed)
        sig.connect(ext.frontier_opened, signal=frontier_opened)
        sig.connect(ext.host_released, signal=host_released)
        return ext

    # -- signals ---------------------------------------------------------------------------
    def frontier_opened(self, progress: Callable[[], dict[str, Any]], **_: Any) -> None:
        self._progress = progress

    def host_released(self, key: str, status: int | None, started: float, delay: float,
                      **_: Any) -> None:
        self.ledger.released(key, status, started, delay)

    def spider_opened(self, spider: Any) -> None:
        from twisted.internet import task

        try:
            os.makedirs(os.path.dirname(os.path.abspath(self.path)), exist_ok=True)
            self._file = open(self.path, "a", encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            logger.warning("Crawl report: cannot open %s (%s); no report for this run",
                           self.path, exc)
            return
        settings = self.crawler.settings
        recorded = {name: settings.get(name) for name in _SCRAPY_SETTINGS}
        recorded.update({name: config.get(settings, name) for name in config.SETTINGS})
        self._write({"type": "start", "time": time.time(), "spider": spider.name,
                     "cwd": os.getcwd(), "settings": recorded})
        logger.info("Crawl report: a sample every %g s to %s (python -m crawler_ext.report)",
                    self.interval, self.path)
        self._loop = task.LoopingCall(self.sample)
        self._loop.start(self.interval, now=False)

    def spider_closed(self, spider: Any, reason: str) -> None:
        if self._loop is not None and self._loop.running:
            self._loop.stop()
        if self._file is None:
            return
        self.sample()
        self._write({"type": "final", "time": time.time(), "reason": reason,
                     "stats": _plain(self.crawler.stats.get_stats()),
                     "hosts": self.ledger.rows(), "hosts_untracked": self.ledger.untracked})
        if self._file is not None:
            try:
                self._file.close()
            except OSError as exc:  # a full disk: the series ends where it could
                logger.warning("Crawl report: cannot finish %s (%s)", self.path, exc)
            self._file = None

    # -- samples ---------------------------------------------------------------------------
    def sample(self) -> None:
        stats = {k: v for k, v in self.crawler.stats.get_stats().items()
                 if isinstance(v, (int, float)) and not k.startswith(_PER_HOST_STATS)}
        record: dict[str, Any] = {"type": "sample", "time": time.time(), "stats": stats,
                                  "hosts": self.ledger.rows(TOP_HOSTS)}
        if self._progress is not None:
            record["frontier"] = self._progress()
        self._write(record)

    def _write(self, record: dict[str, Any]) -> None:
        if self._file is None:
            return
        try:
            self._file.write(json.dumps(record, default=str, separators=(",", ":")) + "\n")
            self._file.flush()
        except OSError as exc:  # a full disk: the report stops, the crawl goes on
            logger.warning("Crawl report: cannot write %s (%s); no more samples", self.path, exc)
            file, self._file = self._file, None
            try:
                file.close()
            except OSError:
                pass


def _plain(stats: dict[str, Any]) -> dict[str, Any]:
    return {k: (v.isoformat() if isinstance(v, datetime) else v) for k, v in stats.items()}
