"""``SitemapMiddleware``: discovery from sitemaps (``CRAWLER_EXT_SITEMAPS_ENABLED``).

When the frontier reads a site's robots.txt, the sitemaps its ``Sitemap:`` lines list (or, if
none, ``/sitemap.xml``) are requested like any URL: through the frontier, so politeness,
robots.txt, the seen set and the SSRF guard apply.  This downloader middleware takes their
responses: it parses them with Scrapy's own sitemap reader (lxml, entities and huge trees off),
gunzips ``.gz`` sitemaps within ``CRAWLER_EXT_SITEMAPS_MAX_BYTES``, follows a sitemap index
to ``CRAWLER_EXT_SITEMAPS_MAX_DEPTH`` levels, and hands at most
``CRAWLER_EXT_SITEMAPS_MAX_URLS`` URLs per sitemap to the engine, where admission judges them
as links.  A URL's ``<lastmod>`` is change evidence for recrawl mode (``sitemap_lastmod``).
The sitemap itself never reaches the spider.  A bad sitemap (not XML, too big, not a sitemap)
is counted in ``sitemaps/errors`` and skipped; the crawl goes on.
"""

from __future__ import annotations

import logging
from datetime import datetime, timezone
from typing import Any

from scrapy import Request
from scrapy.exceptions import IgnoreRequest
from scrapy.utils.gz import gunzip
from scrapy.utils.sitemap import Sitemap

from crawler_ext import config
from crawler_ext.signals import sitemap_lastmod, sitemaps_found

__all__ = ["SITEMAP_META", "SitemapMiddleware", "parse_lastmod"]

logger = logging.getLogger(__name__)

#: meta key of a sitemap request: its depth (0: listed by robots.txt)
SITEMAP_META = "crawler_ext_sitemap"


def parse_lastmod(text: str | None) -> float | None:
    """A W3C datetime (``2024-05-01``, ``2024-05-01T10:00:00+02:00``) as unix time."""
    if not text:
        return None
    text = text.strip().replace("Z", "+00:00")
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()


class SitemapMiddleware:
    def __init__(self, crawler: Any, max_urls: int, max_bytes: int, max_depth: int) -> None:
        self.crawler = crawler
        self.stats = crawler.stats
        self.max_urls = max_urls
        self.max_bytes = max_bytes
        self.max_depth = max_depth
        self._logged_error = False

    @classmethod
    def from_crawler(cls, crawler: Any) -> SitemapMiddleware:
        s = config.enabled_settings(crawler, "CRAWLER_EXT_SITEMAPS_ENABLED")
        mw = cls(crawler, config.get(s, "CRAWLER_EXT_SITEMAPS_MAX_URLS"),
                 config.get(s, "CRAWLER_EXT_SITEMAPS_MAX_BYTES"),
                 config.get(s, "CRAWLER_EXT_SITEMAPS_MAX_DEPTH"))
        crawler.signals.connect(mw.sitemaps_found, signal=sitemaps_found)
        return mw

    def sitemaps_found(self, origin: str, sitemaps: list[str], **_: Any) -> None:
        for url in sitemaps or [origin.rstrip("/") + "/sitemap.xml"]:
            self._request(url, 0)

    def _request(self, url: str, depth: int) -> None:
        try:
            # (depth 1, as Scrapy's SitemapSpider would give them: not start URLs, so they
            # bring no page-importance cash of their own)
            request = Request(url, meta={SITEMAP_META: depth, "depth": 1}, priority=1)
        except ValueError:
            self._error(url, "bad URL")
            return
        self.stats.inc_value("sitemaps/requested")
        self.crawler.engine.crawl(request)

    def process_response(self, request: Request, response: Any, spider: Any = None) -> Any:
        depth = request.meta.get(SITEMAP_META)
        if depth is None:
            return response
        if response.status != 200:
            self.stats.inc_value(f"sitemaps/status/{response.status}")
            raise IgnoreRequest(f"sitemap {request.url}: HTTP {response.status}")
        self._read(request.url, response.body, depth)
        raise IgnoreRequest(f"sitemap {request.url} read")  # not for the spider

    def _read(self, url: str, body: bytes, depth: int) -> None:
        if body[:2] == b"\x1f\x8b":
            try:
                body = gunzip(body, max_size=self.max_bytes)
            except (OSError, ValueError, EOFError) as exc:  # a truncated gzip: EOFError
                # (found by fuzzing); DecompressionMaxSizeExceeded is a ValueError
                self._error(url, f"gzip: {exc}")
                return
        if len(body) > self.max_bytes:
            self._error(url, f"larger than {self.max_bytes} bytes")
            return
        try:
            sitemap = Sitemap(body)
        except Exception as exc:  # noqa: BLE001 - lxml raises several types on junk
            self._error(url, f"not XML ({type(exc).__name__})")
            return
        if sitemap.type not in ("urlset", "sitemapindex"):
            self._error(url, f"not a sitemap (<{sitemap.type}>)")
            return
        self.stats.inc_value("sitemaps/fetched")
        count = 0
        for entry in sitemap:
            loc = (entry.get("loc") or "").strip()
            if not loc:
                continue
            if count >= self.max_urls:
                self.stats.inc_value("sitemaps/urls_dropped")
                continue
            count += 1
            if sitemap.type == "sitemapindex":
                if depth + 1 > self.max_depth:
                    self.stats.inc_value("sitemaps/too_deep")
                    continue
                self._request(loc, depth + 1)
                continue
            self.stats.inc_value("sitemaps/urls")
            lastmod = parse_lastmod(entry.get("lastmod"))
            if lastmod is not None:
                self.crawler.signals.send_catch_log(sitemap_lastmod, url=loc, lastmod=lastmod)
            try:
                self.crawler.engine.crawl(Request(loc, meta={"depth": 1}))
            except ValueError:
                self.stats.inc_value("sitemaps/urls_invalid")

    def _error(self, url: str, why: str) -> None:
        self.stats.inc_value("sitemaps/errors")
        if not self._logged_error:
            self._logged_error = True
            logger.warning("Sitemap %s skipped: %s (further bad sitemaps are counted in "
                           "sitemaps/errors)", url, why)
