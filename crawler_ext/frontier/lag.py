"""The crawler's own event-loop lag, so politeness sees the server's response time.

Scrapy's ``download_latency`` is taken in a reactor callback: when the reactor is busy
(parsing pages, extracting text, writing WARCs) a response waits in the socket buffer, and
that wait is counted as the server's latency.  With a delay of 10 x the response time, a busy
crawler slowed itself down: on loopback hosts answering in 0.4 ms, 10 % of the measured
latencies were over 18 ms.

``LagProbe`` ticks every ``interval`` seconds and records the time between consecutive ticks:
a response that arrived while the reactor was busy waited at most as long as the longest
such gap around it.  ``lag(now)`` is the longest gap of the last ``window`` seconds (or the
time since the last tick, if the reactor is blocked now), which the scheduler subtracts from
``download_latency``.  It errs by at most ``interval`` towards a shorter server time.  The
lateness of a single tick is not enough: a block that began just before a tick was due
delays responses longer than it delays the tick.  Time is passed in for tests.
"""

from __future__ import annotations

from collections import OrderedDict, deque
from collections.abc import Callable
from typing import Any

__all__ = ["LagProbe", "ServerLatency"]


class LagProbe:
    def __init__(self, clock: Callable[[], float], interval: float = 0.005,
                 window: float = 0.25) -> None:
        self.clock = clock
        self.interval = interval
        self.window = window
        self._ticks: deque[tuple[float, float]] = deque()  # (time, gap since the last tick)
        self._last: float | None = None
        self._call: Any = None

    def start(self, call_later: Callable[[float, Callable[[], None]], Any]) -> None:
        """Tick with ``call_later`` (Scrapy's, for either event loop) until ``stop``."""
        self._call_later = call_later
        self._last = self.clock()
        self._call = call_later(self.interval, self.tick)

    def stop(self) -> None:
        call, self._call = self._call, None
        if call is not None:
            call.cancel()  # (Scrapy's call_later result: a no-op once called)

    def tick(self) -> None:
        now = self.clock()
        if self._last is not None:
            self.record(now, now - self._last)
        self._last = now
        if self._call is not None:
            self._call = self._call_later(self.interval, self.tick)

    def record(self, now: float, gap: float) -> None:
        # kept as a max-queue: a gap that a later, longer one outlasts can never be the
        # longest again, so the gaps decrease from left to right and the first one still in
        # the window is the answer (one look per response, not the window's every tick)
        ticks = self._ticks
        while ticks and ticks[-1][1] <= gap:
            ticks.pop()
        ticks.append((now, gap))
        while ticks[0][0] < now - self.window:
            ticks.popleft()

    def lag(self, now: float) -> float:
        """The reactor's recent lag, seconds."""
        blocked = now - self._last if self._last is not None else 0.0
        recent, since = 0.0, now - self.window
        for t, gap in self._ticks:  # (a loop, not a generator: asked at every release)
            if t >= since:
                recent = gap
                break
        # (comparisons, not max(): compiled, max() boxes its floats into a tuple; asked at
        # every release)
        lag = blocked if blocked > recent else recent
        return lag if lag > 0.0 else 0.0

    def server_latency(self, measured: float, now: float) -> float:
        """``measured`` (download_latency) less the crawler's own lag."""
        server = measured - self.lag(now)
        return server if server > 0.0 else 0.0


class ServerLatency:
    """A politeness key's response time: the least of its last ``samples`` lag-corrected
    measurements.  What a busy crawler adds is never negative, so the minimum is a robust
    estimate; a server that really slows down shows in ``samples`` fetches."""

    def __init__(self, probe: LagProbe, samples: int = 5, memory: int = 100_000) -> None:
        self.probe = probe
        self.samples = samples
        self.memory = memory
        # a tuple per key, not a deque: a tuple of floats is left out of the garbage
        # collector's walks once it has survived one (100,000 keys were 100,000 deques that
        # every full collection visited)
        self._recent: OrderedDict[str, tuple[float, ...]] = OrderedDict()

    def estimate(self, key: str) -> float:
        """The key's response time so far (0 before its first sample)."""
        recent = self._recent.get(key)
        return min(recent) if recent else 0.0

    def observe(self, key: str, measured: float, now: float) -> float:
        sample = self.probe.server_latency(measured, now)
        recent = self._recent.get(key)
        if recent is None:
            recent = self._recent[key] = (sample,)
            if len(self._recent) > self.memory:
                self._recent.popitem(last=False)
        else:
            self._recent.move_to_end(key)
            recent = self._recent[key] = (recent + (sample,))[-self.samples:]
        return min(recent)
