"""Download failures of the open web, logged once per kind and then counted, instead of a
traceback each (the reference project's ``LOG_FORMATTER``):

    LOG_FORMATTER = "crawler_ext.monitoring.downloaderrors.DownloadErrorsOnce"

A request without an errback whose download failed for a reason the web gives -- a name that
does not resolve, a refused or reset connection, a time-out, a body over ``DOWNLOAD_MAXSIZE``,
a broken gzip, a redirect to a bad ``Location`` -- is logged once per exception type as one
WARNING line, and every one is counted in ``download_errors/<type>``; the traceback is kept at
DEBUG (``LOG_LEVEL = "DEBUG"`` shows each).  Any other exception -- a bug in a middleware, say
-- is logged by Scrapy as before, traceback and all.
"""

from __future__ import annotations

import logging
from typing import Any

from scrapy.logformatter import LogFormatter, LogFormatterResult

__all__ = ["DownloadErrorsOnce", "expected"]

logger = logging.getLogger(__name__)

#: the modules whose exceptions are the web's doing, not the crawler's
_WEB_MODULES = ("twisted.internet.error", "twisted.web._newclient", "twisted.web.client",
                "twisted.internet.defer", "scrapy.exceptions", "OpenSSL.SSL", "h2.exceptions",
                "scrapy.core.downloader.handlers.http11", "scrapy.core.http2", "zlib",
                "brotli", "gzip", "ssl", "aiohttp.client_exceptions", "httpx")


def expected(exc: BaseException) -> bool:
    """Whether a download failure is the web's doing (its type comes from the network or
    transfer code, or is an OSError or a bad URL's ValueError)."""
    if isinstance(exc, (OSError, ValueError)):
        return True
    return any(cls.__module__.startswith(_WEB_MODULES) for cls in type(exc).__mro__[:-2])


class DownloadErrorsOnce(LogFormatter):
    def __init__(self, stats: Any = None) -> None:
        self.stats = stats
        self._logged: set[str] = set()

    @classmethod
    def from_crawler(cls, crawler: Any) -> DownloadErrorsOnce:
        return cls(crawler.stats)

    def download_error(self, failure: Any, request: Any, spider: Any,
                       errmsg: str | None = None) -> LogFormatterResult:
        result = super().download_error(failure, request, spider, errmsg)
        exc = failure.value
        if not expected(exc):
            return result  # a bug, not the web: the traceback as Scrapy logs it
        kind = type(exc).__name__[:60]
        if self.stats is not None:
            self.stats.inc_value(f"download_errors/{kind}")
        if kind not in self._logged and len(self._logged) < 100:
            self._logged.add(kind)
            logger.warning("Download failed: %s: %s: %s (further %s failures are counted in "
                           "download_errors/%s; LOG_LEVEL=DEBUG shows their tracebacks)",
                           request.url[:200], kind, (str(exc) or "-")[:200], kind, kind)
        return {**result, "level": logging.DEBUG}
