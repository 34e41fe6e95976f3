"""``FrontierScheduler``: the Mercator frontier as a Scrapy scheduler.

    SCHEDULER = "crawler_ext.frontier.FrontierScheduler"

It hands a politeness key's next request to the engine only when that key may be contacted,
learns from signals when each request leaves the downloader (so in-flight counts and next
allowed times are exact), and wakes the engine when the next key becomes ready instead of
waiting for the engine's 5-second heartbeat.  The parts live beside it: the way in
(``intake``), the way out (``dispatch``), requests in flight (``inflight``), completion and
commits (``durability``), the figures (``progress``), a shared frontier's callbacks
(``hooks``) and the engine's internals (``engine``).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.utils.asyncio import call_later, create_looping_call
from scrapy.utils.reactor import is_reactor_installed

from crawler_ext import config
from crawler_ext.config.scrapyside import use_bundled_public_suffix_list
from crawler_ext.frontier.adapter.checks import check_settings
from crawler_ext.frontier.adapter.durability import STORAGE_ERRORS
from crawler_ext.frontier.adapter.factory import scheduler_build
from crawler_ext.frontier.adapter.hold import DispatchHold
from crawler_ext.frontier.adapter.robotsgate import allow_all
from crawler_ext.frontier.adapter.roles import Policies, SchedulerOptions, Stores
from crawler_ext.frontier.adapter.wiring import Parts
from crawler_ext.frontier.contract import FrontierBackend, JournaledFrontier, SharedFrontier
from crawler_ext.frontier.keys import politeness_key
from crawler_ext.frontier.strategy import CrawlingStrategy
from crawler_ext.hosts.dns import install_resolver
from crawler_ext.meta import ROBOTS_META
from crawler_ext.seen import SeenSet, as_seen_set
from crawler_ext.signals import (
    content_checked,
    content_duplicate,
    frontier_opened,
    storage_failed,
)

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.spiders import Spider
    from typing_extensions import Self

__all__ = ["FrontierScheduler", "politeness_key"]


class FrontierScheduler(BaseScheduler):
    """Scrapy's scheduler interface over the parts :class:`~crawler_ext.frontier.adapter.
    wiring.Parts` builds: ``from_crawler`` reads the settings (the factory), ``__init__``
    takes plain objects, so a test builds it as ``FrontierScheduler(frontier, seen set,
    strategy)``."""

    def __init__(
        self,
        frontier: FrontierBackend,
        dupefilter: Any,
        strategy: CrawlingStrategy,
        options: SchedulerOptions | None = None,
        policies: Policies | None = None,
        *,
        journal: JournaledFrontier | None = None,
        shared: SharedFrontier | None = None,
        crawler: Crawler | None = None,
    ) -> None:
        # the seen set, whatever DUPEFILTER_CLASS is
        seen: SeenSet = as_seen_set(dupefilter)
        self.parts = parts = Parts(Stores(frontier, seen, journal, shared), strategy,
                                   policies or Policies(), options or SchedulerOptions(),
                                   crawler)
        self.frontier = frontier
        self.shared = shared  # the frontier, when shared with other workers (None: local)
        self.df = seen
        self.strategy = strategy
        self.admission = parts.gates.admission
        self.crawler = crawler
        self.stats = parts.port.stats
        self.options = parts.options
        self._loops: list[Any] = []
        unscored = parts.options.unscored_max
        self._hold = DispatchHold(unscored) if unscored is not None else None

    @property
    def spider(self) -> Spider | None:
        """The crawl's spider (its callbacks are what stored requests name)."""
        return self.parts.requests.spider

    @spider.setter
    def spider(self, spider: Spider | None) -> None:
        self.parts.requests.spider = spider

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config.validate_all(crawler.settings)  # also when not started by `scrapy crawl`
        use_bundled_public_suffix_list()
        build = scheduler_build(crawler)
        scheduler = cls(build.frontier, build.seen, build.strategy, build.options,
                        build.policies, journal=build.journal, shared=build.shared,
                        crawler=crawler)
        check_settings(crawler.settings, build.policies.robots is not None,
                       build.frontier.max_in_flight)
        return scheduler

    # -- lifecycle -------------------------------------------------------------------------
    def open(self, spider: Spider) -> Any:
        parts = self.parts
        self.spider = spider
        parts.engine.check()
        result = parts.durability.open(parts.counts.inc)
        parts.learning.load()
        parts.control_book.open(self.options.slot_delays)
        if is_reactor_installed():  # (not in Scrapy's reactorless mode)
            install_resolver(self.crawler, self.stats)  # the add-on's resolver, if it set one
        if self.crawler is not None:
            sig = self.crawler.signals
            sig.connect(parts.learning.content_duplicate, signal=content_duplicate)
            sig.connect(parts.learning.content_checked, signal=content_checked)
            # the receivers are this module's methods: Scrapy's signals need plain Python
            # functions, and the parts they call may be compiled (setup.py)
            sig.connect(self._storage_failed, signal=storage_failed)
            sig.connect(self._response_downloaded, signal=signals.response_downloaded)
            sig.connect(self._request_left_downloader, signal=signals.request_left_downloader)
            if self.shared is not None and self.shared.wait_for_seeds:
                sig.connect(parts.hooks.keep_waiting, signal=signals.spider_idle)
            robots = parts.robots
            sig.send_catch_log(frontier_opened, progress=parts.figures.now,
                               refuse_known=self.refuse_known,
                               refuse_known_link=self.refuse_known_link,
                               schedule_refresh=self.schedule_refresh,
                               lease_key=parts.inflight.key_of,
                               robots_allows=robots.allows if robots else allow_all,
                               page_done=parts.durability.page_done,
                               report_decisions=self.report_decisions,
                               canonical=self.admission.canonical,
                               control=parts.control_book)
        options = self.options
        self._start_loop(parts.durability.flush, options.flush_interval)
        parts.lag.start(call_later)
        if parts.rules_log is not None:
            parts.rules_log.start(parts.learning.from_others)
        if options.log_interval:
            self._start_loop(parts.figures.log, options.log_interval, now=False)
        if options.snapshot_interval:
            self._start_loop(parts.durability.snapshot, options.snapshot_interval, now=False)
        return result

    def close(self, reason: str) -> Any:
        parts = self.parts
        for loop in self._loops:
            if loop.running:
                loop.stop()
        parts.lag.stop()
        if parts.rules_log is not None:
            parts.rules_log.stop()
        parts.control_book.close()
        parts.engine.stop()
        parts.durability.close(reason)
        parts.flush_counts()
        if self.stats is not None:
            parts.figures.final()
        return self.df.close("disk_full" if parts.durability.frozen else reason)

    def _storage_failed(self, where: str = "", **_: Any) -> None:
        self.parts.durability.storage_failed(where)

    def _response_downloaded(self, response: Any, request: Request, **_: Any) -> None:
        self.parts.inflight.downloaded(response, request)
        if self._hold is not None:  # (a focused crawl's page, to be scored)
            self.parts.engine.arrived(request)
        if response.status >= 400 and not request.meta.get(ROBOTS_META):
            self.parts.learning.answered(response.url, response.status)  # trap evidence

    def _request_left_downloader(self, request: Request, **_: Any) -> None:
        self.parts.inflight.left(request)

    def _start_loop(self, func: Any, interval: float, now: bool = True) -> None:
        loop = create_looping_call(func)
        loop.start(interval, now=now)
        self._loops.append(loop)

    # -- the scheduler interface -------------------------------------------------------------
    def has_pending_requests(self) -> bool:
        return self.frontier.pending() > self.frontier.parked_pending(time.time()) or bool(
            self.parts.intake.unconfirmed or self.parts.keys.waiting())

    def __len__(self) -> int:
        return self.frontier.pending()

    def enqueue_request(self, request: Request) -> bool:
        return self.parts.intake.enqueue(request)

    def schedule_refresh(self, url: str, due: float, history: dict | None = None) -> bool:
        """Queue a fetch of ``url`` again at unix time ``due`` (the recrawl middleware): a
        delayed entry in its host's queue, past the seen set, paced like any fetch;
        ``history`` (plain data) travels with it, for whichever worker fetches it."""
        if self.parts.durability.frozen:
            return False
        self.parts.intake.refresh(url, due, history)
        return True

    def refuse_known(self, request: Request) -> bool:
        return self.parts.intake.refuse_known(request)

    def refuse_known_link(self, url: str, page: str, depth: int, priority: int) -> bool:
        return self.parts.intake.refuse_known_link(url, page, depth, priority)

    def report_decisions(self, listener: Callable[..., None]) -> None:
        """Tell ``listener`` of each URL refused and key parked from now on (``kind``,
        ``subject``, ``reason``, ``until``): the event stream."""
        self.parts.port.decisions.listen(listener)

    def next_request(self) -> Request | None:
        now = time.time()
        parts = self.parts
        if parts.durability.frozen:  # a disk filled up: the crawl is closing, nothing goes out
            return None
        if self._hold is not None:  # a focused crawl: the pages fetched are scored first
            verdict = self._hold.verdict(parts.engine.unscored(), now)
            if verdict != "go" and self.stats is not None:
                self.stats.inc_value("focus/dispatch_held" if verdict == "hold" else
                                     "focus/dispatch_hold_expired")
            if verdict == "hold":
                return None
        try:
            request = parts.dispatch.next(now)
        except STORAGE_ERRORS as exc:
            parts.durability.storage_error(exc)
            return None
        if request is None:
            parts.engine.wake_at(self.frontier.next_ready_time(), now)
        return request
