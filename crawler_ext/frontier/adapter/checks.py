"""Settings that fight the frontier, warned about once when the scheduler opens."""

from __future__ import annotations

import logging
from typing import Any

from scrapy.utils.misc import load_object

__all__ = ["check_settings"]

logger = logging.getLogger(__name__)


def check_settings(settings: Any, obeys_robots: bool, max_in_flight: int) -> None:
    """Warn of a second delay (DOWNLOAD_DELAY, AutoThrottle), a second robots.txt fetcher,
    the SSRF guard missing from the download path, and per-domain concurrency below the
    frontier's in-flight limit."""
    s = settings
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
    if obeys_robots and RobotsTxtMiddleware in mws:
        logger.warning("Frontier: the frontier fetches robots.txt itself (RFC 9309); disable "
                       "Scrapy's RobotsTxtMiddleware in DOWNLOADER_MIDDLEWARES to avoid a "
                       "second, unpaced robots.txt fetch")
    if NetworkGuardMiddleware not in mws:
        logger.warning("Frontier: crawler_ext.netguard.NetworkGuardMiddleware is not in "
                       "DOWNLOADER_MIDDLEWARES: redirects to IP literals are not checked "
                       "by the SSRF guard")
    if s.getint("CONCURRENT_REQUESTS_PER_DOMAIN") < max_in_flight:
        logger.warning("Frontier: CONCURRENT_REQUESTS_PER_DOMAIN is below "
                       "CRAWLER_EXT_POLITENESS_MAX_IN_FLIGHT: requests will wait in "
                       "Scrapy's slot queues")
