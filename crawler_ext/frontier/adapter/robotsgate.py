"""robots.txt as the prerequisite of an origin's URLs (RFC 9309), fetched by the frontier.

When a URL's turn comes (:meth:`RobotsGate.check`) the origin's robots.txt decides: fetch,
wait (robots.txt is being fetched, or a failed fetch waits for its retry), drop (disallowed,
or robots.txt kept failing), or fetch robots.txt first -- a substitute entry (``R<origin>``)
that the frontier dispatches on the origin's politeness key, so robots.txt is paced like any
fetch.  A robots.txt redirect comes back through the scheduler and waits on its target's key
as an ``H<token>`` entry (:meth:`redirected`), behind the SSRF guard and politeness too.

The answer is read from ``response_downloaded`` (every status, before any middleware):
:meth:`answered`.  Nothing here knows Scrapy's engine; the scheduler wires the signals.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from typing import Any

from scrapy import Request

from crawler_ext.frontier.adapter.events import Decisions
from crawler_ext.frontier.contract import FrontierBackend
from crawler_ext.frontier.core import DROP
from crawler_ext.frontier.entries import RobotsHopRecord, RobotsRecord, decode, encode
from crawler_ext.frontier.keys import politeness_key
from crawler_ext.frontier.storage import Entry
from crawler_ext.hosts.robots import Decision, RobotsCache, origin_of
from crawler_ext.meta import ROBOTS_META

__all__ = ["ROBOTS_META", "ROBOTS_PRIORITY", "RobotsGate", "allow_all"]

logger = logging.getLogger(__name__)

#: the frontier's own robots.txt fetches go before any other request of their key
ROBOTS_PRIORITY = 1000


def allow_all(url: str) -> bool:
    """What ``robots_allows`` answers when robots.txt is not obeyed."""
    return True


class RobotsGate:
    def __init__(self, cache: RobotsCache, frontier: FrontierBackend,
                 key_of: Callable[[str], str], inc: Callable[[str, int], None],
                 on_sitemaps: Callable[[str, list[str]], None] | None = None,
                 decisions: Decisions | None = None, timeout: float = 0.0) -> None:
        self.cache = cache
        self.timeout = timeout  # seconds a robots.txt fetch may take (0: DOWNLOAD_TIMEOUT)
        self.frontier = frontier
        self._key_of = key_of  # host -> its politeness key (the host, or its address)
        self._inc = inc
        self._on_sitemaps = on_sitemaps
        self._hops: dict[int, Request] = {}  # robots.txt redirects waiting in the frontier
        self._tokens = 0
        self._failure_logged = False
        self._parked_logged = False
        # told of each URL refused and origin parked here (the event stream)
        self.decisions = decisions if decisions is not None else Decisions()

    def allows(self, url: str) -> bool:
        """Whether robots.txt, as cached now, lets ``url`` be fetched (an origin whose
        robots.txt is not known yet: no).  The rendering pool asks it."""
        return self.cache.decide(url, time.time())[0] is Decision.FETCH

    # -- a URL's turn ----------------------------------------------------------------------
    def check(self, entry: Entry, url: str, now: float) -> Entry | float | str:
        """The entry itself, robots.txt to fetch first, a time to wait until, or DROP."""
        if not url[:6].lower().startswith(("http:", "https:")):
            return entry
        decision, when = self.cache.decide(url, now)
        if decision is Decision.FETCH:
            return entry
        if decision is Decision.NEED_ROBOTS:
            origin = origin_of(url)
            self.cache.fetching(origin, now)
            return Entry(entry.key, 0, encode(RobotsRecord(origin)))
        if decision is Decision.WAIT:
            return when
        if decision is Decision.RETRY:
            # robots.txt failed: the URLs wait for its retry, but the crawl does not wait for
            # them -- the key is parked (kept; resumable under JOBDIR)
            self.frontier.park(entry.key, when)
            self._inc("robots/parked", 1)
            self.decisions.tell("parked", entry.key, "robots_failed", when)
            if not self._parked_logged:
                self._parked_logged = True
                logger.info("robots.txt of %s failed: its URLs wait for the retry in %.0f s, "
                            "parked (kept, but the crawl may finish without them; further "
                            "ones are counted in robots/parked)", origin_of(url), when - now)
            return when
        reason = "disallowed" if decision is Decision.DISALLOWED else "gave_up"
        self._inc(f"robots/{reason}", 1)
        self.decisions.tell("refused", url, f"robots_{reason}")
        return DROP

    def request(self, origin: str, callback: Any, errback: Any) -> Request:
        """The robots.txt fetch of ``origin`` (RedirectMiddleware follows its redirects, which
        come back to the scheduler and :meth:`redirected`)."""
        meta = {ROBOTS_META: origin, "dont_retry": True, "dont_merge_cookies": True}
        if self.timeout:
            meta["download_timeout"] = self.timeout
        return Request(origin + "/robots.txt", callback=callback, errback=errback,
                       dont_filter=True, priority=ROBOTS_PRIORITY, meta=meta)

    # -- redirects -------------------------------------------------------------------------
    def redirected(self, request: Request, host: str) -> Entry:
        """The entry that queues a robots.txt redirect on its target host's key."""
        self._tokens += 1
        self._hops[self._tokens] = request
        return Entry(self._key_of(host), 0, encode(RobotsHopRecord(self._tokens)),
                     priority=ROBOTS_PRIORITY)

    def hop(self, entry: Entry) -> Request | None:
        """The redirect an ``H`` entry stands for (None: lost in a restart)."""
        return self._hops.get(_hop_token(entry))

    def take_hop(self, entry: Entry) -> Request | None:
        return self._hops.pop(_hop_token(entry), None)

    # -- answers ---------------------------------------------------------------------------
    def answered(self, request: Request, status: int | None, body: bytes,
                 final: bool = False) -> None:
        """A robots.txt answer (None: unreachable).  A 3xx is followed by RedirectMiddleware
        unless ``final`` (more redirects than REDIRECT_MAX_TIMES: robots.txt unavailable)."""
        origin = request.meta[ROBOTS_META]
        if status is not None and 300 <= status < 400 and not final:
            return
        now = time.time()
        state = self.cache.fetched(origin, status, body, now)
        self._inc(f"robots/status/{status if status is not None else 'unreachable'}", 1)
        key = self._key_of(politeness_key(origin + "/"))
        if state.crawl_delay is not None:
            self._inc("robots/crawl_delay", 1)
        self.frontier.set_crawl_delay(key, state.crawl_delay)
        self.frontier.robots_answered(key, origin, status, body, now)
        if state.sitemaps:
            self._inc("robots/sitemaps", len(state.sitemaps))
        if self._on_sitemaps is not None and status is not None and status < 500:
            self._on_sitemaps(origin, list(state.sitemaps))  # (none listed: the site may have one)

    def failed(self, failure: Any, status: int | None) -> None:
        """The errback of a robots.txt fetch; ``status``: what the response said, if any."""
        request = getattr(failure, "request", None)
        if status is not None:
            if 300 <= status < 400 and request is not None:  # a redirect not followed
                self.answered(request, status, b"", final=True)
            return  # any other status was recorded from response_downloaded
        if not self._failure_logged:
            self._failure_logged = True
            logger.warning("robots.txt %s could not be fetched: %s (its URLs wait for a retry; "
                           "further failures are counted in robots/status/unreachable)",
                           request.url if request is not None else "", failure.getErrorMessage())

    def adopt(self, origin: str, status: int | None, body: bytes, fetched_at: float) -> None:
        """A robots.txt answer another worker fetched, leased with its key."""
        if self.cache.adopt(origin, status, body, fetched_at, time.time()):
            self._inc("robots/shared", 1)


def _hop_token(entry: Entry) -> int:
    record = decode(entry.data)
    assert isinstance(record, RobotsHopRecord)
    return record.token
