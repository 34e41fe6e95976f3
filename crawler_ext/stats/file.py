"""``StatsFile`` extension: write the crawl's final stats as JSON to ``CRAWLER_EXT_STATS_FILE``.

Benchmarks, tests and batch jobs read a crawl's figures from there instead of scraping logs.
It is written when the engine has stopped: after every ``spider_closed`` receiver, those that
finish their work asynchronously included (the event stream's last deliveries).  While the
engine runs, ``<path>.running`` exists (written once the engine runs, removed with the stats
written): a process that starts crawls, as ``python -m crawler_ext.workers`` does, knows
from it that a crawl can take a shutdown signal and end with a finish reason.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path
from typing import Any

from scrapy import signals
from scrapy.exceptions import NotConfigured

from crawler_ext import config

__all__ = ["StatsFile"]


class StatsFile:
    def __init__(self, path: str, stats: Any) -> None:
        self.path = Path(path)
        self.stats = stats
        self.reason: str | None = None

    @classmethod
    def from_crawler(cls, crawler: Any) -> StatsFile:
        path = config.get(crawler.settings, "CRAWLER_EXT_STATS_FILE")
        if not path:
            raise NotConfigured  # off unless CRAWLER_EXT_STATS_FILE is set (no log line)
        ext = cls(path, crawler.stats)
        crawler.signals.connect(ext.spider_closed, signal=signals.spider_closed)
        crawler.signals.connect(ext.engine_stopped, signal=signals.engine_stopped)
        crawler.signals.connect(ext.engine_started, signal=signals.engine_started)
        return ext

    @property
    def running_marker(self) -> Path:
        return self.path.with_name(self.path.name + ".running")

    def engine_started(self) -> None:
        from scrapy.utils.asyncio import call_later

        call_later(0, self._mark_running)  # (the engine is running from its next turn)

    def _mark_running(self) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.running_marker.touch()

    def spider_closed(self, spider: Any, reason: str) -> None:
        self.reason = reason

    def engine_stopped(self) -> None:
        if self.reason is None:  # the spider never opened
            return
        data = {k: (v.isoformat() if isinstance(v, datetime) else v)
                for k, v in self.stats.get_stats().items()}
        data["finish_reason"] = self.reason
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.path.write_text(json.dumps(data, indent=1, sort_keys=True, default=str))
        self.running_marker.unlink(missing_ok=True)
