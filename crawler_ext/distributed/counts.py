"""Counts per politeness key summed over every worker of a distributed crawl: the requests
each key got, for an operator's view of the whole crawl (the busiest keys) and for a key's
page budget; and a worker's stats added to the crawl's totals at its close.  One sorted set
in Redis per count (``<prefix>:<name>``); a worker adds what it counted since its last call
and reads the totals it needs, in one pipelined round trip (blocking: call it from a
thread)."""

from __future__ import annotations

import logging
from typing import Any

__all__ = ["SharedCounts", "add_to_totals"]

logger = logging.getLogger(__name__)


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


def add_to_totals(redis: Any, key: str, stats: dict[str, Any]) -> None:
    """Add a worker's numeric stats to the crawl's totals in scrapy-redis's stats hash
    (``<spider>:stats``), and count the worker finished (a failure is logged, not raised)."""
    pipe = redis.pipeline(transaction=False)
    for name, value in stats.items():
        if isinstance(value, (int, float)) and not isinstance(value, bool) and \
                not name.startswith(("memusage/", "start_time", "finish_time")):
            pipe.hincrbyfloat(key, name, value)
    pipe.hincrby(key, "workers_finished", 1)
    try:
        pipe.execute()
    except Exception as exc:  # noqa: BLE001 - a lost total is not worth a failed close
        logger.warning("Redis frontier: stats not added to %s (%s)", key, exc)
