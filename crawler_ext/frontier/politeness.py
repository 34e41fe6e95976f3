"""Adaptive politeness: how long a politeness key rests after each fetch.

delay = clamp(latency_factor x response time, min_delay, max_delay), floored by the host's
robots.txt Crawl-delay; 429/503, timeouts and connection errors multiply it (x backoff_factor,
capped at backoff_max), and each success halves that multiplier again.  A 429/503 also
raises a learned floor (capped at backoff_max, not max_delay: it is the server's own word) to
twice the gap that drew it, which decays by 5 % per success, so a rate-limited host settles
above its limit instead of being refused every other fetch.
A Retry-After header on a 429/503 and a robots.txt Crawl-delay are the server's word and are
honoured in full; when either asks for more than ``backoff_max`` the frontier parks the key
(``Frontier.parked``): its URLs are kept, but they do not hold the crawl open.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from email.utils import parsedate_to_datetime

from crawler_ext.frontier.storage import HostState

__all__ = ["Outcome", "PolitenessPolicy", "parse_retry_after"]

BACKOFF_STATUSES = frozenset({429, 503})


def parse_retry_after(value: str | bytes | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or HTTP-date); None if absent
    or bad."""
    if value is None:
        return None
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None
    return max(0.0, when - (time.time() if now is None else now))


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one fetch told us about its host."""

    status: int | None = None  # None: no response (timeout, connection error)
    latency: float = 0.0
    retry_after: float | None = None


@dataclass(frozen=True)
class PolitenessPolicy:
    min_delay: float = 1.0
    max_delay: float = 60.0
    latency_factor: float = 10.0
    backoff_factor: float = 4.0
    backoff_max: float = 300.0

    def __post_init__(self) -> None:
        if self.max_delay < self.min_delay:
            raise ValueError(
                f"CRAWLER_EXT_POLITENESS_MAX_DELAY ({self.max_delay}) is below "
                f"CRAWLER_EXT_POLITENESS_MIN_DELAY ({self.min_delay})")

    def base_delay(self, latency: float, state: HostState) -> float:
        delay = min(max(self.latency_factor * latency, self.min_delay), self.max_delay)
        if state.crawl_delay is not None:
            delay = max(delay, state.crawl_delay)
        return delay

    def update(self, state: HostState, outcome: Outcome, now: float) -> float:
        """Apply one outcome to ``state``; return the delay before the key's next fetch."""
        failed = outcome.status is None or outcome.status in BACKOFF_STATUSES
        # our own backoff is capped; a Crawl-delay above the cap is honoured (and parks the key)
        cap = max(self.backoff_max, self.min_delay, state.crawl_delay or 0.0)
        if failed:
            if outcome.status is not None:  # refused: the last gap was too short
                state.floor = min(max(state.floor, 2 * state.delay), self.backoff_max)
            state.backoff = min(state.backoff * self.backoff_factor, self.backoff_max)
            delay = min(self.base_delay(outcome.latency, state) * state.backoff, cap)
        else:
            # decay gradually, so a rate-limited host is not hit at full speed right away
            state.backoff = max(1.0, state.backoff / 2)
            state.floor *= 0.95
            delay = max(min(self.base_delay(outcome.latency, state) * state.backoff, cap),
                        state.floor)
        if outcome.retry_after is not None and outcome.status in BACKOFF_STATUSES:
            delay = outcome.retry_after
        state.delay = delay
        state.next_allowed = now + delay
        return delay

    def parks(self, delay: float) -> bool:
        """A wait longer than the cap: the key is parked (kept, but not waited for)."""
        return delay > max(self.backoff_max, self.min_delay)
