"""The Scrapy add-on: ``ADDONS = {"crawler_ext.Addon": 100}`` switches the whole pack on.

It sets, at the add-on priority (so a project's own settings still win): the frontier scheduler,
the Bloom seen set, the caching DNS resolver, the SSRF guard (first downloader middleware),
the content processors (HTML, PDF, feeds, text, images), content dedup, the known-links spider
middleware, Scrapy's offsite and meta-refresh middlewares in a cheaper form that decides the
same (``crawler_ext.runtime.stock``), the WARC pipeline, the stats-file extension, the crawl
report's time series and, under the Twisted reactor, the HTTP handler that closes idle
connections after ``CRAWLER_EXT_KEEPALIVE_TIMEOUT``; and it turns off what would fight the
frontier: Scrapy's ``RobotsTxtMiddleware`` (the frontier fetches robots.txt itself, paced, and
``ROBOTSTXT_OBEY`` still decides), ``DOWNLOAD_DELAY`` and AutoThrottle (the frontier's
per-host politeness governs); ``CONCURRENT_ITEMS`` goes from 100 to 8 (Scrapy starts that many
tasks for each response's output, however little it yields). A project's own
``DOWNLOAD_DELAY`` (Scrapy's project template sets 1 s) becomes the frontier's per-host floor,
``CRAWLER_EXT_POLITENESS_MIN_DELAY``, unless that is set; a project that forces AutoThrottle on
keeps it, and the scheduler warns once at start. A project that sets another ``SCHEDULER``
contradicts the add-on: the crawl stops with one line. ``CRAWLER_EXT_*`` settings tune it as
usual.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy.settings import SETTINGS_PRIORITIES

from crawler_ext.config.scrapyside import component_path

__all__ = ["Addon"]

logger = logging.getLogger(__name__)

SCHEDULER = "crawler_ext.frontier.FrontierScheduler"
#: every dotted path of the pack's scheduler (the public one, its module, the adapter's)
SCHEDULER_PATHS = (SCHEDULER, "crawler_ext.frontier.scheduler.FrontierScheduler",
                   "crawler_ext.frontier.adapter.scheduler.FrontierScheduler")

#: http and https in Scrapy's reactorless mode: aiohttp with the guard's address pinning
REACTORLESS_HANDLER = "crawler_ext.hosts.aiopinning.GuardedAiohttpDownloadHandler"
#: http and https with the Twisted reactor: Scrapy's HTTP/1.1 handler, idle connections closed
#: after CRAWLER_EXT_KEEPALIVE_TIMEOUT
KEEPALIVE_HANDLER = "crawler_ext.hosts.keepalive.KeepAliveDownloadHandler"
#: setting -> value, set at the add-on priority
_SETTINGS = {
    "SCHEDULER": SCHEDULER,
    "DUPEFILTER_CLASS": "crawler_ext.dupefilter.BloomDupeFilter",
    "TWISTED_DNS_RESOLVER": "crawler_ext.dns.CachingResolver",
    "DOWNLOADER": "crawler_ext.hosts.slots.IdleSlotDownloader",
    "DOWNLOAD_DELAY": 0,
    "AUTOTHROTTLE_ENABLED": False,
    # Scrapy starts CONCURRENT_ITEMS asyncio tasks for the output of every response (100 by
    # default): a page yields one item and its links, so 92 of them start and end idle.
    # 8 is 16 % more pages per CPU-second on the broad web (benchmarks/run.py broad)
    "CONCURRENT_ITEMS": 8,
}
#: component dictionaries: (setting, component, order); order None switches a component off
_COMPONENTS = [
    ("DOWNLOADER_MIDDLEWARES", "crawler_ext.hosts.netguard.NetworkGuardMiddleware", 10),
    ("DOWNLOADER_MIDDLEWARES", "crawler_ext.dedup.middleware.ContentDedupMiddleware", 450),
    ("DOWNLOADER_MIDDLEWARES", "crawler_ext.processors.middleware.ProcessorMiddleware", 452),
    # off unless CRAWLER_EXT_RECRAWL_ENABLED / _SITEMAPS_ENABLED / _RENDER_ENABLED
    ("DOWNLOADER_MIDDLEWARES", "crawler_ext.recrawl.middleware.RecrawlMiddleware", 440),
    ("DOWNLOADER_MIDDLEWARES", "crawler_ext.recrawl.sitemaps.SitemapMiddleware", 460),
    ("DOWNLOADER_MIDDLEWARES", "crawler_ext.render.middleware.RenderMiddleware", 455),
    ("DOWNLOADER_MIDDLEWARES", "scrapy.downloadermiddlewares.robotstxt.RobotsTxtMiddleware",
     None),
    ("SPIDER_MIDDLEWARES", "crawler_ext.frontier.knownlinks.KnownLinksMiddleware", 50),
    ("SPIDER_MIDDLEWARES", "crawler_ext.focus.middleware.FocusMiddleware", 60),
    ("ITEM_PIPELINES", "crawler_ext.warc.pipeline.WarcPipeline", 800),
    ("EXTENSIONS", "crawler_ext.statsfile.StatsFile", 0),
    ("EXTENSIONS", "crawler_ext.runtime.collector.CollectorTuning", 0),
    ("EXTENSIONS", "crawler_ext.report.CrawlTimeSeries", 0),
    ("EXTENSIONS", "crawler_ext.control.ControlExtension", 0),  # CRAWLER_EXT_CONTROL_ENABLED
    ("EXTENSIONS", "crawler_ext.linkgraph.LinkGraphExtension", 0),  # CRAWLER_EXT_LINKGRAPH_DIR
    ("EXTENSIONS", "crawler_ext.events.EventsExtension", 0),  # CRAWLER_EXT_EVENTS_URL
]


class AddonConflict(ValueError):
    """A project setting contradicts the add-on."""


class Addon:
    """``ADDONS = {"crawler_ext.Addon": 100}``."""

    def update_settings(self, settings: Any) -> None:
        from scrapy.utils.misc import load_object

        addon = SETTINGS_PRIORITIES["addon"]
        scheduler = settings.get("SCHEDULER")
        if settings.getpriority("SCHEDULER") > addon and \
                component_path(scheduler) not in SCHEDULER_PATHS:
            raise AddonConflict(
                f"crawler_ext.Addon needs SCHEDULER = {SCHEDULER!r}, but the project sets "
                f"{component_path(scheduler)!r}: remove that setting or the add-on")
        notes = []
        delay_priority = settings.getpriority("DOWNLOAD_DELAY") or 0
        delay = settings.getfloat("DOWNLOAD_DELAY")
        if delay_priority > addon and delay > 0:
            # the project's delay (Scrapy's project template sets 1 s) is honoured per host by
            # the frontier instead of being added on top of it
            if settings.getpriority("CRAWLER_EXT_POLITENESS_MIN_DELAY") is None:
                settings.set("CRAWLER_EXT_POLITENESS_MIN_DELAY", delay, priority=delay_priority)
                if settings.getpriority("CRAWLER_EXT_POLITENESS_MAX_DELAY") is None and \
                        delay > _default_max_delay():
                    settings.set("CRAWLER_EXT_POLITENESS_MAX_DELAY", delay,
                                 priority=delay_priority)
            settings.set("DOWNLOAD_DELAY", 0, priority=delay_priority)
            notes.append(f"the project's DOWNLOAD_DELAY={delay:g} is applied per host by the "
                         f"frontier (CRAWLER_EXT_POLITENESS_MIN_DELAY="
                         f"{settings['CRAWLER_EXT_POLITENESS_MIN_DELAY']})")
        for name, value in _SETTINGS.items():
            settings.set(name, value, priority="addon")
        if _render_enabled(settings):
            # app shells go to headless Chromium through scrapy-playwright's download handler
            # (plain requests pass through it unchanged)
            from crawler_ext.render.browser import require_render
            from crawler_ext.render.middleware import HANDLER

            require_render(settings)
            for scheme in ("http", "https"):
                settings["DOWNLOAD_HANDLERS"].set(scheme, HANDLER, priority="addon")
            notes.append("app shells rendered in headless Chromium")
        elif not settings.getbool("TWISTED_REACTOR_ENABLED", True):
            # Scrapy's reactorless mode downloads with aiohttp, which resolves names itself:
            # its connections go to the addresses the SSRF guard checked
            # (Scrapy puts its aiohttp handler in DOWNLOAD_HANDLERS_BASE at the project
            # priority after the add-ons ran: ours goes in at that priority too, unless the
            # project chose a handler itself)
            _set_handler(settings, REACTORLESS_HANDLER, "project")
        else:
            _set_handler(settings, KEEPALIVE_HANDLER, "addon")
        kept = []
        replaced = _replace_stock_middlewares(settings)
        if replaced:
            notes.append(f"Scrapy's {' and '.join(replaced)} in a cheaper form that decides "
                         f"the same")
        for name, path, order in _COMPONENTS:
            if order is None:
                # switched off under the import path Scrapy's *_BASE dict enables it by (a
                # class key would not match it); a project that lists it keeps its choice
                settings[name].set(path, None, priority="addon")
            elif _overridden(settings, name, path):
                kept.append(path)  # the project set its own order (or None): it wins
            else:
                settings.set_in_component_priority_dict(name, load_object(path), order)
        logger.info(
            "crawler_ext add-on: frontier scheduler, Bloom seen set, caching DNS resolver, SSRF "
            "guard, content dedup, known-links middleware, WARC pipeline, stats file and crawl "
            "report on; Scrapy's RobotsTxtMiddleware, DOWNLOAD_DELAY and AutoThrottle off (the "
            "frontier fetches robots.txt and paces each host)%s",
            "".join(f"; {note}" for note in notes + (
                [f"the project's own order kept for {', '.join(kept)}"] if kept else [])))


def _replace_stock_middlewares(settings: Any) -> list[str]:
    """Scrapy's offsite and meta-refresh middlewares replaced by the pack's cheaper ones at
    their order (``crawler_ext.runtime.stock``), unless the project lists Scrapy's own; the
    names of those replaced."""
    from crawler_ext.runtime.stock import REPLACED

    base = settings.getdict("DOWNLOADER_MIDDLEWARES_BASE")
    listed = {component_path(key) for key in settings.getdict("DOWNLOADER_MIDDLEWARES")}
    replaced = []
    for stock, ours in REPLACED.items():
        if stock in listed or base.get(stock) is None:
            continue
        settings["DOWNLOADER_MIDDLEWARES"].set(stock, None, priority="addon")
        settings["DOWNLOADER_MIDDLEWARES"].set(ours, base[stock], priority="addon")
        replaced.append(stock.rsplit(".", 1)[1])
    return replaced


def _default_max_delay() -> float:
    from crawler_ext import config

    return float(config.SETTINGS["CRAWLER_EXT_POLITENESS_MAX_DELAY"].default)


def _render_enabled(settings: Any) -> bool:
    from crawler_ext import config

    return bool(config.get(settings, "CRAWLER_EXT_RENDER_ENABLED"))


def _overridden(settings: Any, name: str, path: str) -> bool:
    """Whether the project lists the component itself (by any of its public paths)."""
    short = path.rsplit(".", 1)[1]
    paths = [component_path(key) for key in settings.getdict(name)]
    return any(p.rsplit(".", 1)[1] == short and p.startswith("crawler_ext.") for p in paths)


def _set_handler(settings: Any, handler: str, priority: str) -> None:
    """``handler`` for http and https, unless the project chose its own."""
    handlers = settings["DOWNLOAD_HANDLERS"]
    for scheme in ("http", "https"):
        if handlers.getpriority(scheme) is None:
            handlers.set(scheme, handler, priority=priority)
