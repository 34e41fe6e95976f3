"""The requests the frontier handed to the engine, from dispatch until the engine is done.

Scrapy's signals say when each response came out of the download handler
(``response_downloaded``: status, ``Retry-After``, the time it arrived) and when the request
left the downloader (``request_left_downloader``): then its politeness key is released with
the server's own time (not the reactor's lag, ``ServerLatency``) and the outcome, so in-flight
counts and next allowed times are exact.  An entry is *completed* (a durable store forgets
it) only once the engine has finished processing its response -- its links are admitted by
then -- which :meth:`InFlight.reap` finds out.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from scrapy import Request

from crawler_ext.frontier.adapter.events import Decisions
from crawler_ext.frontier.adapter.robotsgate import RobotsGate
from crawler_ext.frontier.adapter.roles import Port
from crawler_ext.frontier.contract import FrontierBackend
from crawler_ext.frontier.lag import ServerLatency
from crawler_ext.frontier.politeness import (BACKOFF_STATUSES, ERROR_PARK, Outcome,
                                             parse_retry_after)
from crawler_ext.frontier.storage import Entry
from crawler_ext.meta import ROBOTS_META

__all__ = ["Dispatched", "InFlight"]

logger = logging.getLogger(__name__)


@dataclass(slots=True, eq=False, init=False)
class Dispatched(Entry):
    """A dispatched entry and what happened to its request, as :meth:`InFlight.get` and
    :meth:`InFlight.reap` show it (built when asked: what is kept while the request is in
    flight is a tuple, ``_Flight``)."""

    started: float = 0.0
    left: bool = False
    status: int | None = None
    retry_after: float | None = None
    arrived: float | None = None  # when the response came out of the download handler

    def __init__(self, flight: _Flight) -> None:  # (compiled: written out)
        (self.key, self.band, self.data, self.fp, self.id, self.priority, self.refresh,
         self.started, self.status, self.retry_after, self.arrived, self.left) = flight


#: what a request in flight keeps: its entry's fields (key, band, data, fp, id, priority,
#: refresh), then started, status, retry_after, arrived, left.  A tuple of plain values, not
#: an object: CPython stops tracking such a tuple at its first young collection, so a request
#: waiting for its reap is one object fewer for the garbage collector to promote (the
#: objects kept past young collections set the pace of the full ones)
_Flight = tuple[str, int, bytes, int, int, int, bool, float, int | None, float | None,
                float | None, bool]


class InFlight:
    """``add`` at dispatch; ``downloaded`` and ``left`` from the signals; ``reap`` what the
    engine has finished.  ``released(key, status, started, delay)`` is told of every release
    (the ``host_released`` signal; None: nobody to tell); ``rearm()`` after one, so the
    engine is woken when the next key is ready."""

    def __init__(self, frontier: FrontierBackend, robots: RobotsGate | None,
                 latency: ServerLatency, port: Port,
                 released: Callable[..., None] | None = None,
                 rearm: Callable[[], None] = lambda: None) -> None:
        self.frontier = frontier
        self.robots = robots
        self.latency = latency
        self.clock = port.clock
        self._inc = port.inc
        self.stats: Any = port.stats
        self.decisions: Decisions = port.decisions  # told of each key parked here
        self._released = released
        self._rearm = rearm
        self._requests: dict[Request, _Flight] = {}
        self._parked_logged = 0
        self._failing_logged = 0
        self._delay_max = -1.0  # since the last count_into

    def count_into(self) -> None:
        """``frontier/delay_max`` into the stats (the scheduler's flush)."""
        if self.stats is not None and self._delay_max >= 0:
            self.stats.max_value("frontier/delay_max", round(self._delay_max, 3))
        self._delay_max = -1.0

    def __len__(self) -> int:
        return len(self._requests)

    def get(self, request: Request | None) -> Dispatched | None:
        if request is None:
            return None
        flight = self._requests.get(request)
        return Dispatched(flight) if flight is not None else None

    def key_of(self, request: Request) -> str | None:
        """The politeness key an in-flight request holds (the rendering pool paces the
        page's own sub-requests at its delay)."""
        flight = self._requests.get(request)
        return flight[0] if flight is not None else None

    def add(self, request: Request, entry: Entry, now: float) -> None:
        self._requests[request] = (entry.key, entry.band, entry.data, entry.fp, entry.id,
                                   entry.priority, entry.refresh, now, None, None, None, False)

    def downloaded(self, response: Any, request: Request, spider: Any = None) -> None:
        """``response_downloaded``: the status and its time (robots.txt answers go to the
        gate with their bodies)."""
        if self.robots is not None and request.meta.get(ROBOTS_META):
            self.robots.answered(request, response.status, response.body)
        flight = self._requests.get(request)
        if flight is None:
            return
        status: int = response.status
        retry_after = parse_retry_after(response.headers.get("Retry-After")) \
            if status in BACKOFF_STATUSES else flight[9]
        self._requests[request] = flight[:8] + (status, retry_after, self.clock(), flight[11])

    def left(self, request: Request, spider: Any = None) -> None:
        """``request_left_downloader``: release the key with the server's time and outcome."""
        flight = self._requests.get(request)
        if flight is None or flight[11]:
            return
        self._requests[request] = flight[:11] + (True,)
        info = Dispatched(flight)
        now = self.clock()
        meta = request.meta
        robots = meta.get(ROBOTS_META)
        if info.status is None and self.robots is not None and robots:
            self.robots.answered(request, None, b"")  # unreachable: disallow all for now
        latency = meta.get("download_latency")
        if latency is None:
            latency = now - info.started
        # the server's time, not our own lag; the key rests from when its response arrived
        if robots:
            # a host's first fetch, on a new connection: its time is mostly the setup's
            server_time = self.latency.estimate(info.key)
        else:
            server_time = self.latency.observe(info.key, float(latency), now)
        outcome = Outcome(info.status, server_time, info.retry_after)
        delay = self.frontier.done(info, outcome, info.arrived or now)
        if self._released is not None:  # (None: no crawl to signal it to)
            self._released(key=info.key, status=info.status, started=info.started,
                           delay=delay, discovery=self.frontier.discovery_waiting(info.key))
        if info.status is None or info.status in BACKOFF_STATUSES:
            self._inc("frontier/backoffs")
            if info.retry_after is not None:
                self._inc("frontier/retry_after_honoured")
        if info.key in self.frontier.parked:
            failing = delay >= ERROR_PARK
            self._parked(info.key, delay, failing)
            self.decisions.tell("parked", info.key, "error_budget" if failing else
                                "retry_after" if info.retry_after is not None else "backoff",
                                now + delay)
        elif delay > self._delay_max:
            self._delay_max = delay
        self._rearm()

    def _parked(self, key: str, delay: float, failing: bool) -> None:
        """A host asked to wait longer than CRAWLER_EXT_POLITENESS_BACKOFF_MAX, or failed its
        error budget: honoured, but it does not keep the crawl open (logged for the first
        hosts, counted at close)."""
        self._inc("frontier/parkings")
        if failing:
            self._inc("frontier/hosts_failing")
            if self._failing_logged < 10:
                self._failing_logged += 1
                logger.warning("Frontier: %s failed CRAWLER_EXT_HOST_ERROR_BUDGET fetches in a "
                               "row (timeouts, connection errors, 5xx): parked; its queued URLs "
                               "are kept but the crawl may finish without them "
                               "(frontier/hosts_failing)", key)
            return
        if self._parked_logged < 10:
            self._parked_logged += 1
            logger.warning("Frontier: %s asks to wait %.0f s (Retry-After or Crawl-delay), more "
                           "than CRAWLER_EXT_POLITENESS_BACKOFF_MAX: parked; its queued URLs are "
                           "kept but the crawl may finish without them (frontier/parked)",
                           key, delay)

    def reap(self, in_progress: Any, final: bool) -> list[Dispatched]:
        """The entries whose responses the engine has finished processing (``in_progress``:
        the engine's requests in process, None without an engine), taken out; a request
        dropped before the downloader (a middleware) releases its key first."""
        return [Dispatched(flight) for flight in self.finished(in_progress, final)]

    def finished(self, in_progress: Any, final: bool) -> list[_Flight]:
        """What :meth:`reap` takes out, as the tuples kept (no view built: the scheduler's
        flush reads three fields of each)."""
        now = self.clock()
        requests = self._requests
        out: list[_Flight] = []
        # its keys, not its items: a pair per request, all alive until the loop ends, made
        # the young collections during a reap promote them (and the requests they hold)
        for request in list(requests):
            flight = requests[request]
            if in_progress is not None and request in in_progress:
                continue
            if in_progress is None and not flight[11] and not final:
                continue
            if not flight[11]:  # dropped before the downloader (e.g. by a middleware)
                if self.robots is not None and request.meta.get(ROBOTS_META):
                    self.robots.answered(request, None, b"")  # (the SSRF guard): unreachable
                self.frontier.release(Dispatched(flight), now)
                self._rearm()
            del requests[request]
            out.append(flight)
        return out
