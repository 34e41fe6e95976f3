"""The frontier kept in Redis, shared by any number of workers (``CRAWLER_EXT_FRONTIER_BACKEND =
"redis"``).

The state lives in Redis, split into ``CRAWLER_EXT_REDIS_SHARDS`` shards; a politeness key
(host, or IP) belongs to one shard, and all of a shard's keys share one hash tag, so every
script touches one Redis Cluster slot.  Per shard:

==========================  ======================================================
``{P:sN}:q:<key>``          the key's back queue: sorted set of entry ids, score
                            rank x 2^48 + band x 2^44 + id (rank: Request.priority, best 0)
``{P:sN}:f:<key>``          its refresh lane (a recrawl's revisits), scored alike
``{P:sN}:sc``               key -> refresh credit: when both lanes wait, refreshes get
                            ``CRAWLER_EXT_RECRAWL_SHARE`` of the key's turns
``{P:sN}:r:<band>``         ready keys whose best queued entry is in that band: score = next
                            allowed time (the front bands and the ready heap in one)
``{P:sN}:e``                entry id -> band byte + rank byte (+128: a refresh) + 64-bit
                            fingerprint + request
``{P:sN}:hb``               key -> the ready band it is listed in, or ``L`` while leased
``{P:sN}:d``                delayed entries ``id|key`` -> due time (Redis clock)
``{P:sN}:na``               key -> next allowed fetch time (Redis clock)
``{P:sN}:hs``               key -> learned politeness state and robots.txt answers (JSON)
``{P:sN}:lk``, ``:lo``      leased keys -> lease expiry, and the worker holding each
``{P:sN}:ls``               leased entries ``id|key`` -> lease expiry
``{P:sN}:id``               entry id counter
``{P:sN}:budget``           host -> URLs admitted (``CRAWLER_EXT_HOST_PAGE_BUDGET``)
``{P:sN}:pcap``             host and URL pattern -> URLs admitted
                            (``CRAWLER_EXT_HOST_PATTERN_CAP``, held once a pattern is a trap)
``{P:sN}:pk``               parked keys -> until when (robots.txt failed: their entries
                            wait for its retry and do not hold the crawl open)
``{P:sN}:ap``               worker -> its last exchange whose pushes were queued (a push
                            sent again after a lost answer is not queued twice)
==========================  ======================================================

One Lua script per shard does a worker's whole exchange at once, atomically: push admitted
entries, release keys (with their next allowed time), requeue or complete entries, renew the
worker's leases, return expired leases of crashed workers to their queues, and take ready keys
-- taking a key leases its next entry and the key itself, so no two workers ever fetch from
one key at once.  Workers exchange in a thread every ``CRAWLER_EXT_FRONTIER_FLUSH_INTERVAL``
(one pipelined round trip for all shards and Bloom blocks), never on the reactor thread per
request.

Within a worker the interface is :class:`~crawler_ext.frontier.core.Frontier`'s, so
``FrontierScheduler`` (admission, robots.txt, politeness outcomes, completion after the
response was processed) is the same code for every backend.
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from crawler_ext.distributed.bloom import RedisBloom
from crawler_ext.distributed.claims import Claims
from crawler_ext.distributed.counts import SharedCounts, add_to_totals
from crawler_ext.distributed.exchange import Exchange
from crawler_ext.distributed.fence import LeaseFence
from crawler_ext.distributed.leases import LeaseBook
from crawler_ext.distributed.outbox import Outbox
from crawler_ext.distributed.records import MAX_BANDS, request_of, state_from
from crawler_ext.distributed.shards import ShardLayout, shard_of
from crawler_ext.distributed.sharedlog import SharedLog
from crawler_ext.distributed.sync import Sync
from crawler_ext.errors import ConfigError
from crawler_ext.frontier.core import DROP, Gate
from crawler_ext.frontier.politeness import Outcome, PolitenessPolicy
from crawler_ext.frontier.storage import Entry, HostState

__all__ = ["RedisFrontier", "shard_of"]

logger = logging.getLogger(__name__)


class RedisFrontier:
    """A worker's view of the shared frontier: the frontier contract over Redis, shared
    (``contract.SharedFrontier``; Redis is the durable store, the leases of a crashed worker
    expire: nothing to recover or replay here), in parts -- what it sends
    (:class:`~crawler_ext.distributed.outbox.Outbox`), what it leased
    (:class:`~crawler_ext.distributed.leases.LeaseBook`), its open claims
    (:class:`~crawler_ext.distributed.claims.Claims`), and its exchanges
    (:class:`~crawler_ext.distributed.sync.Sync` on the reactor,
    :class:`~crawler_ext.distributed.exchange.Exchange` in a thread)."""

    ROBOTS_SHARE_LIMIT = 64 * 1024  # robots.txt bodies larger than this are not shared
    #: seconds the shared frontier must read empty before this worker counts nothing pending
    #: (its crawl may finish): longer than the exchanges another worker needs to push the
    #: links of the page it just completed
    FINISH_GRACE = 3.0
    REPLICA_RETRY = 0.05  # seconds: a fetch waiting for its shard's replica is tried again
    inspect_blocks = True
    durable = True  # shared between workers: requests travel serialised

    def __init__(
        self,
        redis: Any,
        layout: ShardLayout,
        policy: PolitenessPolicy,
        weights: Sequence[float],
        bloom: RedisBloom | None = None,
        buffer: int = 64,
        on_stat: Callable[[str, float], None] | None = None,
    ) -> None:
        self.redis = redis
        self.layout = layout
        self.prefix = layout.prefix
        lease_ttl = layout.lease_ttl
        self.policy = policy
        self.key_floors: dict[str, float] = {}  # keys' own floors (see KeyControls)
        self.bands = len(weights)
        if self.bands > MAX_BANDS:
            raise ConfigError(f"CRAWLER_EXT_FRONTIER_BANDS: the Redis frontier keeps at most "
                              f"{MAX_BANDS} bands, got {self.bands}")
        self.bloom = bloom
        if bloom is not None:  # an admission not confirmed pushed within a lease's time is
            bloom.claim_ttl = lease_ttl  # its dead worker's (see RedisBloom)
        self.shards = shards = layout.shards
        self.lease_ttl = lease_ttl
        self.stats_key = layout.stats_key
        self.wait_for_seeds = layout.wait_for_seeds
        self.max_in_flight = 1  # a leased key is fetched by one worker, one request at a time
        # who holds a lease, as `status` shows it: host, process, and a nonce for restarts
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._stat = on_stat or (lambda name, value: None)
        self.tags = layout.tags  # each shard's hash tag
        self.fence = LeaseFence(lease_ttl)  # no fetch of a lease that may have expired
        self.exchanger = Exchange(redis, layout, self.bands, self.worker, bloom, self.fence.now)
        self.outbox = Outbox(layout.host_budget)
        self.leases = LeaseBook(shards)
        self.parked = self.leases.parked  # keys this worker parked -> until (for reports)
        self.claims = Claims(lease_ttl)
        self.sync = Sync(redis, self.exchanger, (self.outbox, self.leases, self.claims),
                         self.fence, weights, buffer, self._stat)
        self.hooks: Any = None  # the scheduler: wake(), seeds(urls), robots_import(...),
        # trap_pattern(url), lost_writes()

    # -- the Frontier interface --------------------------------------------------------------
    def add(self, entries: list[Entry], check_seen: bool = True) -> None:
        self.outbox.add(entries, check_seen)

    def add_delayed(self, entries: list[Entry], due: float) -> None:
        """Due at unix time ``due`` of this worker's clock, kept in Redis as a delay from the
        exchange on (so a worker's clock being off does not matter)."""
        self.outbox.add_delayed(entries, due)

    def delayed(self) -> int:
        """Delayed entries not yet sent (the shared ones are not counted here)."""
        return self.outbox.delayed()

    def promote(self, fp: int, band: int) -> bool:
        """Move the queued entry to a better band, in Redis, for every worker: sent with the
        next exchange (a URL already taken is not found there; nothing happens)."""
        return self.outbox.promote(fp, band)

    def next(self, now: float, gate: Gate | None = None) -> Entry | None:
        leases = self.leases
        while (entry := leases.next_due(now)) is not None:
            shard = shard_of(entry.key, self.shards)
            if not self.fence.holds(shard):
                leases.let_go(entry)  # Redis not answered for half a lease: unfetched
                self._stat("frontier/redis/leases_fenced", 1)
                continue
            if self.fence.replicating(shard):  # until a replica holds the lease
                leases.defer(entry, now + self.REPLICA_RETRY)
                self._stat("frontier/redis/fetches_held_for_replicas", 1)
                continue
            verdict = gate(entry, now) if gate is not None else entry
            if verdict == DROP:
                self._stat("frontier/dropped", 1)
                leases.complete(entry.id)
                leases.release(entry.key, None)
                continue
            if isinstance(verdict, float):  # hold the key: back to Redis until then
                leases.release(entry.key, max(0.0, verdict - now), requeue=entry.id)
                continue
            if verdict is not entry:  # robots.txt first; the entry waits with its key
                leases.wait_for_robots(entry)
                entry = verdict  # type: ignore[assignment]
            return entry
        return None

    def next_ready_time(self) -> float | None:
        return self.leases.ready_time()

    def done(self, entry: Entry, outcome: Outcome, now: float) -> float:
        state = self.leases.state(entry.key) if self.leases.ours(entry) else None
        delay = self.policy.update(state or HostState(), outcome, now,
                                   self.key_floors.get(entry.key, 0.0))
        if state is None:  # its lease was lost (a restart, or expired): not ours to free
            return delay
        # its robots.txt arrived: the entry waiting goes after the delay; else the key goes
        if not self.leases.robots_fetched(entry.key, now + delay):
            self.leases.release(entry.key, delay)
        return delay

    def release(self, entry: Entry, now: float) -> None:
        """Dropped before the network: free the key, its next allowed time unchanged."""
        if self.leases.ours(entry):  # (its lease lost: not ours to free)
            self.leases.release(entry.key, None, waiting=True)

    def complete(self, entry_ids: list[int]) -> None:
        for entry_id in entry_ids:
            if entry_id:
                self.leases.complete(entry_id)

    def set_crawl_delay(self, key: str, seconds: float | None) -> None:
        self.leases.set_crawl_delay(key, seconds)

    def robots_answered(self, key: str, origin: str, status: int | None, body: bytes,
                        now: float) -> None:
        """Share a robots.txt answer with the other workers (stored with the key's state)."""
        if not self.leases.holds(key) or status is None or status >= 500 or \
                len(body) > self.ROBOTS_SHARE_LIMIT:
            return
        self.leases.robots_answered(key, origin, [status, now, body.decode("latin-1")])

    def parked_pending(self, now: float) -> int:
        """Entries of parked keys in Redis, parked by any worker, whose time has not come
        (as the last exchange counted them): kept, but a crawl with nothing else to do
        finishes without them."""
        self.leases.unpark_due(now)
        return self.sync.remote_parked

    def park(self, key: str, until: float) -> None:
        """The key goes back to Redis with its wait (the release that follows), marked
        parked there until ``until``: every worker honours the wait, none waits for it."""
        self.leases.park(key, until)

    def pending(self) -> int:
        local = len(self.outbox) + self.leases.waiting() + self.claims.pending()
        remote = self.sync.remote
        if remote is None:  # (not counted yet)
            remote = 1
        elif remote == 0 and time.monotonic() - (self.sync.empty_since or 0.0) < \
                self.FINISH_GRACE:
            # Redis empty for a moment only: another worker may have completed a page whose
            # links it has not pushed yet (admitted, confirmed by its next exchange)
            remote = 1
        return local + remote

    @property
    def shared_pending(self) -> int | None:
        """Entries queued or leased in Redis by every worker, as the last exchange counted
        them (None: not known)."""
        return self.sync.remote

    def inspect_key(self, key: str, now: float) -> dict[str, Any] | None:
        """Blocking: the key as its shard holds it (call it from a thread)."""
        tag = self.tags[shard_of(key, self.shards)]
        pipe = self.redis.pipeline(transaction=False)
        for name in ("q", "f"):
            pipe.zcard(f"{tag}:{name}:{key}")
        for name in ("na", "hs", "lo"):
            pipe.hget(f"{tag}:{name}", key)
        pipe.zscore(f"{tag}:pk", key)
        pipe.zrange(f"{tag}:q:{key}", 0, 2)
        queued, refresh, allowed, blob, holder, parked, head = pipe.execute()
        if not (queued or refresh or allowed or blob or holder):
            return None
        state, _ = state_from(blob or b"")
        records = self.redis.hmget(f"{tag}:e", head) if head else []
        return {"queued": int(queued) + int(refresh), "queued_refresh": int(refresh),
                "in_flight": 1 if holder else 0, "active": bool(holder),
                "leased_by": holder.decode() if isinstance(holder, bytes) else holder,
                "delay": state.delay, "backoff": state.backoff,
                "crawl_delay": state.crawl_delay, "learned_floor": state.floor,
                "next_allowed": float(allowed) if allowed else None,  # (Redis's clock)
                "parked_until": float(parked) if parked else None,
                "head_data": [request_of(record) for record in records if record]}

    def discovery_waiting(self, key: str) -> bool | None:
        """As Redis said when this worker last leased the key (None: never leased here)."""
        return self.leases.discovery_waiting(key)

    def active_keys(self) -> int:
        return len(self.leases.keys())

    def attach(self, hooks: Any) -> None:
        self.hooks = self.sync.hooks = hooks  # wake(), seeds(urls), robots_import(...)

    def shared_counts(self, name: str) -> SharedCounts:
        return SharedCounts(self.redis, f"{self.prefix}:counts:{name}")

    def shared_log(self, name: str, on_stat: Callable[[str, float], None]) -> SharedLog:
        return SharedLog(self.redis, f"{self.prefix}:{name}", self.worker, on_stat=on_stat)

    def open(self) -> None:
        self.redis.ping()  # fail at start, with the connection error, if Redis is not there
        if self.bloom is not None:
            self.bloom.open()

    def band_sizes(self) -> list[int] | None:
        return None  # the bands live in Redis, spread over shards

    def flush(self) -> None:
        """Start an exchange with Redis in a thread (unless one is still running)."""
        self.sync.flush()

    def exchange_now(self) -> list[Entry]:
        """Blocking: one exchange, here and now (tests, benchmarks); the entries it leased."""
        return self.sync.exchange_now()

    def close(self, commit: bool = True) -> None:
        """Give back what this worker holds but has not fetched, and send the last changes
        (leases of entries whose processing did not finish expire, whatever ``commit``)."""
        self.sync.close()

    def publish_stats(self, stats: dict[str, Any]) -> None:
        """Add this worker's numeric stats to the crawl's totals in scrapy-redis's stats hash
        (``<spider>:stats``), once, at close."""
        if self.stats_key:
            add_to_totals(self.redis, self.stats_key, stats)
