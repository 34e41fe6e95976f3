"""``FrontierScheduler``: the Mercator frontier as a Scrapy scheduler.

    SCHEDULER = "crawler_ext.frontier.FrontierScheduler"

It hands a politeness key's next request to the engine only when that key may be contacted,
learns from signals when each request leaves the downloader (so in-flight counts and next
allowed times are exact), and wakes the engine when the next key becomes ready instead of
waiting for the engine's 5-second heartbeat.
"""

from __future__ import annotations


import logging
import sqlite3
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from scrapy import Request, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.utils.job import job_dir
from scrapy.utils.misc import build_from_crawler, load_object
from scrapy.utils.asyncio import call_later, create_looping_call
from scrapy.utils.reactor import is_reactor_installed

from crawler_ext import config
from crawler_ext.admission import Admission, AdmissionRules, RuleLearning
from crawler_ext.seen import SeenSet, as_seen_set
from crawler_ext.hosts.dns import install_resolver
from crawler_ext.hosts.netguard import NetworkGuard, use_bundled_public_suffix_list
from crawler_ext.hosts.blocklist import Blocklist
from crawler_ext.frontier.codec import CHAIN
from crawler_ext.frontier.core import DROP
from crawler_ext.frontier.lag import LagProbe, ServerLatency
from crawler_ext.frontier.contract import FrontierBackend
from crawler_ext.frontier.factory import make_frontier, make_robots
from crawler_ext.frontier.checks import check_settings
from crawler_ext.frontier.engine import EngineHandle
from crawler_ext.frontier.inflight import InFlight
from crawler_ext.frontier.intake import Intake
from crawler_ext.frontier.requests import StoredRequests
from crawler_ext.frontier.keys import PolitenessKeys, politeness_key
from crawler_ext.frontier.robotsgate import RobotsGate
from crawler_ext.frontier.scoring import Scorer, load_host_ranks
from crawler_ext.frontier.storage import Entry
from crawler_ext.hosts.robots import Decision, RobotsCache
from crawler_ext.distributed.sharedlog import SharedLog
from crawler_ext.diskfull import is_disk_full, report_disk_full
from crawler_ext.stats import Counts
from crawler_ext.signals import (
    content_checked,
    content_duplicate,
    frontier_commit,
    frontier_opened,
    host_released,
    sitemaps_found,
    storage_failed,
)

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.spiders import Spider
    from typing_extensions import Self

__all__ = ["FrontierScheduler", "politeness_key"]

logger = logging.getLogger(__name__)


class FrontierScheduler(BaseScheduler):
    def __init__(
        self,
        frontier: FrontierBackend,
        dupefilter: Any,
        scorer: Scorer,
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
        frontier.attach(self)  # a shared frontier calls wake(), seeds(), robots_import()
        self._rules_log: SharedLog | None = frontier.shared_log(
            "rules", lambda items: self.learning.from_others(items),
            lambda k, v: self._inc(k, int(v)))
        self.df: SeenSet = as_seen_set(dupefilter)  # the seen set, whatever DUPEFILTER_CLASS is
        self.scorer = scorer
        self.admission = admission or Admission()
        self.stats = stats
        self._counts = Counts()
        self.crawler = crawler
        self.flush_interval = flush_interval
        self.log_interval = log_interval
        self.snapshot_interval = snapshot_interval
        # spellings with a learned parameter get another canonical form: forget known ones
        self.learning = RuleLearning(self.admission, learn_min_evidence, rules_path,
                                     on_learned=lambda: self.intake.forget_known(),
                                     inc=self._inc)
        self.learning.shared = self._rules_log
        self.keys = PolitenessKeys(key_by_ip, dns_prefetch,
                                   lambda waited: self.intake.resolved(waited), self._inc)
        # robots.txt as the prerequisite of an origin's URLs (None: robots.txt not obeyed)
        self.robots: RobotsGate | None = RobotsGate(
            robots, frontier, self.keys.known, self._inc, self._sitemaps_found) \
            if robots is not None else None
        self.blocklist = blocklist or Blocklist()
        self.requests = StoredRequests(frontier.durable, self._inc)  # entries' requests
        self.engine = EngineHandle(crawler)  # waking it, and what it still processes
        self.intake = Intake(frontier, self.df, scorer, self.admission, self.learning,
                             self.keys, self.robots, self.blocklist, self.requests,
                             self._counts.inc, self.engine.wake_at, time.time,
                             lambda: getattr(self.crawler, "request_fingerprinter", None))
        self._frozen = False  # a disk filled up: the journal commits nothing more
        self.lag = LagProbe(time.time)  # the reactor's own lag, kept out of response times
        self.server_latency = ServerLatency(self.lag)
        self.inflight = InFlight(frontier, self.robots, self.server_latency, time.time,
                                 self._inc, stats, released=self._released, rearm=self._rearm)
        self._loops: list[Any] = []
        self._dispatched_at_last_log = 0

    @property
    def spider(self) -> Spider | None:
        """The crawl's spider (its callbacks are what stored requests name)."""
        return self.requests.spider

    @spider.setter
    def spider(self, spider: Spider | None) -> None:
        self.requests.spider = spider

    @classmethod
    def from_crawler(cls, crawler: Crawler) -> Self:
        s = crawler.settings
        config.validate_all(s)  # also when not started by `scrapy crawl`
        use_bundled_public_suffix_list()
        get = lambda name: config.get(s, name)  # noqa: E731
        bands = get("CRAWLER_EXT_FRONTIER_BANDS")
        stats = crawler.stats
        frontier = make_frontier(crawler)
        rank_file = get("CRAWLER_EXT_FRONTIER_HOST_RANK_FILE")
        scorer = Scorer(bands, load_host_ranks(rank_file) if rank_file else None)
        dupefilter = build_from_crawler(load_object(s["DUPEFILTER_CLASS"]), crawler)
        admission = Admission(AdmissionRules.from_settings(s),
                              on_reject=lambda reason: stats.inc_value(
                                  f"admission/rejected/{reason}"),
                              guard=NetworkGuard.from_settings(s))
        return cls(frontier, dupefilter, scorer, admission, stats, crawler,
                   flush_interval=get("CRAWLER_EXT_FRONTIER_FLUSH_INTERVAL"),
                   log_interval=get("CRAWLER_EXT_FRONTIER_LOG_INTERVAL"),
                   snapshot_interval=get("CRAWLER_EXT_BLOOM_SNAPSHOT_INTERVAL"),
                   rules_path=Path(job_dir(s)) / "learned_rules.json" if job_dir(s) else None,
                   learn_min_evidence=get("CRAWLER_EXT_LEARN_MIN_EVIDENCE"),
                   robots=make_robots(s),
                   blocklist=Blocklist(get("CRAWLER_EXT_BLOCKLIST")),
                   key_by_ip=get("CRAWLER_EXT_POLITENESS_KEY") == "ip",
                   dns_prefetch=get("CRAWLER_EXT_DNS_PREFETCH"))

    # -- lifecycle -------------------------------------------------------------------------
    def open(self, spider: Spider) -> Any:
        self.spider = spider
        self.engine.check()
        result = self.df.open()
        self.frontier.open()
        recovered = self.frontier.recover()
        fps, mark = self.frontier.admitted_since(self.df.mark)
        self.df.replay(fps, mark)
        if fps:
            logger.info("Seen set: replayed %d admissions journalled after its snapshot",
                        len(fps))
        if recovered:
            logger.info("Frontier: resumed %d queued or in-flight requests", recovered)
            self._inc("frontier/recovered", recovered)
        self.learning.load()
        if is_reactor_installed():  # (not in Scrapy's reactorless mode)
            from twisted.internet import reactor

            if self.crawler is not None:
                install_resolver(self.crawler)  # the add-on's resolver, if it set one

            resolver = getattr(reactor, "resolver", None)
            if hasattr(resolver, "attach_stats"):  # the caching DNS resolver counts dns/...
                resolver.attach_stats(self.stats)
        if self.crawler is not None:
            check_settings(self.crawler.settings, self.robots is not None,
                           self.frontier.max_in_flight)
            sig = self.crawler.signals
            sig.connect(self._on_duplicate, signal=content_duplicate)
            sig.connect(self._on_checked, signal=content_checked)
            sig.connect(self._on_storage_failed, signal=storage_failed)
            sig.connect(self.inflight.downloaded, signal=signals.response_downloaded)
            sig.connect(self.inflight.left, signal=signals.request_left_downloader)
            if self.frontier.wait_for_seeds:
                sig.connect(self._keep_waiting, signal=signals.spider_idle)
            sig.send_catch_log(frontier_opened, progress=self.progress,
                               refuse_known=self.refuse_known,
                               schedule_refresh=self.schedule_refresh,
                               lease_key=self.lease_key, robots_allows=self.robots_allows,
                               page_done=self.page_done)
        self._start_loop(self._flush, self.flush_interval)
        self.lag.start(call_later)
        if self._rules_log is not None:
            self._rules_log.start()
        if self.log_interval:
            self._start_loop(self._log_progress, self.log_interval, now=False)
        if self.snapshot_interval:
            self._start_loop(self._snapshot, self.snapshot_interval, now=False)
        return result

    def close(self, reason: str) -> Any:
        for loop in self._loops:
            if loop.running:
                loop.stop()
        self.lag.stop()
        if self._rules_log is not None:
            self._rules_log.stop()
        self.engine.stop()
        if self._frozen:  # nothing more is called done: what was not stored is fetched again
            self.frontier.close(commit=False)
        else:
            self.intake.confirm()
            self._reap(final=reason == "finished")
            try:
                self.frontier.close()
                self.df.flush()
            except (OSError, sqlite3.Error) as exc:
                self._storage_error(exc)
            self.df.mark = self.frontier.admitted_mark()
        self._flush_counts()
        if self.stats is not None:
            self.stats.set_value("frontier/pending", self.frontier.pending())
            parked = self.frontier.parked_pending(time.time())
            if parked:
                self.stats.set_value("frontier/parked", len(self.frontier.parked))
                self.stats.set_value("frontier/parked_pending", parked)
                logger.info("Frontier: %d hosts parked with %d queued URLs (they asked to wait "
                            "longer than CRAWLER_EXT_POLITENESS_BACKOFF_MAX): %s", len(
                                self.frontier.parked), parked, ", ".join(
                                sorted(self.frontier.parked)[:20]))
            self.frontier.publish_stats(self.stats.get_stats())
        return self.df.close("disk_full" if self._frozen else reason)

    def _start_loop(self, func: Any, interval: float, now: bool = True) -> None:
        loop = create_looping_call(func)
        loop.start(interval, now=now)
        self._loops.append(loop)

    # -- the scheduler interface -------------------------------------------------------------
    def has_pending_requests(self) -> bool:
        return self.frontier.pending() > self.frontier.parked_pending(time.time()) or bool(
            self.intake.unconfirmed or self.keys.waiting())

    # -- robots.txt and the blocklist, checked when a URL's turn comes ----------------------
    def _gate(self, entry: Entry, now: float) -> Entry | float | str:
        if entry.data[:1] == b"H":  # a robots.txt redirect: no robots.txt for robots.txt
            hop = self.robots.hop(entry) if self.robots is not None else None
            if hop is None or self.blocklist.blocked(hop.url):  # (a hop lost in a restart)
                if self.robots is not None:
                    self.robots.take_hop(entry)
                return DROP
            return entry
        url = self.requests.url(entry.data)
        if url is None:  # kept in memory by a run that ended: lost with it
            return DROP
        if self.blocklist.blocked(url):
            self._inc("frontier/blocked")
            return DROP
        if self.robots is None:
            return entry
        return self.robots.check(entry, url, now)

    def _robots_parsed(self, response: Response) -> None:
        """Callback of robots.txt requests: the answer was kept from response_downloaded."""
        return None

    def _robots_failed(self, failure: Any) -> None:
        """Errback of robots.txt requests (the gate logs a failure without a response once)."""
        info = self.inflight.get(getattr(failure, "request", None))
        if self.robots is not None:
            self.robots.failed(failure, info.status if info is not None else None)

    def _sitemaps_found(self, origin: str, sitemaps: list[str]) -> None:
        if self.crawler is not None:
            self.crawler.signals.send_catch_log(sitemaps_found, origin=origin, sitemaps=sitemaps)

    def __len__(self) -> int:
        return self.frontier.pending()

    def enqueue_request(self, request: Request) -> bool:
        return self.intake.enqueue(request)

    def schedule_refresh(self, url: str, due: float, history: dict | None = None) -> bool:
        """Queue a fetch of ``url`` again at unix time ``due`` (the recrawl middleware): a
        delayed entry in its host's queue, past the seen set, paced like any fetch;
        ``history`` (plain data) travels with it, for whichever worker fetches it."""
        if self._frozen:
            return False
        self.intake.refresh(url, due, history)
        return True

    def trap_pattern(self, url: str) -> tuple[str, bool]:
        return self.intake.trap_pattern(url)

    def refuse_known(self, request: Request) -> bool:
        return self.intake.refuse_known(request)

    def page_done(self, response: Response) -> None:
        """The spider's output for ``response`` is all taken: the page's importance flows to
        its links in the next turn of the loop (Scrapy's scraper buffers the output and
        schedules its requests after taking it all), not at the next flush (which does it
        for a page never told here)."""
        call_later(0, self._page_done, response.request)

    def _page_done(self, request: Request) -> None:
        info = self.inflight.get(request)
        if info is not None and info.entry.fp:
            self.intake.fetched(info.entry.fp)

    def lease_key(self, request: Request) -> str | None:
        """The politeness key an in-flight request holds (the rendering pool paces the
        page's own sub-requests at its delay)."""
        info = self.inflight.get(request)
        return info.entry.key if info is not None else None

    def robots_allows(self, url: str) -> bool:
        """Whether robots.txt, as cached now, lets ``url`` be fetched (an origin whose
        robots.txt is not known yet: no)."""
        if self.robots is None:
            return True
        return self.robots.cache.decide(url, time.time())[0] is Decision.FETCH

    def next_request(self) -> Request | None:
        now = time.time()
        if self._frozen:  # a disk filled up: the crawl is closing, nothing more goes out
            return None
        try:
            entry = self.frontier.next(now, self._gate)  # (a disk store may read, and commit)
        except (OSError, sqlite3.Error) as exc:
            self._storage_error(exc)
            return None
        if entry is None:
            self.engine.wake_at(self.frontier.next_ready_time(), now)
            return None
        if entry.data[:1] == b"R" and self.robots is not None:
            request = self.robots.request(entry.data[1:].decode("ascii"), self._robots_parsed,
                                          self._robots_failed)
        elif entry.data[:1] == b"H" and self.robots is not None:
            request = self.robots.take_hop(entry)  # type: ignore[assignment]
        else:
            request = self.requests.decode(entry.data)
            chain = request.meta.get(CHAIN)
            if chain:
                self.admission.restore_chain(request.url, chain)
        self.inflight.add(request, entry, now)
        self._inc("frontier/dispatched")
        if entry.data[:1] not in (b"R", b"H"):  # the frontier's own robots.txt fetches aside
            self._inc("scheduler/dequeued")
            self._inc(f"scheduler/dequeued/{self.requests.where(entry.data)}")
        if self.stats is not None:
            self.stats.max_value("frontier/active_hosts_max", self.frontier.active_keys())
        return request

    def _released(self, **release: Any) -> None:
        """A key was released (its request left the downloader): the crawl report hears it."""
        if self.crawler is not None:
            self.crawler.signals.send_catch_log(host_released, **release)

    # -- feedback from content dedup ------------------------------------------------------
    def _on_checked(self, url: str, kind: str, basis: str, **_: Any) -> None:
        """Evidence for the trap rules: empty and duplicate pages of a URL pattern."""
        self.admission.note_content(url, trap_like=kind != "unique" or basis == "body")

    def _on_duplicate(self, url: str, original: str, kind: str, distance: int = 0,
                      **_: Any) -> None:
        self.learning.duplicate(url, original)

    # -- hooks of the Redis frontier ---------------------------------------------------------
    def seeds(self, urls: list[str]) -> None:
        """Seeds popped from the Redis seeds key: admitted like any link (the shared seen set
        drops those another worker admitted already)."""
        for url in urls:
            url = url.strip()
            if not url:
                continue
            try:
                request = Request(url)
            except ValueError:
                self._inc("admission/rejected/bad_seed")
                continue
            self.enqueue_request(request)
        self._inc("frontier/redis/seeds", len(urls))

    def robots_import(self, origin: str, status: int, body: bytes, fetched_at: float) -> None:
        """A robots.txt answer another worker fetched, leased with its key."""
        if self.robots is not None:
            self.robots.adopt(origin, status, body, fetched_at)

    def wake(self) -> None:
        self.engine.wake_now()

    def _keep_waiting(self, spider: Any = None) -> None:
        from scrapy.exceptions import DontCloseSpider

        raise DontCloseSpider("CRAWLER_EXT_REDIS_WAIT_FOR_SEEDS: waiting for new seeds")

    # -- waking the engine -----------------------------------------------------------------
    def _rearm(self) -> None:
        self.engine.wake_at(self.frontier.next_ready_time(), time.time())

    # -- completion and durability ---------------------------------------------------------
    def _reap(self, final: bool = False) -> None:
        """Complete requests whose responses the engine has finished processing (their links
        are admitted by then), so a durable store forgets them only after that."""
        if self._frozen:
            return
        if self.keys.waiting() and not final:
            return  # links waiting for DNS are not journalled yet: complete nothing now
        done: list[int] = []
        for entry in self.inflight.reap(self.engine.in_progress(), final):
            done.append(entry.id)
            self.requests.forget(entry.data)
            if entry.fp:
                self.intake.fetched(entry.fp)
        if done:
            self.frontier.complete(done)

    def _flush(self) -> None:
        self._flush_counts()
        if self._frozen:
            return
        self.blocklist.refresh()
        self.intake.confirm()
        self._reap()
        if self.crawler is not None:
            self.crawler.signals.send_catch_log(frontier_commit, durable=self.frontier.durable)
        if self._frozen:  # what the journal would call done was not all stored
            return
        try:
            self.frontier.flush()
            self.df.flush()  # after the journal: the seen set never runs ahead of it
        except (OSError, sqlite3.Error) as exc:
            self._storage_error(exc)

    def _snapshot(self) -> None:
        """Snapshot the seen set right after a journal commit, in the same reactor turn, so the
        snapshot holds exactly the admissions up to the journal position it records."""
        if self._frozen:
            return
        try:
            self.frontier.flush()
            self.df.snapshot(self.frontier.admitted_mark())
        except (OSError, sqlite3.Error) as exc:
            self._storage_error(exc)

    def _storage_error(self, exc: BaseException) -> None:
        """The journal or the seen set could not be written: a full disk stops the crawl."""
        if not is_disk_full(exc):
            raise exc
        self._frozen = True
        report_disk_full(self.crawler, "jobdir", job_dir(self.crawler.settings)
                         if self.crawler is not None else None, exc)

    def _on_storage_failed(self, where: str = "", **_: Any) -> None:
        self._frozen = True

    def progress(self) -> dict[str, Any]:
        """The frontier's figures now (the progress line and the crawl report)."""
        return {"queued": self.frontier.pending(), "bands": self.frontier.band_sizes(),
                "delayed": self.frontier.delayed(), "active_hosts": self.frontier.active_keys(),
                "in_flight": len(self.inflight)}

    def _log_progress(self) -> None:
        self._flush_counts()
        dispatched = self.stats.get_value("frontier/dispatched", 0) if self.stats else 0
        rate = (dispatched - self._dispatched_at_last_log) * 60.0 / self.log_interval
        self._dispatched_at_last_log = dispatched
        now = self.progress()
        bands = now["bands"]
        logger.info(
            "Frontier: %d queued (bands %s; %d delayed), %d active hosts, %d in flight, %d "
            "dispatched (%.0f/min)", now["queued"], "/".join(map(str, bands))
            if bands is not None else "shared", now["delayed"], now["active_hosts"],
            now["in_flight"], dispatched, rate)

    def _flush_counts(self) -> None:
        """The counts kept since the last flush, into the crawl's stats."""
        self.intake.count_into(self._counts.inc)
        self._counts.flush(self.stats)

    def _inc(self, key: str, count: int = 1) -> None:
        self._counts.inc(key, count)  # added to the stats at the next flush
