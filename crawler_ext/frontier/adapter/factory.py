"""Building the frontier from Scrapy settings: the politeness policy, the backend (memory,
disk, sqlite or Redis), the robots.txt cache and the scheduler's other parts
(:func:`scheduler_build`: the options, the policies and the stores).  The scheduler's
``from_crawler`` calls these;
``scrapy crawl`` calls :func:`make_store` first, so a bad combination stops it with one line."""

from __future__ import annotations

import importlib.util
import logging
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

from scrapy.utils.job import job_dir

from crawler_ext import config
from crawler_ext.admission import Admission, AdmissionRules
from crawler_ext.frontier.adapter.roles import Policies, SchedulerOptions
from crawler_ext.frontier.contract import (FrontierBackend, FrontierParts, FrontierStore,
                                           JournaledFrontier, SharedFrontier)
from crawler_ext.frontier.core import BestFirst, Frontier
from crawler_ext.frontier.disk import DiskStore
from crawler_ext.frontier.kv import make_engine
from crawler_ext.frontier.politeness import PolitenessPolicy
from crawler_ext.frontier.scoring import Scorer, load_host_ranks
from crawler_ext.frontier.sqlite import SqliteStore
from crawler_ext.frontier.storage import MemoryStore
from crawler_ext.frontier.strategy import STRATEGIES, CrawlingStrategy, DefaultStrategy
from crawler_ext.hosts.blocklist import Blocklist
from crawler_ext.hosts.robots import RobotsCache

if TYPE_CHECKING:
    from scrapy.crawler import Crawler

__all__ = ["SHARED_BACKENDS", "SchedulerBuild", "admission_rules", "make_frontier",
           "make_policies", "make_robots", "make_store", "make_strategy", "scheduler_build",
           "scheduler_options", "strategy_class"]

logger = logging.getLogger("crawler_ext.frontier.adapter.scheduler")

#: the frontier backends shared by many workers, by ``CRAWLER_EXT_FRONTIER_BACKEND``: a
#: function ``(crawler, policy, band weights, refresh share) -> a shared frontier`` named by its
#: dotted path, as Scrapy names its components (the distributed package builds on the
#: frontier, not the other way round)
SHARED_BACKENDS = {"redis": "crawler_ext.distributed.factory.make_redis_frontier"}


def make_frontier(crawler: Crawler, refresh_share: float,
                  best_first: bool = False) -> FrontierParts:
    """The frontier backend and its capabilities; ``refresh_share``: the strategy's share of
    refreshes; ``best_first``: the strategy routes best-first (a key's back queue one entry at
    a time; the local backends only)."""
    get = lambda name: config.get(crawler.settings, name)
    weights = config.band_weights(crawler.settings)
    policy = PolitenessPolicy(
        min_delay=get("CRAWLER_EXT_POLITENESS_MIN_DELAY"),
        max_delay=get("CRAWLER_EXT_POLITENESS_MAX_DELAY"),
        latency_factor=get("CRAWLER_EXT_POLITENESS_LATENCY_FACTOR"),
        backoff_factor=get("CRAWLER_EXT_POLITENESS_BACKOFF_FACTOR"),
        backoff_max=get("CRAWLER_EXT_POLITENESS_BACKOFF_MAX"),
        error_budget=get("CRAWLER_EXT_HOST_ERROR_BUDGET"),
    )
    shared = SHARED_BACKENDS.get(get("CRAWLER_EXT_FRONTIER_BACKEND"))
    if shared is not None:
        from scrapy.utils.misc import load_object

        backend = load_object(shared)(crawler, policy, weights, refresh_share)
        return FrontierParts(backend, journal=None, shared=backend)
    stats: Any = crawler.stats
    store = make_store(crawler.settings, get("CRAWLER_EXT_FRONTIER_BANDS"))
    frontier = Frontier(
        store, policy, weights,
        max_active_keys=get("CRAWLER_EXT_FRONTIER_MAX_ACTIVE_HOSTS"),
        max_in_flight=get("CRAWLER_EXT_POLITENESS_MAX_IN_FLIGHT"),
        on_stat=lambda name, value: stats.inc_value(name, value),
        refresh_share=refresh_share,
        best_first=BestFirst(weights, get("CRAWLER_EXT_FOCUS_EXPLORATION"),
                             get("CRAWLER_EXT_FOCUS_ACTIVE_HOSTS")) if best_first else None,
    )
    return FrontierParts(frontier, journal=frontier if store.durable else None)


def make_strategy(crawler: Crawler) -> CrawlingStrategy:
    """The crawling strategy of ``CRAWLER_EXT_STRATEGY``: the default one from its settings, a
    user's class by its ``from_crawler(crawler)`` or, without one, built with no argument."""
    from scrapy.utils.misc import build_from_crawler

    s = crawler.settings
    get = lambda name: config.get(s, name)  # noqa: E731
    name = "focus" if config.focus_enabled(s) else get("CRAWLER_EXT_STRATEGY")
    if name == "default":
        rank_file = get("CRAWLER_EXT_FRONTIER_HOST_RANK_FILE")
        return DefaultStrategy(Scorer(get("CRAWLER_EXT_FRONTIER_BANDS"),
                                      load_host_ranks(rank_file) if rank_file else None),
                               refresh_share=get("CRAWLER_EXT_RECRAWL_SHARE"))
    if name == "focus":  # (named by its path, as Scrapy names components: no package cycle)
        from scrapy.utils.misc import load_object

        return load_object(STRATEGIES["focus"])(get("CRAWLER_EXT_FRONTIER_BANDS"),
                                                get("CRAWLER_EXT_RECRAWL_SHARE"))
    cls = strategy_class(name)
    strategy = build_from_crawler(cls, crawler) if hasattr(cls, "from_crawler") else cls()
    _check_strategy(name, strategy, ("bands", "refresh_share"))
    if strategy.bands != get("CRAWLER_EXT_FRONTIER_BANDS"):
        raise config.ConfigError(f"CRAWLER_EXT_STRATEGY={name} scores into {strategy.bands} "
                                 f"bands: set CRAWLER_EXT_FRONTIER_BANDS to the same")
    return strategy


def strategy_class(name: str) -> type:
    """The class ``CRAWLER_EXT_STRATEGY`` names (``scrapy crawl`` asks before it starts:
    ConfigError, one line, if it cannot be loaded or is no crawling strategy)."""
    from scrapy.utils.misc import load_object

    try:
        cls = load_object(STRATEGIES.get(name, name))
    except (ImportError, NameError, ValueError, AttributeError) as exc:
        raise config.ConfigError(f"CRAWLER_EXT_STRATEGY={name}: cannot load it ({exc})") \
            from None
    _check_strategy(name, cls, ("link", "rediscovered", "page_crawled", "band", "weight"))
    return cls


def _check_strategy(name: str, strategy: object, members: tuple[str, ...]) -> None:
    missing = [member for member in members if not hasattr(strategy, member)]
    if missing or not callable(getattr(strategy, "link", None)):
        raise config.ConfigError(f"CRAWLER_EXT_STRATEGY={name}: not a crawling strategy "
                                 f"(no {', '.join(missing or ['link'])}; see "
                                 f"crawler_ext.frontier.strategy.CrawlingStrategy)")


class SchedulerBuild(NamedTuple):
    """What ``FrontierScheduler.from_crawler`` builds the scheduler from."""

    frontier: FrontierBackend
    journal: JournaledFrontier | None
    shared: SharedFrontier | None
    seen: Any  # the DUPEFILTER_CLASS instance
    strategy: CrawlingStrategy
    options: SchedulerOptions
    policies: Policies


def scheduler_build(crawler: Crawler) -> SchedulerBuild:
    """``FrontierScheduler``'s arguments from the crawler's settings."""
    from scrapy.utils.misc import build_from_crawler, load_object

    s = crawler.settings
    strategy = make_strategy(crawler)
    parts = make_frontier(crawler, strategy.refresh_share, getattr(strategy, "best_first", False))
    return SchedulerBuild(parts.frontier, parts.journal, parts.shared,
                          build_from_crawler(load_object(s["DUPEFILTER_CLASS"]), crawler),
                          strategy, scheduler_options(s), make_policies(crawler))


def scheduler_options(settings: Any) -> SchedulerOptions:
    """The scheduler's settings as plain values."""
    get = lambda name: config.get(settings, name)  # noqa: E731
    jobdir = job_dir(settings)
    slots = settings.getdict("DOWNLOAD_SLOTS")
    return SchedulerOptions(
        flush_interval=get("CRAWLER_EXT_FRONTIER_FLUSH_INTERVAL"),
        log_interval=get("CRAWLER_EXT_FRONTIER_LOG_INTERVAL"),
        snapshot_interval=get("CRAWLER_EXT_BLOOM_SNAPSHOT_INTERVAL"),
        rules_path=Path(jobdir) / "learned_rules.json" if jobdir else None,
        learn_min_evidence=get("CRAWLER_EXT_LEARN_MIN_EVIDENCE"),
        key_by_ip=get("CRAWLER_EXT_POLITENESS_KEY") == "ip",
        dns_prefetch=get("CRAWLER_EXT_DNS_PREFETCH"),
        robots_timeout=get("CRAWLER_EXT_ROBOTS_TIMEOUT"),
        # Scrapy's trackref registers the requests rebuilt from the frontier only when its
        # memory debugger reports them: the registration costs a weak reference per request
        # in flight, which paces the full garbage collections
        track_requests=settings.getbool("MEMDEBUG_ENABLED"),
        jobdir=jobdir,
        unscored_max=get("CRAWLER_EXT_FOCUS_MAX_UNSCORED")
        if config.focus_enabled(settings) and get("CRAWLER_EXT_FOCUS_MAX_UNSCORED") >= 0
        else None,
        slot_delays={key: float(conf.get("delay") or 0) for key, conf in slots.items()
                     if isinstance(conf, dict) and conf.get("delay")})


def make_policies(crawler: Crawler) -> Policies:
    """Admission (canonicalisation, trap filters, the SSRF guard), robots.txt and the
    blocklist, from the crawler's settings."""
    from crawler_ext.hosts.netguard import network_guard

    s, stats = crawler.settings, crawler.stats
    admission = Admission(admission_rules(s),
                          on_reject=lambda reason: stats.inc_value(f"admission/rejected/{reason}"),
                          guard=network_guard(s))
    return Policies(admission, make_robots(s), Blocklist(config.get(s, "CRAWLER_EXT_BLOCKLIST")))


def admission_rules(settings: Any) -> AdmissionRules:
    """The trap filters' and canonicalisation's rules from ``CRAWLER_EXT_*`` settings."""
    get = lambda name: config.get(settings, name)  # noqa: E731
    return AdmissionRules(
        strip_tracking=get("CRAWLER_EXT_URL_STRIP_TRACKING"),
        strip_session=get("CRAWLER_EXT_URL_STRIP_SESSION"),
        sort_query=get("CRAWLER_EXT_URL_SORT_QUERY"),
        max_url_length=get("CRAWLER_EXT_MAX_URL_LENGTH"),
        max_path_depth=get("CRAWLER_EXT_MAX_PATH_DEPTH"),
        max_repeated_segments=get("CRAWLER_EXT_MAX_REPEATED_SEGMENTS"),
        host_page_budget=get("CRAWLER_EXT_HOST_PAGE_BUDGET"),
        pattern_cap=get("CRAWLER_EXT_HOST_PATTERN_CAP"),
        max_pattern_chain=get("CRAWLER_EXT_MAX_PATTERN_CHAIN"),
    )


def make_robots(settings: Any) -> RobotsCache | None:
    """The robots.txt cache, or None when robots.txt is not obeyed."""
    if not settings.getbool("ROBOTSTXT_OBEY"):
        return None
    get = lambda name: config.get(settings, name)
    return RobotsCache(agent=get("CRAWLER_EXT_ROBOTS_AGENT")
                       or _product_token(settings.get("USER_AGENT")),
                       ttl=get("CRAWLER_EXT_ROBOTS_TTL"),
                       retry_base=get("CRAWLER_EXT_ROBOTS_RETRY_BASE"),
                       max_failures=get("CRAWLER_EXT_ROBOTS_MAX_FAILURES"))


def _product_token(user_agent: str | None) -> str:
    """``crawler_ext/0.1 (+https://...)`` -> ``crawler_ext``, the name robots.txt groups use."""
    return (user_agent or "").split("/")[0].split()[0] if user_agent else "*"


def make_store(settings: Any, bands: int) -> FrontierStore:
    backend = config.get(settings, "CRAWLER_EXT_FRONTIER_BACKEND")
    jobdir = job_dir(settings)
    if backend == "memory" and jobdir and \
            settings.getpriority("CRAWLER_EXT_FRONTIER_BACKEND") is None:
        # JOBDIR means "resumable" in Scrapy; a memory frontier would forget its queue while
        # the seen set remembers it, so a resumed crawl would stop at once
        if (Path(jobdir) / "frontier.sqlite3").exists():  # a crawl begun before the disk store
            logger.info("Frontier: JOBDIR holds a sqlite frontier; resuming it")
            backend = "sqlite"
        else:
            logger.info("Frontier: JOBDIR is set, so the frontier is kept on disk under it")
            backend = "disk"
    if backend == "memory":
        return MemoryStore(bands)
    if backend == "disk":
        path = _store_path(settings, "disk", "CRAWLER_EXT_FRONTIER_DISK_PATH", "frontier")
        engine = config.get(settings, "CRAWLER_EXT_FRONTIER_DISK_ENGINE")
        if engine == "rocksdb" and importlib.util.find_spec("rocksdict") is None:
            raise config.ConfigError(
                "CRAWLER_EXT_FRONTIER_DISK_ENGINE=rocksdb needs the rocksdict package "
                "(pip install rocksdict), or use CRAWLER_EXT_FRONTIER_DISK_ENGINE=sqlite")
        return DiskStore(path, bands, make_engine(engine))
    if backend == "sqlite":
        return SqliteStore(_store_path(settings, "sqlite", "CRAWLER_EXT_FRONTIER_SQLITE_PATH",
                                       "frontier.sqlite3"), bands)
    raise config.ConfigError(f"CRAWLER_EXT_FRONTIER_BACKEND={backend}: a shared backend, "
                             f"built by {SHARED_BACKENDS.get(backend)}")


def _store_path(settings: Any, backend: str, setting: str, name: str) -> str:
    """Where a durable store lives: its own setting, else ``name`` under JOBDIR."""
    path = config.get(settings, setting)
    if path is not None:
        return path
    jobdir = job_dir(settings)
    if not jobdir:
        raise config.ConfigError(f"CRAWLER_EXT_FRONTIER_BACKEND={backend} needs JOBDIR (or "
                                 f"{setting}) to know where to keep the frontier")
    return str(Path(jobdir) / name)
