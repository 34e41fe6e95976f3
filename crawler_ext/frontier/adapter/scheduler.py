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
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.utils.asyncio import call_later, create_looping_call
from scrapy.utils.job import job_dir
from scrapy.utils.reactor import is_reactor_installed

from crawler_ext import config
from crawler_ext.admission import Admission, RuleLearning
from crawler_ext.frontier.adapter.checks import check_settings
from crawler_ext.frontier.adapter.controls import ControlBook
from crawler_ext.frontier.adapter.dispatch import Dispatcher
from crawler_ext.frontier.adapter.durability import STORAGE_ERRORS, Durability
from crawler_ext.frontier.adapter.engine import EngineHandle
from crawler_ext.frontier.adapter.events import FrontierEvents
from crawler_ext.frontier.adapter.factory import scheduler_parts
from crawler_ext.frontier.adapter.hooks import SharedHooks
from crawler_ext.frontier.adapter.inflight import InFlight
from crawler_ext.frontier.adapter.intake import Intake
from crawler_ext.frontier.adapter.keys import PolitenessKeys
from crawler_ext.frontier.adapter.progress import Progress
from crawler_ext.frontier.adapter.requests import StoredRequests
from crawler_ext.frontier.adapter.robotsgate import ROBOTS_META, RobotsGate, allow_all
from crawler_ext.frontier.contract import (FrontierBackend, JournaledFrontier, SharedFrontier,
                                           SharedLogPort)
from crawler_ext.frontier.controls import KeyControls
from crawler_ext.frontier.keys import politeness_key
from crawler_ext.frontier.lag import LagProbe, ServerLatency
from crawler_ext.frontier.strategy import CrawlingStrategy
from crawler_ext.hosts.blocklist import Blocklist
from crawler_ext.hosts.dns import install_resolver
from crawler_ext.hosts.robots import RobotsCache
from crawler_ext.scrapyconf import use_bundled_public_suffix_list
from crawler_ext.seen import SeenSet, as_seen_set
from crawler_ext.signals import (
    content_checked,
    content_duplicate,
    frontier_opened,
    storage_failed,
)
from crawler_ext.stats import Counts

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.spiders import Spider
    from typing_extensions import Self

__all__ = ["FrontierScheduler", "politeness_key"]


class FrontierScheduler(BaseScheduler):
    def __init__(
        self,
        frontier: FrontierBackend,
        dupefilter: Any,
        strategy: CrawlingStrategy,
        journal: JournaledFrontier | None = None,
        shared: SharedFrontier | None = None,
        admission: Admission | None = None,
        stats: Any = None,
        crawler: Crawler | None = None,
        flush_interval: float = 0.2,
        log_interval: float = 60.0,
        snapshot_interval: float = 60.0,
        rules_path: Path | None = None,
        learn_min_evidence: int = 3,
        robots: RobotsCache | None = None,
        blocklist: Blocklist | None = None,
        key_by_ip: bool = False,
        dns_prefetch: bool = False,
    ) -> None:
        self.frontier = frontier
        self.shared = shared  # the frontier, when shared with other workers (None: local)
        self.df: SeenSet = as_seen_set(dupefilter)  # the seen set, whatever DUPEFILTER_CLASS is
        self.strategy = strategy
        self.admission = admission or Admission()
        self.stats = stats
        self._counts = Counts()
        self.crawler = crawler
        self.flush_interval = flush_interval
        self.snapshot_interval = snapshot_interval
        # the parts, in dependency order; what flows back up goes through the events port
        self.engine = EngineHandle(crawler)  # waking it, what it still processes, signals
        self.events = FrontierEvents(self.engine)
        self._rules_log: SharedLogPort | None = shared.shared_log(
            "rules", self.events.rules_from_others, self._stat) if shared is not None else None
        # spellings with a learned parameter get another canonical form: forget known ones
        self.learning = RuleLearning(self.admission, learn_min_evidence, rules_path,
                                     on_learned=self.events.rules_learned, inc=self._inc)
        self.learning.shared = self._rules_log
        self.keys = PolitenessKeys(key_by_ip, dns_prefetch, self.events.addresses_resolved,
                                   self._inc)
        # robots.txt as the prerequisite of an origin's URLs (None: robots.txt not obeyed)
        self.robots: RobotsGate | None = RobotsGate(
            robots, frontier, self.keys.known, self._inc, self.events.sitemaps_found) \
            if robots is not None else None
        self.blocklist = blocklist or Blocklist()
        self.requests = StoredRequests(frontier.durable, self._inc)  # entries' requests
        # Scrapy's trackref registers the requests rebuilt from the frontier only when its
        # memory debugger reports them (MEMDEBUG_ENABLED): the registration costs a weak
        # reference per request in flight, which paces the full garbage collections
        settings = getattr(crawler, "settings", None)
        self.requests.tracked = settings is not None and settings.getbool("MEMDEBUG_ENABLED")
        # the operator's rules per key (the control API), checked by the gate
        self.controls = KeyControls(frontier.key_floors)
        self.intake = Intake(frontier, self.df, strategy, self.admission, self.learning,
                             self.keys, self.robots, self.blocklist, self.requests,
                             self._counts.inc, self.engine.wake_at, time.time,
                             _request_fingerprinter(crawler), self.controls)
        self.events.bind(self.intake, self.learning)
        self.hooks = SharedHooks(self.intake, self.robots, self.engine, self._inc)
        if shared is not None:  # it calls wake(), seeds(), robots_import()
            shared.attach(self.hooks)
        self.lag = LagProbe(time.time)  # the reactor's own lag, kept out of response times
        self.server_latency = ServerLatency(self.lag)
        self.inflight = InFlight(frontier, self.robots, self.server_latency, time.time,
                                 self._inc, stats, rearm=self._rearm,
                                 released=self.events.key_released if crawler is not None
                                 else None)
        self.dispatch = Dispatcher(frontier, self.robots, self.blocklist, self.requests,
                                   self.admission, self.inflight, strategy,
                                   self._inc, stats, self.controls)
        self.control_book = ControlBook(self.controls, frontier, shared, self.engine,
                                        self.robots, self.requests, self._inc,
                                        job_dir(settings) if settings is not None else None)
        self.durability = Durability(frontier, journal, self.df, self.inflight, self.intake,
                                     self.keys, self.requests, self.blocklist, self.engine, crawler,
                                     self._flush_counts)
        self.figures = Progress(frontier, shared, self.inflight, stats, log_interval,
                                self._flush_counts)
        self._loops: list[Any] = []

    @property
    def spider(self) -> Spider | None:
        """The crawl's spider (its callbacks are what stored requests name)."""
        return self.requests.spider

    @spider.setter
    def spider(self, spider: Spider | None) -> None:
        self.requests.spider = spider

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        config.validate_all(crawler.settings)  # also when not started by `scrapy crawl`
        use_bundled_public_suffix_list()
        return cls(**scheduler_parts(crawler))

    # -- lifecycle -------------------------------------------------------------------------
    def open(self, spider: Spider) -> Any:
        self.spider = spider
        self.engine.check()
        result = self.durability.open(self._inc)
        self.learning.load()
        self.control_book.open(getattr(self.crawler, "settings", None))
        if is_reactor_installed():  # (not in Scrapy's reactorless mode)
            install_resolver(self.crawler, self.stats)  # the add-on's resolver, if it set one
        if self.crawler is not None:
            check_settings(self.crawler.settings, self.robots is not None,
                           self.frontier.max_in_flight)
            sig = self.crawler.signals
            sig.connect(self.learning.content_duplicate, signal=content_duplicate)
            sig.connect(self.learning.content_checked, signal=content_checked)
            # the receivers are this module's methods: Scrapy's signals need plain Python
            # functions, and the parts they call may be compiled (setup.py)
            sig.connect(self._storage_failed, signal=storage_failed)
            sig.connect(self._response_downloaded, signal=signals.response_downloaded)
            sig.connect(self._request_left_downloader, signal=signals.request_left_downloader)
            if self.shared is not None and self.shared.wait_for_seeds:
                sig.connect(self.hooks.keep_waiting, signal=signals.spider_idle)
            sig.send_catch_log(frontier_opened, progress=self.figures.now,
                               refuse_known=self.refuse_known,
                               schedule_refresh=self.schedule_refresh,
                               lease_key=self.inflight.key_of,
                               robots_allows=self.robots.allows if self.robots else allow_all,
                               page_done=self.durability.page_done,
                               report_decisions=self.report_decisions)
        self._start_loop(self.durability.flush, self.flush_interval)
        self.lag.start(call_later)
        if self._rules_log is not None:
            self._rules_log.start()
        if self.figures.interval:
            self._start_loop(self.figures.log, self.figures.interval, now=False)
        if self.snapshot_interval:
            self._start_loop(self.durability.snapshot, self.snapshot_interval, now=False)
        return result

    def close(self, reason: str) -> Any:
        for loop in self._loops:
            if loop.running:
                loop.stop()
        self.lag.stop()
        if self._rules_log is not None:
            self._rules_log.stop()
        self.control_book.close()
        self.engine.stop()
        self.durability.close(reason)
        self._flush_counts()
        if self.stats is not None:
            self.figures.final()
        return self.df.close("disk_full" if self.durability.frozen else reason)

    def _storage_failed(self, where: str = "", **_: Any) -> None:
        self.durability.storage_failed(where)

    def _response_downloaded(self, response: Any, request: Request, **_: Any) -> None:
        self.inflight.downloaded(response, request)
        if response.status >= 400 and not request.meta.get(ROBOTS_META):
            self.learning.answered(response.url, response.status)  # trap evidence

    def _request_left_downloader(self, request: Request, **_: Any) -> None:
        self.inflight.left(request)

    def _start_loop(self, func: Any, interval: float, now: bool = True) -> None:
        loop = create_looping_call(func)
        loop.start(interval, now=now)
        self._loops.append(loop)

    # -- the scheduler interface -------------------------------------------------------------
    def has_pending_requests(self) -> bool:
        return self.frontier.pending() > self.frontier.parked_pending(time.time()) or bool(
            self.intake.unconfirmed or self.keys.waiting())

    def __len__(self) -> int:
        return self.frontier.pending()

    def enqueue_request(self, request: Request) -> bool:
        return self.intake.enqueue(request)

    def schedule_refresh(self, url: str, due: float, history: dict | None = None) -> bool:
        """Queue a fetch of ``url`` again at unix time ``due`` (the recrawl middleware): a
        delayed entry in its host's queue, past the seen set, paced like any fetch;
        ``history`` (plain data) travels with it, for whichever worker fetches it."""
        if self.durability.frozen:
            return False
        self.intake.refresh(url, due, history)
        return True

    def refuse_known(self, request: Request) -> bool:
        return self.intake.refuse_known(request)

    def report_decisions(self, listener: Callable[..., None]) -> None:
        """Tell ``listener`` of each URL refused and key parked from now on (``kind``,
        ``subject``, ``reason``, ``until``): the event stream."""
        self.intake.decided = listener
        self.inflight.decided = listener
        if self.robots is not None:
            self.robots.decided = listener

    def next_request(self) -> Request | None:
        now = time.time()
        if self.durability.frozen:  # a disk filled up: the crawl is closing, nothing goes out
            return None
        try:
            request = self.dispatch.next(now)
        except STORAGE_ERRORS as exc:
            self.durability.storage_error(exc)
            return None
        if request is None:
            self.engine.wake_at(self.frontier.next_ready_time(), now)
        return request

    # -- waking the engine -----------------------------------------------------------------
    def _rearm(self) -> None:
        if self.engine.present():  # (the next ready time is not asked for nothing)
            self.engine.wake_at(self.frontier.next_ready_time(), time.time())

    def _flush_counts(self) -> None:
        """The counts kept since the last flush, into the crawl's stats."""
        self.intake.count_into(self._counts.inc)
        self.dispatch.count_into(self._counts.inc)
        self.inflight.count_into()
        self._counts.flush(self.stats)

    def _inc(self, key: str, count: int = 1) -> None:
        self._counts.inc(key, count)  # added to the stats at the next flush

    def _stat(self, key: str, value: float) -> None:
        self._counts.inc(key, int(value))


def _request_fingerprinter(crawler: Crawler | None) -> Any:
    """The crawl's REQUEST_FINGERPRINTER_CLASS instance (set before the engine builds the
    scheduler; None without a crawler, or one whose settings were not applied)."""
    try:
        return getattr(crawler, "request_fingerprinter", None)
    except RuntimeError:  # (Scrapy's late attribute, read before it was set)
        return None
