"""The way out of the frontier: the entry whose politeness key may be contacted now, checked
against the blocklist and robots.txt when its turn comes, becomes the request the engine gets.

The gate answers for each entry about to leave: go; a prerequisite first (the origin's
robots.txt, fetched on the same key); hold the key until a time; or drop it (blocked, or
disallowed).  Robots.txt fetches and their redirects are built here, not stored; a stored
request is decoded, and its trap-pattern chain restored.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from scrapy import Request

from crawler_ext.admission import Admission
from crawler_ext.frontier.adapter.inflight import InFlight
from crawler_ext.frontier.adapter.requests import StoredRequests
from crawler_ext.frontier.adapter.robotsgate import RobotsGate
from crawler_ext.frontier.adapter.roles import Gates, Port
from crawler_ext.frontier.contract import FrontierBackend
from crawler_ext.frontier.controls import KeyControls
from crawler_ext.frontier.core import DROP
from crawler_ext.frontier.entries import (CHAIN, ROBOTS_HOP, RobotsRecord, decode, is_robots,
                                          kind_of)
from crawler_ext.frontier.storage import Entry
from crawler_ext.frontier.strategy import CrawlingStrategy
from crawler_ext.hosts.blocklist import Blocklist
from crawler_ext.meta import IMPORTANCE_META

__all__ = ["Dispatcher"]


class Dispatcher:
    def __init__(self, frontier: FrontierBackend, gates: Gates, requests: StoredRequests,
                 inflight: InFlight, strategy: CrawlingStrategy, port: Port) -> None:
        self.frontier = frontier
        self.robots: RobotsGate | None = gates.robots
        self.blocklist: Blocklist = gates.blocklist
        self.admission: Admission = gates.admission
        self.controls: KeyControls = gates.controls
        self.requests = requests
        self.inflight = inflight
        self.strategy = strategy
        self._inc = port.inc
        self.stats: Any = port.stats
        # counted here, handed over as stats by count_into (the scheduler's flush): four stat
        # calls per request were a tenth of dispatch
        self._dispatched = 0
        self._dequeued = {"memory": 0, "disk": 0}
        self._active_max = 0

    def count_into(self, inc: Callable[..., None]) -> None:
        """``frontier/dispatched``, Scrapy's ``scheduler/dequeued`` (and by memory or disk)
        and ``frontier/active_hosts_max`` since the last call."""
        if self._dispatched:
            inc("frontier/dispatched", self._dispatched)
            self._dispatched = 0
        for where, n in self._dequeued.items():
            if n:
                inc("scheduler/dequeued", n)
                inc(f"scheduler/dequeued/{where}", n)
                self._dequeued[where] = 0
        if self.stats is not None and self._active_max:
            self.stats.max_value("frontier/active_hosts_max", self._active_max)

    def next(self, now: float) -> Request | None:
        """The next request the engine may send now, or None (the frontier may raise a
        storage error: a disk store reads, and commits)."""
        entry = self.frontier.next(now, self.gate)
        if entry is None:
            return None
        kind = kind_of(entry.data)
        if is_robots(kind) and self.robots is not None:
            record = decode(entry.data)
            if isinstance(record, RobotsRecord):
                request = self.robots.request(record.origin, self._robots_parsed,
                                              self._robots_failed)
            else:  # a robots.txt redirect
                request = self.robots.take_hop(entry)  # type: ignore[assignment]
        else:
            request = self.requests.decode(entry.data)
            chain = request.meta.get(CHAIN)
            if chain:
                self.admission.restore_chain(request.url, chain)
            weight = self.strategy.weight(entry.fp)
            if weight is not None:  # (the recrawl policy weighs the page by it)
                request.meta[IMPORTANCE_META] = weight
        self.inflight.add(request, entry, now)
        controls = self.controls
        if controls.active or controls.counting:
            controls.dispatched(entry.key, now)
        self._dispatched += 1
        if not is_robots(kind):  # the frontier's own robots.txt fetches aside
            self._dequeued[self.requests.where(entry.data)] += 1
        active = self.frontier.active_keys()
        if active > self._active_max:
            self._active_max = active
        return request

    def gate(self, entry: Entry, now: float) -> Entry | float | str:
        """The operator's key rules, the blocklist, the trap rules and robots.txt, checked
        when a URL's turn comes."""
        if self.controls.active:
            verdict = self.controls.verdict(entry.key, entry.fp, now)
            if verdict is not None:
                if isinstance(verdict, str):  # the key's budget spent, its queue deleted
                    self._inc(f"control/dropped/{verdict}")
                    return DROP
                if self.controls.parks(entry.key):  # blocked: the crawl need not wait
                    self.frontier.park(entry.key, verdict + 1.0)
                return float(verdict)
        if kind_of(entry.data) == ROBOTS_HOP:  # a robots.txt redirect: no robots.txt for robots.txt
            hop = self.robots.hop(entry) if self.robots is not None else None
            if hop is None or self.blocklist.blocked(hop.url):  # (a hop lost in a restart)
                if self.robots is not None:
                    self.robots.take_hop(entry)
                return DROP
            return entry
        url = self.requests.url(entry.data)
        if url is None:  # kept in memory by a run that ended: lost with it
            return DROP
        if self.blocklist.blocked(url):
            self._inc("frontier/blocked")
            return DROP
        if self.admission.queued_trap(url):  # its pattern proved a trap after it was queued
            return DROP
        if self.robots is None:
            return entry
        return self.robots.check(entry, url, now)

    def _robots_parsed(self, response: Any) -> None:
        """Callback of robots.txt requests: the answer was kept from response_downloaded."""
        return None

    def _robots_failed(self, failure: Any) -> None:
        """Errback of robots.txt requests (the gate logs a failure without a response once)."""
        info = self.inflight.get(getattr(failure, "request", None))
        if self.robots is not None:
            self.robots.failed(failure, info.status if info is not None else None)
