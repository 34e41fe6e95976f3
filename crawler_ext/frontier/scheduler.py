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
from collections import OrderedDict
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from scrapy import Request, signals
from scrapy.core.scheduler import BaseScheduler
from scrapy.utils.job import job_dir
from scrapy.utils.misc import build_from_crawler, load_object
from scrapy.utils.asyncio import call_later, create_looping_call
from scrapy.utils.reactor import is_reactor_installed

from crawler_ext import config
from crawler_ext.admission import Admission, AdmissionRules, RuleLearning
from crawler_ext.seen import MAYBE, SeenSet, as_seen_set
from crawler_ext.hosts.dns import install_resolver
from crawler_ext.hosts.netguard import NetworkGuard, use_bundled_public_suffix_list
from crawler_ext.hosts.blocklist import Blocklist
from crawler_ext.frontier.codec import (
    CHAIN,
    decode_request,
    encode_plain,
    encode_request,
    entry_url,
    is_plain,
)
from crawler_ext.frontier.core import DROP
from crawler_ext.frontier.lag import LagProbe, ServerLatency
from crawler_ext.frontier.politeness import (
    BACKOFF_STATUSES,
    Outcome,
    parse_retry_after,
)
from crawler_ext.frontier.contract import FrontierBackend
from crawler_ext.frontier.factory import make_frontier, make_robots
from crawler_ext.frontier.engine import EngineHandle
from crawler_ext.frontier.keys import PolitenessKeys, canonical_key, politeness_key
from crawler_ext.frontier.robotsgate import ROBOTS_META, RobotsGate
from crawler_ext.frontier.scoring import Scorer, load_host_ranks
from crawler_ext.frontier.storage import Entry
from crawler_ext.hosts.robots import Decision, RobotsCache
from crawler_ext.distributed.sharedlog import SharedLog
from crawler_ext.diskfull import is_disk_full, report_disk_full
from crawler_ext.recrawl.middleware import REFRESH_META
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
from crawler_ext.admission.urls import REST_BITS, fingerprint, host_of

if TYPE_CHECKING:
    from scrapy.crawler import Crawler
    from scrapy.http import Response
    from scrapy.spiders import Spider
    from typing_extensions import Self

__all__ = ["FrontierScheduler", "politeness_key"]

logger = logging.getLogger(__name__)


@dataclass(slots=True)
class _InFlight:
    entry: Entry
    started: float
    left: bool = False
    status: int | None = None
    retry_after: float | None = None
    arrived: float | None = None  # when the response came out of the download handler


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
        self._unconfirmed: list[tuple[Request, str, int, str | None]] = []
        # exact spellings of links recently admitted or found seen -> their fingerprint: a
        # link seen again (a site's navigation, on every page) is refused without
        # canonicalisation and trap analysis; the answer is the seen set's all the same
        self._known: OrderedDict[str, int] = OrderedDict()
        self.known_memory = 100_000
        # spellings with a learned parameter get another canonical form: forget the cache
        self.learning = RuleLearning(self.admission, learn_min_evidence, rules_path,
                                     on_learned=self._known.clear, inc=self._inc)
        self.learning.shared = self._rules_log
        self.keys = PolitenessKeys(key_by_ip, dns_prefetch, self._resolved, self._inc)
        # robots.txt as the prerequisite of an origin's URLs (None: robots.txt not obeyed)
        self.robots: RobotsGate | None = RobotsGate(
            robots, frontier, self.keys.known, self._inc, self._sitemaps_found) \
            if robots is not None else None
        self.blocklist = blocklist or Blocklist()
        # requests kept as objects (b"M<token>" entries): every non-plain request in the
        # memory frontier, and those a durable one cannot serialise
        self._live: dict[int, Request] = {}
        self._live_tokens = 0
        self._unserialisable_logged = False
        self._parked_logged = 0
        self._frozen = False  # a disk filled up: the journal commits nothing more
        self.spider: Spider | None = None
        self._inflight: dict[Request, _InFlight] = {}
        self.engine = EngineHandle(crawler)  # waking it, and what it still processes
        self._wake_call: Any = None
        self._wake_due: float | None = None  # when the armed wake-up fires (time.time())
        self.lag = LagProbe(time.time)  # the reactor's own lag, kept out of response times
        self.server_latency = ServerLatency(self.lag)
        self._loops: list[Any] = []
        self._dispatched_at_last_log = 0

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
            self._check_settings()
            sig = self.crawler.signals
            sig.connect(self._on_duplicate, signal=content_duplicate)
            sig.connect(self._on_checked, signal=content_checked)
            sig.connect(self._on_storage_failed, signal=storage_failed)
            sig.connect(self._on_downloaded, signal=signals.response_downloaded)
            sig.connect(self._on_left, signal=signals.request_left_downloader)
            if self.frontier.wait_for_seeds:
                sig.connect(self._keep_waiting, signal=signals.spider_idle)
            sig.send_catch_log(frontier_opened, progress=self.progress,
                               refuse_known=self.refuse_known,
                               schedule_refresh=self.schedule_refresh,
                               lease_key=self.lease_key, robots_allows=self.robots_allows)
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
        if self._wake_call is not None:
            self._wake_call.cancel()
            self._wake_call = self._wake_due = None
        if self._frozen:  # nothing more is called done: what was not stored is fetched again
            self.frontier.close(commit=False)
        else:
            self._confirm_unconfirmed()
            self._reap(final=reason == "finished")
            try:
                self.frontier.close()
                self.df.flush()
            except (OSError, sqlite3.Error) as exc:
                self._storage_error(exc)
            self.df.mark = self.frontier.admitted_mark()
        self._counts.flush(self.stats)
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

    def _check_settings(self) -> None:
        s = self.crawler.settings  # type: ignore[union-attr]
        if s.getfloat("DOWNLOAD_DELAY") > 0 or s.getbool("AUTOTHROTTLE_ENABLED"):
            logger.warning("Frontier: DOWNLOAD_DELAY/AUTOTHROTTLE add a second delay on top of "
                           "the frontier's politeness; set DOWNLOAD_DELAY=0 and disable "
                           "AutoThrottle to let CRAWLER_EXT_POLITENESS_* govern alone")
        from scrapy.downloadermiddlewares.robotstxt import RobotsTxtMiddleware
        from scrapy.utils.conf import build_component_list

        from crawler_ext.hosts.netguard import NetworkGuardMiddleware

        # enabled middlewares, as classes (a project or the add-on may list paths or classes)
        mws = {load_object(m) for m in
               build_component_list(s.getwithbase("DOWNLOADER_MIDDLEWARES"))}
        if self.robots is not None and RobotsTxtMiddleware in mws:
            logger.warning("Frontier: the frontier fetches robots.txt itself (RFC 9309); disable "
                           "Scrapy's RobotsTxtMiddleware in DOWNLOADER_MIDDLEWARES to avoid a "
                           "second, unpaced robots.txt fetch")
        if NetworkGuardMiddleware not in mws:
            logger.warning("Frontier: crawler_ext.netguard.NetworkGuardMiddleware is not in "
                           "DOWNLOADER_MIDDLEWARES: redirects to IP literals are not checked "
                           "by the SSRF guard")
        if s.getint("CONCURRENT_REQUESTS_PER_DOMAIN") < self.frontier.max_in_flight:
            logger.warning("Frontier: CONCURRENT_REQUESTS_PER_DOMAIN is below "
                           "CRAWLER_EXT_POLITENESS_MAX_IN_FLIGHT: requests will wait in "
                           "Scrapy's slot queues")

    # -- the scheduler interface -------------------------------------------------------------
    def has_pending_requests(self) -> bool:
        return self.frontier.pending() > self.frontier.parked_pending(time.time()) or bool(
            self._unconfirmed or self.keys.waiting())

    # -- robots.txt and the blocklist, checked when a URL's turn comes ----------------------
    def _gate(self, entry: Entry, now: float) -> Entry | float | str:
        if entry.data[:1] == b"H":  # a robots.txt redirect: no robots.txt for robots.txt
            hop = self.robots.hop(entry) if self.robots is not None else None
            if hop is None or self.blocklist.blocked(hop.url):  # (a hop lost in a restart)
                if self.robots is not None:
                    self.robots.take_hop(entry)
                return DROP
            return entry
        if entry.data[:1] == b"M":
            live = self._live.get(int(entry.data[1:]))
            if live is None:  # kept in memory by a run that ended: lost with it
                return DROP
            url = live.url
        else:
            url = entry_url(entry.data)
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
        info = self._inflight.get(getattr(failure, "request", None))  # type: ignore[arg-type]
        if self.robots is not None:
            self.robots.failed(failure, info.status if info is not None else None)

    def _sitemaps_found(self, origin: str, sitemaps: list[str]) -> None:
        if self.crawler is not None:
            self.crawler.signals.send_catch_log(sitemaps_found, origin=origin, sitemaps=sitemaps)

    def __len__(self) -> int:
        return self.frontier.pending()

    def enqueue_request(self, request: Request) -> bool:
        if request.meta.get(ROBOTS_META) and self.robots is not None:
            # a robots.txt redirect: paced on its target's key, behind the same guards
            self.frontier.add([self.robots.redirected(request, politeness_key(request.url))],
                              check_seen=False)
            self._arm_wake(time.time(), time.time())
            return True
        if self.blocklist.blocked(request.url):
            self._inc("admission/rejected/blocklist")
            return False
        raw = request.url
        scheme = raw.partition(":")[0].lower()
        if scheme not in ("http", "https"):
            return self._enqueue_other(request, scheme)
        if request.dont_filter and "redirect_urls" not in request.meta and \
                "retry_times" not in request.meta:
            request.meta[USER_DONT_FILTER] = True  # the user's own: honoured for its redirects
        if self._refuse_known(request):
            return False
        referer = request.headers.get("Referer")
        referer_url = referer.decode("latin-1") if referer else None
        canonical = self.admission.check(request.url, referer_url)
        if canonical is None:
            return False
        if canonical != request.url:
            request = request.replace(url=canonical)
        plain = request.method in ("GET", "HEAD") and not request.body
        fp = fingerprint(canonical) if plain else self._request_fp(request, canonical)
        if _checks_seen(request):
            seen = self.df.check(request, fp)
            if seen is MAYBE:  # exact mode: confirmed in one batch at the next flush
                self._unconfirmed.append((request, canonical, fp, referer_url))
                return True
            if seen:
                if plain:
                    self._remember_known(raw, fp)
                self._rediscovered(request, canonical, fp)
                return False
            if plain:
                self._remember_known(raw, fp)
        self._admit(request, canonical, fp, referer_url)
        return True

    def schedule_refresh(self, url: str, due: float, history: dict | None = None) -> bool:
        """Queue a fetch of ``url`` again at unix time ``due`` (the recrawl middleware): a
        delayed entry in its host's queue, past the seen set, paced like any fetch;
        ``history`` (plain data) travels with it, for whichever worker fetches it."""
        if self._frozen:
            return False
        key = self.keys.known(canonical_key(url))  # (a fetched page's host is resolved)
        request = Request(url, dont_filter=True, meta={REFRESH_META: history or True})
        band = self.scorer.band(self.scorer.score(key, 0, 1), 0)
        self.frontier.add_delayed([Entry(key, band, self._encode(request), fingerprint(url))],
                                  due)
        self._arm_wake(due, time.time())
        return True

    def trap_pattern(self, url: str) -> tuple[str, bool]:
        """The shared frontier's question at a push: ``url``'s host and pattern, and whether
        the pages fetched here call the pattern a trap."""
        host = host_of(url)
        pattern = self.admission.pattern(url)
        return f"{host}\t{pattern}", self.admission.is_trap(host, pattern)

    def lease_key(self, request: Request) -> str | None:
        """The politeness key an in-flight request holds (the rendering pool paces the
        page's own sub-requests at its delay)."""
        info = self._inflight.get(request)
        return info.entry.key if info is not None else None

    def robots_allows(self, url: str) -> bool:
        """Whether robots.txt, as cached now, lets ``url`` be fetched (an origin whose
        robots.txt is not known yet: no)."""
        if self.robots is None:
            return True
        return self.robots.cache.decide(url, time.time())[0] is Decision.FETCH

    def refuse_known(self, request: Request) -> bool:
        """True if ``request`` is a link whose exact spelling was recently admitted or found
        seen: refused (counted, credited as an inlink) as ``enqueue_request`` would, without
        the engine's round.  The known-links spider middleware asks this."""
        if self.blocklist.blocked(request.url):
            return False  # enqueue_request counts it as the blocklist's
        if self._refuse_known(request):
            self._inc("frontier/known_links/before_engine")
            return True
        return False

    def _refuse_known(self, request: Request) -> bool:
        if request.dont_filter or request.method != "GET":
            return False
        known = self._known.get(request.url)
        if known is None:
            return False
        self._inc("dupefilter/filtered")
        self._inc("frontier/known_links")
        self._rediscovered(request, request.url, known)
        return True

    def _enqueue_other(self, request: Request, scheme: str) -> bool:
        """data:, file:, ftp:, s3:, ...: no canonicalisation, robots.txt or trap rules.  The
        guard in the download path lets data: through and refuses the rest unless
        CRAWLER_EXT_ALLOWED_SCHEMES allows them (NotSupported, in the request's errback)."""
        fp = fingerprint(request.url)
        if not request.dont_filter:
            seen = self.df.check(request, fp)
            if seen is MAYBE:
                seen = self.df.confirm([fp])[0]
            if seen:
                return False
        if scheme == "data":  # nothing to be polite to: each its own key, no delay between
            key = f"data:{fp:x}"
        else:
            try:
                key = f"{scheme}:{(urlsplit(request.url).netloc or '').lower()}"
            except ValueError:
                key = f"{scheme}:"
        band = self.scorer.band(self.scorer.score(key, int(request.meta.get("depth", 0)), 1),
                                request.priority)
        self._queue(Entry(key, band, self._encode(request), fp, priority=request.priority),
                    check_seen=not request.dont_filter)
        return True

    def _encode(self, request: Request, referer: bytes | None = None) -> bytes:
        """A request as the frontier stores it: the compact form for a plain link; else, in
        the memory frontier, the Request object itself (no pickling: any callback, any
        meta); in a durable one its pickle, or the object if it cannot be pickled (logged
        once, counted in scheduler/unserializable as Scrapy does: lost if the process dies)."""
        if is_plain(request, self.spider):
            return encode_plain(request, referer)
        if self.frontier.durable:
            try:
                return encode_request(request, self.spider)
            except Exception as exc:  # noqa: BLE001 - to_dict/pickle raise many types
                self._inc("scheduler/unserializable")
                if not self._unserialisable_logged:
                    self._unserialisable_logged = True
                    logger.warning("Unable to serialize request: %s - reason: %s - it is kept "
                                   "in memory for this run only; no more unserializable "
                                   "requests will be logged (counted in "
                                   "scheduler/unserializable)", request, exc)
        self._live_tokens += 1
        self._live[self._live_tokens] = request
        return b"M%d" % self._live_tokens

    def _decode(self, data: bytes) -> Request:
        if data[:1] == b"M":
            return self._live[int(data[1:])]
        return decode_request(data, self.spider)

    def _request_fp(self, request: Request, canonical: str) -> int:
        """A request with a body or another method than GET/HEAD is judged by Scrapy's
        configured request fingerprinter (REQUEST_FINGERPRINTER_CLASS), folded to 64 bits
        under the URL's host bits: two POSTs to one URL with different bodies stay two."""
        fingerprinter = getattr(self.crawler, "request_fingerprinter", None)
        if fingerprinter is None:
            return fingerprint(canonical)
        low = int.from_bytes(fingerprinter.fingerprint(request)[:8], "big") & _LOW_BITS
        return (fingerprint(canonical) & ~_LOW_BITS) | low

    def _remember_known(self, url: str, fp: int) -> None:
        self._known[url] = fp
        if len(self._known) > self.known_memory:
            self._known.popitem(last=False)

    def _admit(self, request: Request, canonical: str, fp: int, referer: str | None) -> None:
        host = canonical_key(canonical)
        key = self.keys.key(host, (request, canonical, fp, referer))
        if key is None:  # keyed by address: admitted when the host's address is known
            return
        chain = self.admission.count(canonical, referer)
        if chain:  # stored with the URL: whoever fetches it continues the chain
            request.meta[CHAIN] = chain
        depth = int(request.meta.get("depth", 0))
        band = self.scorer.band(self.scorer.score(host, depth, 1), request.priority)
        if self.learning.demoted(canonical):
            band = min(band + 1, self.scorer.bands - 1)  # this pattern keeps duplicating
            self._inc("frontier/demoted")
        checked = _checks_seen(request)
        # (the Referer read once per link: as admission's string, back to its bytes here)
        data = self._encode(request, referer.encode("latin-1") if referer else b"")
        self._queue(Entry(key, band, data, fp, priority=request.priority), check_seen=checked)

    def _queue(self, entry: Entry, check_seen: bool) -> None:
        self.frontier.add([entry], check_seen=check_seen)
        counts = self._counts
        counts.inc("frontier/enqueued")
        counts.inc(_BAND_STATS[entry.band] if entry.band < len(_BAND_STATS)
                   else f"frontier/enqueued/band_{entry.band}")
        # Scrapy's own scheduler stats, for the tools that read them
        counts.inc("scheduler/enqueued")
        counts.inc(f"scheduler/enqueued/{self._where(entry)}")

    def _where(self, entry: Entry) -> str:
        return "memory" if entry.data[:1] == b"M" or not self.frontier.durable else "disk"

    def _resolved(self, waited: list[tuple[Request, str, int, str | None]]) -> None:
        """A host's address is known: admit the URLs that waited for it."""
        for item in waited:
            self._admit(*item)
        self._arm_wake(time.time(), time.time())

    def _rediscovered(self, request: Request, canonical: str, fp: int) -> None:
        """A link to a URL already admitted: one more inlink, maybe a better band."""
        host = canonical_key(canonical)
        inlinks = self.frontier.relink(fp, self.keys.known(host))
        if inlinks is not None:
            depth = int(request.meta.get("depth", 0))
            score = self.scorer.score(host, depth, inlinks)
            self.frontier.promote(fp, self.scorer.band(score, request.priority))
        self.df.log(request, self.spider)

    def _confirm_unconfirmed(self) -> None:
        if not self._unconfirmed:
            return
        batch, self._unconfirmed = self._unconfirmed, []
        seen = self.df.confirm([fp for _, _, fp, _ in batch])
        for (request, canonical, fp, referer), was_seen in zip(batch, seen):
            if was_seen:
                self._rediscovered(request, canonical, fp)
            else:
                self._admit(request, canonical, fp, referer)
        self._arm_wake(time.time(), time.time())

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
            self._arm_wake(self.frontier.next_ready_time(), now)
            return None
        if entry.data[:1] == b"R" and self.robots is not None:
            request = self.robots.request(entry.data[1:].decode("ascii"), self._robots_parsed,
                                          self._robots_failed)
        elif entry.data[:1] == b"H" and self.robots is not None:
            request = self.robots.take_hop(entry)  # type: ignore[assignment]
        else:
            request = self._decode(entry.data)
            chain = request.meta.get(CHAIN)
            if chain:
                self.admission.restore_chain(request.url, chain)
        self._inflight[request] = _InFlight(entry, now)
        self._inc("frontier/dispatched")
        if entry.data[:1] not in (b"R", b"H"):  # the frontier's own robots.txt fetches aside
            self._inc("scheduler/dequeued")
            self._inc(f"scheduler/dequeued/{self._where(entry)}")
        if self.stats is not None:
            self.stats.max_value("frontier/active_hosts_max", self.frontier.active_keys())
        return request

    # -- signals: exact in-flight accounting -----------------------------------------------
    def _on_downloaded(self, response: Response, request: Request, spider: Any = None) -> None:
        if self.robots is not None and request.meta.get(ROBOTS_META):
            self.robots.answered(request, response.status, response.body)
        info = self._inflight.get(request)
        if info is None:
            return
        info.status = response.status
        info.arrived = time.time()
        if response.status in BACKOFF_STATUSES:
            info.retry_after = parse_retry_after(response.headers.get("Retry-After"))

    def _on_left(self, request: Request, spider: Any = None) -> None:
        info = self._inflight.get(request)
        if info is None or info.left:
            return
        info.left = True
        now = time.time()
        if info.status is None and self.robots is not None and request.meta.get(ROBOTS_META):
            self.robots.answered(request, None, b"")  # unreachable: disallow all for now
        latency = request.meta.get("download_latency")
        if latency is None:
            latency = now - info.started
        # the server's time, not our own lag; the key rests from when its response arrived
        if request.meta.get(ROBOTS_META):
            # a host's first fetch, on a new connection: its time is mostly the setup's
            server_time = self.server_latency.estimate(info.entry.key)
        else:
            server_time = self.server_latency.observe(info.entry.key, float(latency), now)
        outcome = Outcome(info.status, server_time, info.retry_after)
        delay = self.frontier.done(info.entry, outcome, info.arrived or now)
        if self.crawler is not None:
            self.crawler.signals.send_catch_log(host_released, key=info.entry.key,
                                                status=info.status, started=info.started,
                                                delay=delay)
        if info.status is None or info.status in BACKOFF_STATUSES:
            self._inc("frontier/backoffs")
            if info.retry_after is not None:
                self._inc("frontier/retry_after_honoured")
        if info.entry.key in self.frontier.parked:
            self._parked(info.entry.key, delay)
        elif self.stats is not None:
            self.stats.max_value("frontier/delay_max", round(delay, 3))
        self._arm_wake(self.frontier.next_ready_time(), now)

    def _parked(self, key: str, delay: float) -> None:
        """A host asked to wait longer than CRAWLER_EXT_POLITENESS_BACKOFF_MAX: honoured, but
        it does not keep the crawl open (logged for the first hosts, counted at close)."""
        self._inc("frontier/parkings")
        if self._parked_logged < 10:
            self._parked_logged += 1
            logger.warning("Frontier: %s asks to wait %.0f s (Retry-After or Crawl-delay), more "
                           "than CRAWLER_EXT_POLITENESS_BACKOFF_MAX: parked; its queued URLs are "
                           "kept but the crawl may finish without them (frontier/parked)",
                           key, delay)

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
        self._wake()

    def _keep_waiting(self, spider: Any = None) -> None:
        from scrapy.exceptions import DontCloseSpider

        raise DontCloseSpider("CRAWLER_EXT_REDIS_WAIT_FOR_SEEDS: waiting for new seeds")

    # -- waking the engine -----------------------------------------------------------------
    def _arm_wake(self, when: float | None, now: float) -> None:
        """Make the engine ask again when the next key is ready (not at its 5 s heartbeat)."""
        if when is None or not self.engine.present():
            return
        when = max(when, now)
        if self._wake_call is not None:
            if self._wake_due is not None and self._wake_due <= when:
                return
            self._wake_call.cancel()
        self._wake_due = when
        self._wake_call = call_later(when - now, self._wake)

    def _wake(self) -> None:
        self._wake_call = self._wake_due = None
        self.engine.wake()

    # -- completion and durability ---------------------------------------------------------
    def _reap(self, final: bool = False) -> None:
        """Complete requests whose responses the engine has finished processing (their links
        are admitted by then), so a durable store forgets them only after that."""
        if self._frozen:
            return
        if self.keys.waiting() and not final:
            return  # links waiting for DNS are not journalled yet: complete nothing now
        in_progress = self.engine.in_progress()
        now = time.time()
        done: list[int] = []
        for request, info in list(self._inflight.items()):
            if in_progress is not None and request in in_progress:
                continue
            if in_progress is None and not info.left and not final:
                continue
            if not info.left:  # dropped before the downloader (e.g. by a middleware)
                if self.robots is not None and request.meta.get(ROBOTS_META):
                    self.robots.answered(request, None, b"")  # (the SSRF guard): unreachable
                self.frontier.release(info.entry, now)
                self._arm_wake(self.frontier.next_ready_time(), now)
            done.append(info.entry.id)
            del self._inflight[request]
            if info.entry.data[:1] == b"M":
                self._live.pop(int(info.entry.data[1:]), None)
        if done:
            self.frontier.complete(done)

    def _flush(self) -> None:
        self._counts.flush(self.stats)
        if self._frozen:
            return
        self.blocklist.refresh()
        self._confirm_unconfirmed()
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
                "in_flight": len(self._inflight)}

    def _log_progress(self) -> None:
        self._counts.flush(self.stats)
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

    def _inc(self, key: str, count: int = 1) -> None:
        self._counts.inc(key, count)  # added to the stats at the next flush


_LOW_BITS = (1 << REST_BITS) - 1
_BAND_STATS = [f"frontier/enqueued/band_{band}" for band in range(16)]

#: meta flag of a request the user made with ``dont_filter=True`` (not a retry's copy)
USER_DONT_FILTER = "crawler_ext_dont_filter"


def _checks_seen(request: Request) -> bool:
    """Whether a request meets the seen set: unless ``dont_filter``; a redirect's target
    always does (Scrapy copies dont_filter onto it from a retry, and the target may have
    been fetched already), unless the user asked for ``dont_filter`` themselves."""
    if not request.dont_filter:
        return True
    return "redirect_urls" in request.meta and not request.meta.get(USER_DONT_FILTER)
