"""How long an idle connection to a host stays open: :class:`KeepAliveDownloadHandler` is
Scrapy's HTTP/1.1 download handler whose connection pool closes a kept-alive connection after
``CRAWLER_EXT_KEEPALIVE_TIMEOUT`` seconds idle (15 by default) instead of Twisted's 240.  Its
pool also connects a name the SSRF guard pinned straight to the pinned address
(:mod:`crawler_ext.hosts.direct`).

A broad crawl comes back to a host every few seconds at best (its politeness delay) and
often after half a minute; with Twisted's 240 s a crawl of 10,000 hosts holds thousands of
idle sockets, on its side and on the servers', each about 2 KB of Twisted's objects on the
crawler's (``docs/broad.md`` has the measurement).  A crawl of a few hosts comes back
within seconds and keeps its connections.  The
add-on sets it for http and https when the Twisted reactor downloads and the project chose
no handler of its own::

    DOWNLOAD_HANDLERS = {"http": "crawler_ext.hosts.keepalive.KeepAliveDownloadHandler",
                         "https": "crawler_ext.hosts.keepalive.KeepAliveDownloadHandler"}
"""

from __future__ import annotations

from typing import Any

from scrapy.core.downloader.handlers.http11 import HTTP11DownloadHandler

from crawler_ext import config
from crawler_ext.hosts.direct import DirectConnectionPool

__all__ = ["KeepAliveDownloadHandler"]


class KeepAliveDownloadHandler(HTTP11DownloadHandler):
    def __init__(self, crawler: Any) -> None:
        super().__init__(crawler)
        from twisted.internet import reactor

        # Scrapy's pool, connecting pinned names straight to their addresses
        pool = DirectConnectionPool(reactor, persistent=True, inc=crawler.stats.inc_value)
        pool.maxPersistentPerHost = self._pool.maxPersistentPerHost
        pool._factory = self._pool._factory
        self._pool = pool
        # an instance attribute over HTTPConnectionPool's class-wide 240 s
        self._pool.cachedConnectionTimeout = config.get(
            crawler.settings, "CRAWLER_EXT_KEEPALIVE_TIMEOUT")
