"""The scheduler's composition root (:class:`Parts`): every part built once, in dependency
order, from the stores, the strategy, the policies and the options -- nothing bound after
construction.

    engine ─ events ─ decisions ─ counts      what flows back up   -> Port
    known spellings ─ rules log ─ learning ─ keys ─ robots gate ─ controls -> Gates
    requests (stored form)
    intake (Stores, Gates, Port)  ──> the shared frontier's hooks
    lag ─ server latency ─ in flight (Port) ─ dispatch (Gates, Port)
    control book ─ durability (Stores, Gates) ─ progress

``docs/architecture.md`` draws the same order.  The settings are read before this, by the
factory (:func:`~crawler_ext.frontier.adapter.factory.scheduler_options`); the scheduler
itself only forwards Scrapy's calls and signals to the parts.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from crawler_ext.admission import RuleLearning
from crawler_ext.frontier.adapter.controls import ControlBook
from crawler_ext.frontier.adapter.dispatch import Dispatcher
from crawler_ext.frontier.adapter.durability import Durability
from crawler_ext.frontier.adapter.engine import EngineHandle
from crawler_ext.frontier.adapter.events import Decisions, FrontierEvents
from crawler_ext.frontier.adapter.hooks import SharedHooks
from crawler_ext.frontier.adapter.inflight import InFlight
from crawler_ext.frontier.adapter.intake import KNOWN_MEMORY, Intake
from crawler_ext.frontier.adapter.keys import PolitenessKeys
from crawler_ext.frontier.adapter.progress import Progress
from crawler_ext.frontier.adapter.requests import StoredRequests
from crawler_ext.frontier.adapter.robotsgate import RobotsGate
from crawler_ext.frontier.adapter.roles import Gates, Policies, Port, SchedulerOptions, Stores
from crawler_ext.frontier.controls import KeyControls
from crawler_ext.frontier.lag import LagProbe, ServerLatency
from crawler_ext.frontier.strategy import CrawlingStrategy
from crawler_ext.recent import RecentMap
from crawler_ext.stats import Counts

if TYPE_CHECKING:
    from crawler_ext.frontier.contract import SharedLogPort

__all__ = ["Parts"]


class Parts:
    """The scheduler's parts over ``stores``, built by the constructor in dependency order;
    ``crawler``: the running crawl (None: the scheduler used on its own, as tests and
    benchmarks do -- no signal, no engine to wake)."""

    def __init__(self, stores: Stores, strategy: CrawlingStrategy, policies: Policies,
                 options: SchedulerOptions, crawler: Any = None) -> None:
        self.stores, self.strategy, self.options = stores, strategy, options
        frontier, shared = stores.frontier, stores.shared
        stats = getattr(crawler, "stats", None)
        # what flows back up: counts, wake-ups, signals, decisions
        self.engine = engine = EngineHandle(crawler)  # waking it, what it processes, signals
        events = FrontierEvents(engine)
        self.counts = counts = Counts()
        self.port = port = Port(inc=counts.inc, wake=engine.wake_at, clock=time.time,
                                decisions=Decisions(), stats=stats)

        # the gates, each built from what comes before it
        known = RecentMap(KNOWN_MEMORY)  # the intake's known spellings
        self.rules_log: SharedLogPort | None = \
            shared.shared_log("rules", self._stat) if shared is not None else None
        # spellings with a learned parameter get another canonical form: forget known ones
        self.learning = RuleLearning(policies.admission, options.learn_min_evidence,
                                     options.rules_path, on_learned=known.clear,
                                     inc=counts.inc, shared=self.rules_log)
        self.keys = PolitenessKeys(options.key_by_ip, options.dns_prefetch, counts.inc)
        # robots.txt as the prerequisite of an origin's URLs (None: robots.txt not obeyed)
        self.robots = RobotsGate(policies.robots, frontier, self.keys.known, counts.inc,
                                 events.sitemaps_found, port.decisions,
                                 timeout=options.robots_timeout) \
            if policies.robots is not None else None
        # the operator's rules per key (the control API)
        self.controls = KeyControls(frontier.key_floors)
        self.gates = gates = Gates(policies.admission, policies.blocklist, self.robots,
                                   self.learning, self.controls, self.keys)
        self.requests = StoredRequests(frontier.durable, counts.inc, options.track_requests)

        # the way in, and what a shared frontier calls back
        self.intake = Intake(stores, strategy, gates, self.requests, port, known,
                             _request_fingerprinter(crawler))
        self.hooks = SharedHooks(self.intake, self.robots, engine, counts.inc)
        if shared is not None:  # it calls wake(), seeds(), robots_import()
            shared.attach(self.hooks)

        # the way out
        self.lag = LagProbe(time.time)  # the reactor's own lag, kept out of response times
        self.inflight = InFlight(frontier, self.robots, ServerLatency(self.lag), port,
                                 rearm=self.rearm,
                                 released=events.key_released if crawler is not None else None)
        self.dispatch = Dispatcher(frontier, gates, self.requests, self.inflight, strategy,
                                   port)

        # upkeep: commits, figures, the operator's actions
        self.durability = Durability(stores, gates, self.inflight, self.intake, self.requests,
                                     engine, options.jobdir, self.flush_counts)
        self.figures = Progress(frontier, shared, self.inflight, stats, options.log_interval,
                                self.flush_counts)
        self.control_book = ControlBook(gates, stores, engine, self.intake, self.durability,
                                        self.figures, counts.inc, options.jobdir)

    def rearm(self) -> None:
        """After a release: the engine is woken when the next key is ready."""
        if self.engine.present():  # (the next ready time is not asked for nothing)
            self.engine.wake_at(self.stores.frontier.next_ready_time(), time.time())

    def flush_counts(self) -> None:
        """The counts kept since the last flush, into the crawl's stats."""
        inc = self.counts.inc
        self.intake.count_into(inc)
        self.dispatch.count_into(inc)
        self.inflight.count_into()
        self.counts.flush(self.port.stats)

    def _stat(self, key: str, value: float) -> None:
        self.counts.inc(key, int(value))


def _request_fingerprinter(crawler: Any) -> Any:
    """The crawl's REQUEST_FINGERPRINTER_CLASS instance (set before the engine builds the
    scheduler; None without a crawler, or one whose settings were not applied)."""
    try:
        return getattr(crawler, "request_fingerprinter", None)
    except RuntimeError:  # (Scrapy's late attribute, read before it was set)
        return None
