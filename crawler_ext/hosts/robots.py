"""robots.txt per RFC 9309, as a prerequisite of each origin (scheme, host, port) in the frontier.

``RobotsCache`` is pure state: what is known of each origin and what to do with a URL of it.

* 2xx: the first ``max_bytes`` (default 512 KiB) are parsed with Protego (most specific
  user-agent group, longest match wins, ``*`` and ``$``); ``Crawl-delay`` and ``Sitemap``
  lines are kept.
* 4xx (incl. 404, no robots.txt): allow all.
* 5xx or unreachable: disallow all for now; robots.txt is fetched again after a backoff
  (``retry_base`` doubling), and after ``max_failures`` failures in a row the origin's queued
  URLs are dropped, so one broken host cannot keep a crawl alive.  While it waits for a retry
  the frontier parks the origin's key: its URLs are kept, but a crawl with nothing else to do
  finishes without waiting for them (resumable under JOBDIR).
* Every answer is cached at most ``ttl`` seconds (24 h by default), then fetched again.

Redirects (up to 5) are followed by the middleware that fetches robots.txt.

Origins whose robots.txt reads the same byte for byte (a hosting provider's, a CMS's default)
share one parsed copy (Protego does not change it as it answers): a broad crawl keeps one
state a host, and the rules once.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from enum import Enum
from urllib.parse import urlsplit

from protego import Protego

from crawler_ext.recent import RecentMap

__all__ = ["Decision", "OriginRobots", "RobotsCache", "origin_of"]


def origin_of(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


class Decision(Enum):
    FETCH = "fetch"  # allowed: go on
    DISALLOWED = "disallowed"  # forbidden by robots.txt: drop the URL
    NEED_ROBOTS = "need_robots"  # fetch robots.txt first
    WAIT = "wait"  # robots.txt is being fetched: hold the URL a moment
    RETRY = "retry"  # robots.txt failed (5xx, unreachable): hold the URL until the retry
    GIVE_UP = "give_up"  # robots.txt kept failing: drop the URL


@dataclass(slots=True)
class OriginRobots:  # (one per origin a crawl met: no __dict__)
    parser: Protego | None = None
    allow_all: bool = False
    disallow_all: bool = False
    expires: float = 0.0
    failures: int = 0
    retry_at: float = 0.0
    fetching: bool = False
    fetching_since: float = 0.0
    crawl_delay: float | None = None
    sitemaps: tuple[str, ...] = ()


class RobotsCache:
    def __init__(self, agent: str = "crawler_ext", ttl: float = 86_400.0,
                 retry_base: float = 60.0, max_failures: int = 3,
                 max_bytes: int = 512 * 1024, fetch_timeout: float = 120.0) -> None:
        self.agent = agent
        self.ttl = min(ttl, 86_400.0)
        self.retry_base = retry_base
        self.max_failures = max_failures
        self.max_bytes = max_bytes
        self.fetch_timeout = fetch_timeout
        self.origins: dict[str, OriginRobots] = {}
        # robots.txt bodies parsed lately, by digest: origins with the same body share them
        self._parsed: RecentMap = RecentMap(4_096)

    def decide(self, url: str, now: float) -> tuple[Decision, float]:
        """What to do with ``url`` now; the float is the retry time for WAIT."""
        state = self.origins.get(origin_of(url))
        if state is None or (state.expires <= now and not state.fetching and not state.failures):
            return Decision.NEED_ROBOTS, 0.0
        if state.fetching:
            if now - state.fetching_since < self.fetch_timeout:
                return Decision.WAIT, now + 0.5
            # no final answer (e.g. more redirects than REDIRECT_MAX_TIMES): RFC 9309 lets a
            # crawler treat that as unavailable, i.e. like 4xx
            state.fetching, state.allow_all, state.expires = False, True, now + self.ttl
            return Decision.FETCH, 0.0
        if state.disallow_all:
            if state.failures >= self.max_failures:
                return Decision.GIVE_UP, 0.0
            if state.retry_at <= now:
                return Decision.NEED_ROBOTS, 0.0
            return Decision.RETRY, state.retry_at
        if state.allow_all or state.parser is None:
            return Decision.FETCH, 0.0
        if state.parser.can_fetch(url, self.agent):
            return Decision.FETCH, 0.0
        return Decision.DISALLOWED, 0.0

    def of_host(self, host: str) -> dict[str, OriginRobots]:
        """The origins of ``host`` (any scheme and port) this cache knows."""
        return {origin: state for origin, state in self.origins.items()
                if urlsplit(origin).hostname == host}

    def expire(self, origin: str) -> bool:
        """Fetch ``origin``'s robots.txt again before its next URL (an operator asked);
        False if it is being fetched or unknown."""
        state = self.origins.get(origin)
        if state is None or state.fetching:
            return False
        state.expires, state.failures, state.retry_at = 0.0, 0, 0.0
        state.disallow_all = False
        return True

    def fetching(self, origin: str, now: float = 0.0) -> None:
        state = self.origins.setdefault(origin, OriginRobots())
        state.fetching, state.fetching_since = True, now

    def adopt(self, origin: str, status: int | None, body: bytes, fetched_at: float,
              now: float) -> bool:
        """Take an answer another worker fetched at ``fetched_at``, unless it is stale or ours
        is as fresh; True if taken."""
        expires = fetched_at + self.ttl
        state = self.origins.get(origin)
        if expires <= now or (state is not None and (state.fetching or state.expires >= expires - 1)):
            return False
        self.fetched(origin, status, body, fetched_at)
        return True

    def fetched(self, origin: str, status: int | None, body: bytes, now: float) -> OriginRobots:
        """Record a robots.txt answer (``status`` None: unreachable)."""
        state = self.origins.setdefault(origin, OriginRobots())
        state.fetching = False
        state.parser, state.allow_all, state.disallow_all = None, False, False
        state.crawl_delay, state.sitemaps = None, ()
        if status is None or status >= 500:
            state.failures += 1
            state.disallow_all = True
            state.retry_at = now + self.retry_base * 2 ** (state.failures - 1)
            state.expires = state.retry_at
            return state
        state.failures = 0
        state.expires = now + self.ttl
        if 200 <= status < 300:
            state.parser = self._parse(body[:self.max_bytes])
            delay = state.parser.crawl_delay(self.agent)
            state.crawl_delay = float(delay) if delay is not None else None
            state.sitemaps = tuple(state.parser.sitemaps)
        else:  # 4xx (and 3xx left unresolved): no restrictions
            state.allow_all = True
        return state

    def _parse(self, body: bytes) -> Protego:
        digest = hashlib.blake2b(body, digest_size=16).digest()
        parser = self._parsed.get(digest)
        if parser is None:
            parser = self._parsed[digest] = Protego.parse(
                body.decode("utf-8", errors="replace"))
        return parser
