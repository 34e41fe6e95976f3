"""Spidermon monitors of a crawl's health, from the pack's own stats.

``SPIDERMON_ENABLED = True`` and ``SPIDERMON_SPIDER_CLOSE_MONITORS = {
"crawler_ext.monitoring.monitors.CrawlHealthSuite": 100}`` (``pip install
crawler_ext[monitoring]``) run them when the spider closes; a failed monitor shows in the log
and in ``spidermon/...`` stats, and Spidermon's actions (e-mail, Slack, ...) can report it.

* no politeness violation seen by the frontier (``frontier/politeness_violations``: a request
  handed out before its host's next allowed time);
* robots.txt failures (5xx, unreachable, given up) at most
  ``CRAWLER_EXT_MONITOR_MAX_ROBOTS_FAILURES`` of the robots.txt fetches;
* content duplicates (exact and near) at most ``CRAWLER_EXT_MONITOR_MAX_DUPLICATE_RATIO`` of
  the pages judged;
* trap rejections at most ``CRAWLER_EXT_MONITOR_MAX_TRAP_RATIO`` of the URLs admitted;
* backoffs (429, 503, errors) at most ``CRAWLER_EXT_MONITOR_MAX_BACKOFF_RATIO`` of the
  requests dispatched.
"""

from __future__ import annotations

from typing import Any

from spidermon import MonitorSuite, monitors
from spidermon.contrib.scrapy.monitors import BaseScrapyMonitor

from crawler_ext import config

__all__ = ["CrawlHealth", "CrawlHealthSuite", "TRAP_RULES"]

TRAP_RULES = ("too_long", "path_depth", "repeated_segments", "pattern_cap", "pattern_chain",
              "id_chain")


def _sum(stats: dict[str, Any], prefix: str, names: tuple[str, ...] | None = None) -> int:
    if names is not None:
        return sum(int(stats.get(prefix + name, 0)) for name in names)
    return sum(int(v) for k, v in stats.items() if k.startswith(prefix))


def _ratio(part: float, whole: float) -> float:
    return part / whole if whole else 0.0


@monitors.name("crawler_ext crawl health")
class CrawlHealth(BaseScrapyMonitor):
    def _limit(self, name: str) -> float:
        return config.get(self.crawler.settings, name)

    @monitors.name("no politeness violation seen by the frontier")
    def test_politeness(self) -> None:
        seen = int(self.stats.get("frontier/politeness_violations", 0))
        self.assertEqual(seen, 0, f"{seen} requests went out before their host's next "
                                  f"allowed time")

    @monitors.name("robots.txt failures within bounds")
    def test_robots_failures(self) -> None:
        stats = self.stats
        fetched = _sum(stats, "robots/status/")
        failed = int(stats.get("robots/status/unreachable", 0)) + sum(
            int(v) for k, v in stats.items()
            if k.startswith("robots/status/5") and k[14:].isdigit())
        ratio = _ratio(failed, fetched)
        limit = self._limit("CRAWLER_EXT_MONITOR_MAX_ROBOTS_FAILURES")
        self.assertLessEqual(ratio, limit, f"{failed} of {fetched} robots.txt fetches failed "
                                           f"({ratio:.0%} > {limit:.0%})")

    @monitors.name("duplicate content within bounds")
    def test_duplicates(self) -> None:
        dup = int(self.stats.get("dedup/exact", 0)) + int(self.stats.get("dedup/near", 0))
        judged = dup + int(self.stats.get("dedup/unique", 0))
        ratio = _ratio(dup, judged)
        limit = self._limit("CRAWLER_EXT_MONITOR_MAX_DUPLICATE_RATIO")
        self.assertLessEqual(ratio, limit, f"{dup} of {judged} pages were duplicates "
                                           f"({ratio:.0%} > {limit:.0%})")

    @monitors.name("trap rejections within bounds")
    def test_traps(self) -> None:
        rejected = _sum(self.stats, "admission/rejected/", TRAP_RULES)
        ratio = _ratio(rejected, rejected + int(self.stats.get("frontier/enqueued", 0)))
        limit = self._limit("CRAWLER_EXT_MONITOR_MAX_TRAP_RATIO")
        self.assertLessEqual(ratio, limit, f"{rejected} URLs refused as traps ({ratio:.0%} > "
                                           f"{limit:.0%} of the URLs met)")

    @monitors.name("backoffs within bounds")
    def test_backoffs(self) -> None:
        backoffs = int(self.stats.get("frontier/backoffs", 0))
        ratio = _ratio(backoffs, int(self.stats.get("frontier/dispatched", 0)))
        limit = self._limit("CRAWLER_EXT_MONITOR_MAX_BACKOFF_RATIO")
        self.assertLessEqual(ratio, limit, f"{backoffs} backoffs (429, 503, errors): "
                                           f"{ratio:.0%} > {limit:.0%} of the requests")


class CrawlHealthSuite(MonitorSuite):
    monitors = [CrawlHealth]
