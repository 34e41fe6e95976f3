"""Counts per politeness key summed over every worker of a distributed crawl: the requests
each key got, for an operator's view of the whole crawl (the busiest keys) and for a key's
page budget.  One sorted set in Redis per count (``<prefix>:<name>``); a worker adds what it
counted since its last call and reads the totals it needs, in one pipelined round trip
(blocking: call it from a thread)."""

from __future__ import annotations

from typing import Any

__all__ = ["SharedCounts"]


class SharedCounts:
    def __init__(self, redis: Any, key: str) -> None:
        self.redis = redis
        self.key = key  # (one key: one cluster slot)

    def add(self, increments: dict[str, int], wanted: list[str]) -> dict[str, int]:
        """Add this worker's increments; return the crawl's totals of ``wanted``."""
        pipe = self.redis.pipeline(transaction=False)
        for name, n in increments.items():
            pipe.zincrby(self.key, n, name)
        for name in wanted:
            pipe.zscore(self.key, name)
        results = pipe.execute() if increments or wanted else []
        return {name: int(float(score or 0)) for name, score in
                zip(wanted, results[len(increments):])}

    def top(self, n: int) -> list[tuple[str, int]]:
        """The ``n`` keys with the largest totals, largest first."""
        return [(name.decode() if isinstance(name, bytes) else name, int(score))
                for name, score in self.redis.zrevrange(self.key, 0, n - 1, withscores=True)]
