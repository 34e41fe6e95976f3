"""The lease fence: a worker dispatches a leased entry only while its lease surely holds.

A lease in Redis ends ``lease_ttl`` seconds after the exchange that took or renewed it ran,
on Redis's clock.  A worker cut off from Redis (a partition, a stalled process, a slow link)
cannot renew, and another worker may take the key once the lease has expired: if the first
one went on fetching from what it had leased, two workers would fetch from one host at once,
and the same URL twice.  The fence is the worker's own bound on its leases: the time it
*sent* the last exchange that a shard answered, plus half the lease time, on this machine's
monotonic clock (which no clock step moves, and which runs on while the process is stopped).
Redis ran the exchange after it was sent, so the lease in Redis outlives the fence by at
least half the lease time: a fetch that starts before the fence and lasts less than that
ends before any other worker can take the key.  An entry found behind the fence is let go
(its lease expires in Redis and the entry returns to its queue), never fetched.

On a Redis Cluster, a shard whose node's replica has not acknowledged the last writes
(*lagging*: ``WAIT`` timed out) waits: what this worker leased there is not fetched until a
replica holds the lease and the host's next allowed time.  A failover then could lose both, and
another worker would take the host at once from the promoted replica while this one fetches
from it.

Pure: the clock is given.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable

__all__ = ["LeaseFence"]


class LeaseFence:
    """Per shard: until when this worker may start a fetch of what it leased there."""

    __slots__ = ("_lagging", "_until", "clock", "share")

    def __init__(self, lease_ttl: float, share: float = 0.5,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.share = lease_ttl * share  # of the lease time, counted from the exchange's send
        self.clock = clock
        self._until: dict[int, float] = {}
        self._lagging: set[int] = set()

    def now(self) -> float:
        return self.clock()

    def answered(self, shards: Iterable[int], sent_at: float) -> None:
        """The exchange sent at ``sent_at`` (this clock) took or renewed every lease this
        worker holds in ``shards``."""
        until = sent_at + self.share
        for n in shards:
            if until > self._until.get(n, 0.0):
                self._until[n] = until

    def lagging(self, shards: set[int]) -> None:
        """The shards whose node's replica lagged behind at the last exchange (none: all
        caught up)."""
        self._lagging = shards

    def replicating(self, shard: int) -> bool:
        """Whether fetches from ``shard`` wait for its replica (see the module's text)."""
        return shard in self._lagging

    def holds(self, shard: int) -> bool:
        """Whether a fetch of an entry leased in ``shard`` may start now."""
        return self.clock() < self._until.get(shard, 0.0)
