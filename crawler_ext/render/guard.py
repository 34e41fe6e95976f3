"""What a rendering page may load, and when: the same guards as every other fetch.

The browser makes its own requests (scripts, JSON, images) while a page renders.  Each passes
:class:`SubrequestPolicy` -- its scheme, its resource type, its host (the page's own only),
its address (the SSRF guard) and robots.txt -- and the ones let through go one at a time,
each after the previous one's end plus the host's politeness delay (:class:`PagePacer`), so
the server sees the page's sub-requests as paced as the crawl's own fetches.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from urllib.parse import urlsplit

from crawler_ext.hosts.addresses import literal_address

__all__ = ["PagePacer", "SubrequestPolicy"]


class SubrequestPolicy:
    """``verdict(page_url, url, resource_type)``: None (allowed) or why not: ``scheme``,
    ``resource_type``, ``private_address``, ``other_host`` or ``robots``."""

    def __init__(self, blocked_types: frozenset[str],
                 address_allowed: Callable[[str], bool],
                 robots_allows: Callable[[str], bool] | None = None) -> None:
        self.blocked_types = blocked_types
        self._address_allowed = address_allowed
        self.robots_allows = robots_allows

    def verdict(self, page_url: str, url: str, resource_type: str) -> str | None:
        try:
            target, page = urlsplit(url), urlsplit(page_url)
            target_port, page_port = target.port, page.port
        except ValueError:
            return "scheme"
        if target.scheme not in ("http", "https"):
            return "scheme"  # data:, blob: never reach the route; ws:, file:, ftp: ...
        if resource_type in self.blocked_types:
            return "resource_type"
        host = (target.hostname or "").lower()
        address = literal_address(host)
        if address is not None and not self._address_allowed(str(address)):
            return "private_address"
        if (target.scheme, host, target_port) != \
                (page.scheme, (page.hostname or "").lower(), page_port):
            return "other_host"
        if self.robots_allows is not None and not self.robots_allows(url):
            return "robots"
        return None


class PagePacer:
    """The sub-requests of one rendering page: one at a time, each started at least
    ``delay`` seconds after the previous one (the page's own navigation included) ended."""

    def __init__(self, delay: float, clock: Callable[[], float] = time.time) -> None:
        self.delay = delay
        self._clock = clock
        self._lock = asyncio.Lock()
        self._next = 0.0
        self._holder: object | None = None

    async def acquire(self, request: object, deadline: float) -> bool:
        """Wait for the page's turn; False if ``deadline`` passes first (then nothing is
        held)."""
        remaining = deadline - self._clock()
        if remaining <= 0:
            return False
        try:
            await asyncio.wait_for(self._lock.acquire(), remaining)
        except asyncio.TimeoutError:
            return False
        wait = self._next - self._clock()
        if wait > 0:
            if self._clock() + wait > deadline:
                self._lock.release()
                return False
            await asyncio.sleep(wait)
        self._holder = request
        return True

    async def hold(self, request: object) -> None:
        """The page's navigation (already paced by the frontier) takes the first turn."""
        await self._lock.acquire()
        self._holder = request

    def finished(self, request: object) -> None:
        """A request ended (finished or failed): the next may start ``delay`` from now."""
        if self._holder is request and self._lock.locked():
            self._holder = None
            self._next = self._clock() + self.delay
            self._lock.release()
