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

import heapq
import itertools
import json
import logging
import os
import pickle
import socket
import struct
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Sequence
from dataclasses import asdict, fields
from typing import Any

from twisted.internet import threads

from crawler_ext.admission.urls import host_of
from crawler_ext.distributed.bloom import RedisBloom
from crawler_ext.distributed.counts import SharedCounts
from crawler_ext.distributed.exchange import (LOOK_AGAIN, Claim, Exchange, Push, ShardOps,
                                               shard_of)
from crawler_ext.distributed.fence import LeaseFence
from crawler_ext.distributed.health import health_of
from crawler_ext.distributed.sharedlog import SharedLog
from crawler_ext.errors import ConfigError
from crawler_ext.frontier.core import DROP, Gate
from crawler_ext.frontier.entries import entry_url
from crawler_ext.frontier.politeness import Outcome, PolitenessPolicy
from crawler_ext.frontier.storage import Entry, HostState
from crawler_ext.int64 import to_signed, to_unsigned

__all__ = ["RedisFrontier", "shard_of"]

logger = logging.getLogger(__name__)

_HEAD = struct.Struct(">BBQ")  # band, priority rank, fingerprint
_FP = struct.Struct(">Q")
#: Request.priority within a key: 32 ranks (priorities -16..15, beyond them clamped), so that
#: rank, band (< 16) and entry id (< 2^44) fit the 53 exact bits of a sorted-set score
PRIORITY_RANKS = 32
MAX_BANDS = 16
#: added to the rank byte of a refresh entry: it waits in its key's refresh lane
REFRESH_RANK = 128


def priority_rank(priority: int) -> int:
    """0 for the highest priority: a key's back queue is sorted by rank first."""
    half = PRIORITY_RANKS // 2
    return half - 1 - min(max(priority, -half), half - 1)

def _state_blob(state: HostState, robots: dict[str, list] | None) -> str:
    data = asdict(state)
    data.pop("in_flight", None)
    data.pop("next_allowed", None)
    if robots:
        data["robots"] = robots
    return json.dumps(data, separators=(",", ":"))


def _state_from(blob: bytes) -> tuple[HostState, dict[str, list]]:
    if not blob:
        return HostState(), {}
    data = json.loads(blob)
    robots = data.pop("robots", {})
    names = {f.name for f in fields(HostState)}  # (a compiled HostState has no __slots__)
    return HostState(**{k: v for k, v in data.items() if k in names}), robots


class RedisFrontier:
    """A worker's view of the shared frontier: the :class:`Frontier` interface over Redis."""

    ROBOTS_SHARE_LIMIT = 64 * 1024  # robots.txt bodies larger than this are not shared
    IDLE_POLL = 0.5  # seconds between polls while there is nothing to send or take

    def __init__(
        self,
        redis: Any,
        prefix: str,
        policy: PolitenessPolicy,
        weights: Sequence[float],
        bloom: RedisBloom | None,
        shards: int = 16,
        lease_ttl: float = 60.0,
        buffer: int = 64,
        seeds_key: str | None = None,
        stats_key: str | None = None,
        wait_for_seeds: bool = False,
        on_stat: Callable[[str, float], None] | None = None,
        host_budget: int = 0,
        pattern_cap: int = 0,
        refresh_share: float = 0.5,
    ) -> None:
        self.redis = redis
        self.prefix = prefix
        self.policy = policy
        self.key_floors: dict[str, float] = {}  # keys' own floors (see KeyControls)
        self.weights = list(weights)
        self.bands = len(self.weights)
        if self.bands > MAX_BANDS:
            raise ConfigError(f"CRAWLER_EXT_FRONTIER_BANDS: the Redis frontier keeps at most "
                              f"{MAX_BANDS} bands, got {self.bands}")
        self.bloom = bloom
        if bloom is not None:  # an admission not confirmed pushed within a lease's time is
            bloom.claim_ttl = lease_ttl  # its dead worker's (see RedisBloom)
        self.shards = shards
        self.lease_ttl = lease_ttl
        self.buffer = buffer
        self.seeds_key = seeds_key
        self.stats_key = stats_key
        self.wait_for_seeds = wait_for_seeds
        self.host_budget = host_budget  # CRAWLER_EXT_HOST_PAGE_BUDGET, held across workers
        self.pattern_cap = pattern_cap  # CRAWLER_EXT_HOST_PATTERN_CAP, held across workers
        self.refresh_share = refresh_share  # CRAWLER_EXT_RECRAWL_SHARE, per key, in Redis
        self.max_in_flight = 1  # a leased key is fetched by one worker, one request at a time
        self.parked: dict[str, float] = {}  # keys this worker parked -> until (for reports)
        self._parking: set[str] = set()  # parked, their release not yet sent
        self._remote_parked = 0  # entries of parked keys in Redis (all workers')
        # who holds a lease, as `status` shows it: host, process, and a nonce for restarts
        self.worker = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self._stat = on_stat or (lambda name, value: None)
        self._claim_open = False  # seeds claimed, admitted, to be released after their push
        self._tags = [f"{{{prefix}:s{n}}}" for n in range(shards)]
        self._exchanger = Exchange(self, seeds_key)
        # local state (reactor thread only)
        self._outbox: list[tuple[Entry, bool | int, float | None]] = []  # entry, check, due
        self._ready: list[tuple[float, int, Entry]] = []  # leased, not yet dispatched
        self._seq = itertools.count()
        self._parked: dict[str, Entry] = {}  # waiting for their robots.txt fetch
        self._states: dict[str, tuple[HostState, dict[str, list]]] = {}  # keys we lease
        self._held: dict[int, str] = {}  # entry id -> key, leased by us and not completed
        self._release: list[tuple[str, float | None, str, str, float]] = []
        # completed entries, sent once the pushes collected with them were answered
        self._done: list[tuple[int, str]] = []
        # admissions pushed (fingerprint, shard pushed to): their claims in the seen set end
        self._confirm: list[Claim] = []
        self._confirm_sent: list[Claim] = []  # with the running exchange
        self._look_again: list[tuple[float, Entry]] = []  # due, entry: seen, claim open
        self._running: dict[int, ShardOps] = {}  # the ops of the exchange running in a thread
        self._last: dict[str, Any] | None = None  # what it answered (None: it failed)
        # URLs this worker admitted -> [key, band] (promotion), bounded
        self._admitted: OrderedDict[int, list] = OrderedDict()
        self.track_admitted = 100_000
        self._promotions: list[tuple[str, int, int]] = []  # key, fingerprint, better band
        # key -> whether new URLs of it waited in Redis when this worker last leased it
        self._discovery: OrderedDict[str, bool] = OrderedDict()
        self._remote: int | None = None  # entries queued or leased anywhere; None: not known
        self._seeds_waiting = 0
        self._syncing = False
        self._closed = False
        self._reaped_at = 0.0
        self._exchanged_at = 0.0
        self._idle = False  # the last exchange took nothing
        self._lock = threading.Lock()
        self._health = health_of(redis)  # one log line per outage for all components
        self._fence = LeaseFence(lease_ttl)  # no fetch of a lease that may have expired
        self._identity: tuple[str, ...] | None = None  # the servers' run ids (exchange thread)
        self.hooks: Any = None  # the scheduler: wake(), seeds(urls), robots_import(...),
        # trap_pattern(url)

    # -- the Frontier interface --------------------------------------------------------------
    def add(self, entries: list[Entry], check_seen: bool = True) -> None:
        admitted = self._admitted
        for entry in entries:
            self._outbox.append((entry, check_seen, None))
            if entry.fp:
                admitted[entry.fp] = [entry.key, entry.band]
        while len(admitted) > self.track_admitted:
            admitted.popitem(last=False)

    def add_delayed(self, entries: list[Entry], due: float) -> None:
        """Due at unix time ``due`` of this worker's clock, kept in Redis as a delay from the
        exchange on (so a worker's clock being off does not matter)."""
        for entry in entries:
            self._outbox.append((entry, False, due))

    def delayed(self) -> int:
        """Delayed entries not yet sent (the shared ones are not counted here)."""
        return sum(1 for _, _, due in self._outbox if due is not None)

    def promote(self, fp: int, band: int) -> bool:
        """Move the queued entry to a better band, in Redis, for every worker: sent with the
        next exchange (a URL already taken is not found there; nothing happens)."""
        record = self._admitted.get(fp)
        if record is None or band >= record[1]:
            return False
        record[1] = band
        self._admitted.move_to_end(fp)
        self._promotions.append((record[0], fp, band))
        return True

    def recover(self) -> int:
        return 0  # Redis is the durable store; leases of a crashed worker expire

    def next(self, now: float, gate: Gate | None = None) -> Entry | None:
        while self._ready and self._ready[0][0] <= now:
            entry = heapq.heappop(self._ready)[2]
            if not self._fence.holds(shard_of(entry.key, self.shards)):
                self._let_go(entry)
                continue
            verdict = gate(entry, now) if gate is not None else entry
            if verdict == DROP:
                self._stat("frontier/dropped", 1)
                self._complete_one(entry.id)
                self._release_key(entry.key, None)
                continue
            if isinstance(verdict, float):  # hold the key: back to Redis until then
                self._release_key(entry.key, max(0.0, verdict - now), requeue=entry.id)
                continue
            if verdict is not entry:  # robots.txt first; the entry waits with its key
                self._parked[entry.key] = entry
                entry = verdict  # type: ignore[assignment]
            return entry
        return None

    def next_ready_time(self) -> float | None:
        return self._ready[0][0] if self._ready else None

    def done(self, entry: Entry, outcome: Outcome, now: float) -> float:
        state = self._states[entry.key][0] if entry.key in self._states else HostState()
        delay = self.policy.update(state, outcome, now, self.key_floors.get(entry.key, 0.0))
        if entry.key not in self._states:  # let go (a restart): the key is not ours to free
            return delay
        parked = self._parked.pop(entry.key, None)
        if parked is not None:  # its robots.txt arrived: the entry goes after the delay
            heapq.heappush(self._ready, (now + delay, next(self._seq), parked))
        else:
            self._release_key(entry.key, delay)
        return delay

    def release(self, entry: Entry, now: float) -> None:
        """Dropped before the network: free the key, its next allowed time unchanged."""
        if entry.key not in self._states:  # let go (a restart): the key is not ours to free
            return
        parked = self._parked.pop(entry.key, None)
        self._release_key(entry.key, None, requeue=parked.id if parked else 0)

    def complete(self, entry_ids: list[int]) -> None:
        for entry_id in entry_ids:
            if entry_id:
                self._complete_one(entry_id)

    def set_crawl_delay(self, key: str, seconds: float | None) -> None:
        if key in self._states:
            self._states[key][0].crawl_delay = seconds

    def robots_answered(self, key: str, origin: str, status: int | None, body: bytes,
                        now: float) -> None:
        """Share a robots.txt answer with the other workers (stored with the key's state)."""
        if key not in self._states or status is None or status >= 500 or \
                len(body) > self.ROBOTS_SHARE_LIMIT:
            return
        self._states[key][1][origin] = [status, now, body.decode("latin-1")]

    def parked_pending(self, now: float) -> int:
        """Entries of parked keys in Redis, parked by any worker, whose time has not come
        (as the last exchange counted them): kept, but a crawl with nothing else to do
        finishes without them."""
        for key, until in list(self.parked.items()):
            if until <= now:
                del self.parked[key]
        return self._remote_parked

    def park(self, key: str, until: float) -> None:
        """The key goes back to Redis with its wait (the release that follows), marked
        parked there until ``until``: every worker honours the wait, none waits for it."""
        if until > self.parked.get(key, 0.0):
            self.parked[key] = until
        self._parking.add(key)

    def pending(self) -> int:
        local = (len(self._outbox) + len(self._ready) + len(self._parked) +
                 len(self._look_again))
        remote = 1 if self._remote is None else self._remote
        return local + remote + self._seeds_waiting

    inspect_blocks = True

    def inspect_key(self, key: str, now: float) -> dict[str, Any] | None:
        """Blocking: the key as its shard holds it (call it from a thread)."""
        tag = self._tags[shard_of(key, self.shards)]
        pipe = self.redis.pipeline(transaction=False)
        pipe.zcard(f"{tag}:q:{key}")
        pipe.zcard(f"{tag}:f:{key}")
        pipe.hget(f"{tag}:na", key)
        pipe.hget(f"{tag}:hs", key)
        pipe.hget(f"{tag}:lo", key)
        pipe.zscore(f"{tag}:pk", key)
        pipe.zrange(f"{tag}:q:{key}", 0, 2)
        queued, refresh, allowed, blob, holder, parked, head = pipe.execute()
        if not (queued or refresh or allowed or blob or holder):
            return None
        state, robots = _state_from(blob or b"")
        # (an entry: band byte, rank byte, 64-bit fingerprint, then the request)
        records = self.redis.hmget(f"{tag}:e", head) if head else []
        return {"queued": int(queued) + int(refresh), "queued_refresh": int(refresh),
                "in_flight": 1 if holder else 0, "active": bool(holder),
                "leased_by": holder.decode() if isinstance(holder, bytes) else holder,
                "delay": state.delay, "backoff": state.backoff,
                "crawl_delay": state.crawl_delay, "learned_floor": state.floor,
                "next_allowed": float(allowed) if allowed else None,  # (Redis's clock)
                "parked_until": float(parked) if parked else None,
                "head_data": [record[10:] for record in records if record]}

    def discovery_waiting(self, key: str) -> bool | None:
        """As Redis said when this worker last leased the key (None: never leased here)."""
        return self._discovery.get(key)

    def active_keys(self) -> int:
        return len(self._states)

    durable = True  # shared between workers: requests travel serialised

    def attach(self, hooks: Any) -> None:
        self.hooks = hooks  # wake(), seeds(urls), robots_import(...)

    def shared_counts(self, name: str) -> SharedCounts:
        return SharedCounts(self.redis, f"{self.prefix}:counts:{name}")

    def shared_log(self, name: str, on_items: Callable[[list[bytes]], None],
                   on_stat: Callable[[str, float], None]) -> SharedLog:
        return SharedLog(self.redis, f"{self.prefix}:{name}", self.worker, on_items,
                         on_stat=on_stat)

    def open(self) -> None:
        self.redis.ping()  # fail at start, with the connection error, if Redis is not there
        if self.bloom is not None:
            self.bloom.open()

    def band_sizes(self) -> list[int] | None:
        return None  # the bands live in Redis, spread over shards

    def admitted_since(self, mark: int) -> tuple[list[int], int]:
        return [], mark

    def admitted_mark(self) -> int:
        return 0

    def flush(self) -> None:
        """Start an exchange with Redis in a thread (unless one is still running)."""
        if self._syncing or self._closed:
            return
        now = time.time()
        quiet = not (self._outbox or self._release or self._done or self._confirm or
                     self._claim_open or self._promotions or
                     (self._look_again and self._look_again[0][0] <= now))
        if quiet and self._idle and now - self._exchanged_at < self.IDLE_POLL:
            return  # the last poll found nothing ready: poll less often while idle
        ops, take, counts = self._collect()
        self._syncing = True
        self._running = ops
        d = threads.deferToThread(self._exchange_locked, ops, take, counts)
        d.addCallbacks(self._exchanged, self._exchange_failed, errbackArgs=(ops,))

    def _exchange_locked(self, ops: dict[int, ShardOps], take: list[int],
                         counts: dict[str, Any]) -> dict[str, Any]:
        with self._lock:  # close() waits for it, and reads what it answered
            self._last = None
            self._last = self._exchange(ops, take, counts)
            return self._last

    def close(self, commit: bool = True) -> None:
        """Give back what this worker holds but has not fetched, and send the last changes
        (leases of entries whose processing did not finish expire, whatever ``commit``)."""
        self._closed = True
        if self._syncing:  # an exchange still runs, or its answer was not handled yet
            with self._lock:
                out = self._last
            self._requeue(self._running if out is None else out["failed"])
            self._settle(out)
        held: dict[str, list[int]] = {}
        for entry_id, key in self._held.items():
            held.setdefault(key, []).append(entry_id)
        # keys this worker still locks: their leased entries go back to their queues now
        # (entries already fetched, whose processing did not finish, expire with their lease)
        for key in list(self._states):
            self._release_key(key, None, requeue=held.get(key, []))
        self._ready.clear()
        self._parked.clear()
        # URLs waiting for a second look at another worker's claim: pushed unchecked (fetched
        # twice if that worker lives and pushed them, rather than lost if it died)
        self._outbox += [(entry, False, None) for _, entry in self._look_again]
        self._look_again = []
        ops, _, counts = self._collect()
        try:
            self._exchange(ops, [0] * (self.bands + 1), counts, final=True)
        except Exception as exc:  # noqa: BLE001 - the leases expire anyway
            logger.warning("Redis frontier: final exchange failed (%s); this worker's leases "
                           "return to the frontier when they expire", exc)

    def publish_stats(self, stats: dict[str, Any]) -> None:
        """Add this worker's numeric stats to the crawl's totals in scrapy-redis's stats hash
        (``<spider>:stats``), once, at close."""
        if not self.stats_key:
            return
        pipe = self.redis.pipeline(transaction=False)
        for key, value in stats.items():
            if isinstance(value, (int, float)) and not isinstance(value, bool) and \
                    not key.startswith(("memusage/", "start_time", "finish_time")):
                pipe.hincrbyfloat(self.stats_key, key, value)
        pipe.hincrby(self.stats_key, "workers_finished", 1)
        try:
            pipe.execute()
        except Exception as exc:  # noqa: BLE001 - a lost total is not worth a failed close
            logger.warning("Redis frontier: stats not added to %s (%s)", self.stats_key, exc)

    # -- internals ---------------------------------------------------------------------------
    def _let_go(self, entry: Entry) -> None:
        """Behind the fence (Redis not answered for half a lease): forget the entry and its
        key, unfetched; the lease expires in Redis and the entry returns to its queue."""
        self._held.pop(entry.id, None)
        self._states.pop(entry.key, None)
        parked = self._parked.pop(entry.key, None)
        if parked is not None:
            self._held.pop(parked.id, None)
        self._stat("frontier/redis/leases_fenced", 1)

    def _gone(self, keys: set[str]) -> None:
        """Keys whose lease expired in Redis while this worker held them (it was stalled or
        cut off longer than the lease): the fence, renewed by the exchange that found this
        out, must not cover them; their entries not yet dispatched are let go."""
        waiting = [entry for _, _, entry in self._ready if entry.key in keys]
        if waiting:
            self._ready = [item for item in self._ready if item[2].key not in keys]
            heapq.heapify(self._ready)
        for entry in waiting:
            self._let_go(entry)
        for key in keys.difference(entry.key for entry in waiting):
            self._states.pop(key, None)  # (its entry in flight: done() frees nothing)
            parked = self._parked.pop(key, None)  # waiting for its robots.txt
            if parked is not None:
                self._let_go(parked)

    def _after_restart(self, dropped: int) -> None:
        """Redis restarted (or a shard failed over) and may lack writes it acknowledged: let
        go of every lease (entries waiting and in flight: their pages may be fetched again),
        the completions not sent (dropped, their pages fetched again rather than their links
        lost), and what this worker remembers of admitted links (the shared seen set decides
        again)."""
        waiting = len(self._ready) + len(self._parked)
        in_flight = len(self._held) - waiting
        self._release.clear()  # keys (and entries to requeue) leased from before: not ours
        self._ready.clear()
        self._parked.clear()
        self._states.clear()
        self._held.clear()
        self._stat("frontier/redis/restarts", 1)
        if waiting:
            self._stat("frontier/redis/leases_fenced", waiting)
        again = dropped + max(0, in_flight)
        if again:
            self._stat("frontier/redis/refetched_after_restart", again)
        logger.warning("Redis frontier: the Redis server restarted or failed over since the "
                       "last exchange and may have lost writes it had acknowledged; this worker "
                       "let go of its leases and forgets the links it admitted lately (up to %d "
                       "pages may be fetched again)", again)
        if self.hooks is not None:
            self.hooks.lost_writes()

    def _complete_one(self, entry_id: int) -> None:
        key = self._held.pop(entry_id, None)
        if key is not None:
            self._done.append((entry_id, key))

    def _release_key(self, key: str, delay: float | None,
                     requeue: Sequence[int] | int = ()) -> None:
        """Unlock ``key`` at the next exchange; its next fetch ``delay`` seconds after now
        (None: next allowed time unchanged); ``requeue``: leased entries to put back."""
        state = self._states.pop(key, None)
        blob = _state_blob(*state) if state is not None else ""
        ids = [requeue] if isinstance(requeue, int) else list(requeue)
        for entry_id in ids:
            self._held.pop(entry_id, None)
        back = ",".join(str(i // self.shards) for i in ids if i)
        self._release.append((key, delay, blob, back, time.time()))

    def _collect(self) -> tuple[dict[int, ShardOps], list[int], dict[str, Any]]:
        ops: dict[int, ShardOps] = {}

        def shard(key: str) -> ShardOps:
            n = shard_of(key, self.shards)
            if n not in ops:
                ops[n] = ShardOps()
            return ops[n]

        now = time.time()
        if self._look_again and self._look_again[0][0] <= now:  # in the order they came
            looks = [entry for at, entry in self._look_again if at <= now]
            self._look_again = self._look_again[len(looks):]
            self._outbox += [(entry, LOOK_AGAIN, None) for entry in looks]
        outbox, self._outbox = self._outbox, []
        trap_pattern = self.hooks.trap_pattern if self.pattern_cap and self.hooks else None
        for entry, check, due in outbox:
            op = shard(entry.key)
            rank = priority_rank(entry.priority) + (REFRESH_RANK if entry.refresh else 0)
            blob = _HEAD.pack(entry.band, rank, to_unsigned(entry.fp)) + entry.data
            # a new URL (not a delayed refresh) counts against its host's budget and its
            # pattern's cap; whether the pattern is a trap is this worker's evidence (its
            # fetched pages of the pattern), asked here, on the reactor thread
            host, pattern, trap = "", "", False
            if due is None and (self.host_budget or trap_pattern is not None):
                try:
                    url = entry_url(entry.data)
                    host = host_of(url) if self.host_budget else ""
                    if trap_pattern is not None:
                        pattern, trap = trap_pattern(url)
                except (ValueError, KeyError, pickle.UnpicklingError):
                    pass
            op.push.append(Push(entry, check, blob, due, host, pattern, "1" if trap else ""))
        now = time.time()
        for key, delay, state, back, since in self._release:
            # the delay counts from the response; what is left of it from now on
            left = "" if delay is None else repr(round(max(0.0, delay - (now - since)), 3))
            if key in self._parking:
                self._parking.discard(key)
                left = "P" + left if left else left  # parked in Redis until then
            shard(key).release += [key, left, state, back]
        self._release = []
        for entry_id, key in self._done:
            shard(key).done.append(f"{entry_id // self.shards}|{key}")
        self._done = []
        for key, fp, band in self._promotions:
            shard(key).promote.append((key, _FP.pack(to_unsigned(fp)), band))
        self._promotions = []
        for entry_id, key in self._held.items():
            shard(key).renew.append(f"{entry_id // self.shards}|{key}")
        for key in self._states:
            shard(key).renew_keys.append(key)
        room = self.buffer - len(self._ready) - len(self._states)
        take = [0] * (self.bands + 1)  # per band, then the total, for each shard
        if room > 0 and not self._closed:
            # ready keys are not spread evenly over the shards: ask each for a share and a
            # half (what comes beyond the room waits in the local buffer, its key leased)
            per_shard = max(2, -(-3 * room // (2 * self.shards)))
            weight = sum(self.weights)
            take = [max(1, round(per_shard * w / weight)) for w in self.weights] + [per_shard]
        reap = now - self._reaped_at >= 1.0
        if reap:
            self._reaped_at = now
        counts = {"seeds": 100 if self.seeds_key and room > 0 and not self._closed else 0,
                  "release_claim": int(self._claim_open), "reap": int(reap),
                  "confirm": self._confirm}
        self._confirm_sent, self._confirm = self._confirm, []
        self._claim_open = False
        return ops, take, counts

    def _settle(self, out: dict[str, Any] | None) -> None:
        """After an exchange (None: it failed whole): completions and claims' ends it could
        not send go with the next one."""
        if out is None:
            self._confirm += self._confirm_sent
        else:
            self._confirm += out["confirm"]
            self._done += [self._entry_of(member) for member in out["done_back"]]
        self._confirm_sent = []

    def _entry_of(self, member: str) -> tuple[int, str]:
        """(entry id, key) of an entry's member in a shard ("id in the shard|key")."""
        rid, _, key = member.partition("|")
        return int(rid) * self.shards + shard_of(key, self.shards), key

    def _exchange(self, ops: dict[int, ShardOps], take: list[int], counts: dict[str, Any],
                  final: bool = False) -> dict[str, Any]:
        """Runs in a thread: the exchange with Redis (see :class:`Exchange`)."""
        return self._exchanger.run(ops, take, counts, final)

    def _exchanged(self, out: dict[str, Any]) -> None:
        if self._closed:  # close() handled it
            return
        self._syncing = False
        now = time.time()
        self._fence.answered(out["answered"], out["sent_at"])
        if out["gone"]:  # (before the entries taken now: a key may be gone and taken again)
            self._gone(set(out["gone"]))
        self._requeue(out["failed"])
        self._settle(out)
        if out["restarted"]:
            self._after_restart(out["dropped"])
        if out["error"]:
            self._stat("frontier/redis/errors", 1)
            self._health.failed("frontier exchange", out["error"])
        else:
            self._health.answered("frontier exchange")
        self._exchanged_at = now
        self._idle = not out["taken"] and not out["seeds"]
        self._stat("frontier/redis/exchanges", 1)
        self._stat("frontier/redis/commands", out["commands"])
        if out["filtered"]:
            self._stat("dupefilter/redis/filtered", out["filtered"])
        if out["reclaimed"]:  # seen, admitted by a worker that died before its push
            self._stat("dupefilter/redis/reclaimed", out["reclaimed"])
        if out["late_claims"]:  # and this worker's claims another may have found stale
            self._stat("dupefilter/redis/late_claims", out["late_claims"])
        if out["wait"]:  # seen while a claim was open: looked at again (see RedisBloom)
            self._stat("dupefilter/redis/second_looks", len(out["wait"]))
            ttl = self.lease_ttl
            first = [entry for entry, looks in out["wait"] if not looks]
            again = [entry for entry, looks in out["wait"] if looks]
            # the second look a second later (its worker confirms its push by then, even one
            # back from an outage), then every quarter of the claim's time until it is stale
            self._look_again += [(now + min(1.0, ttl), entry) for entry in first]
            self._look_again += [(now + max(1.0, ttl / 4), entry) for entry in again]
            self._look_again.sort(key=lambda item: item[0])
        if out["lagging"]:
            self._stat("frontier/redis/held_for_replicas", 1)
        if out["pushed"]:
            self._stat("frontier/redis/pushed", out["pushed"])
        if out["over"]:  # over the host's budget, counted by all workers together
            self._stat("admission/rejected/host_budget", out["over"])
        if out["promoted"]:  # queued entries moved to a better band, in Redis
            self._stat("frontier/promoted", out["promoted"])
        if out["pover"]:  # a trap pattern over its cap, counted by all workers together
            self._stat("admission/rejected/pattern_cap", out["pover"])
        if out["expired"]:
            self._stat("frontier/redis/leases_expired", out["expired"])
        if out["lost"]:
            self._stat("frontier/redis/leases_lost", out["lost"])
        remote = out["remote"]
        if remote is not None and len(remote) == self.shards:
            self._remote = sum(remote.values())
            self._remote_parked = sum(out["parked"].values())
        if out["seeds_waiting"] is not None:
            self._seeds_waiting = out["seeds_waiting"]
        for key, entry_id, blob, state_blob, discovery in out["taken"]:
            self._discovery[key] = discovery > 0
            self._discovery.move_to_end(key)
            if len(self._discovery) > self.track_admitted:
                self._discovery.popitem(last=False)
            band, rank, fp = _HEAD.unpack_from(blob)
            entry = Entry(key, band, bytes(blob[_HEAD.size:]), fp, entry_id,
                          PRIORITY_RANKS // 2 - 1 - rank % REFRESH_RANK, rank >= REFRESH_RANK)
            state, robots = _state_from(state_blob)
            self._states[key] = (state, robots)
            self._held[entry_id] = key
            if robots and self.hooks is not None:
                for origin, (status, fetched_at, body) in robots.items():
                    self.hooks.robots_import(origin, status, body.encode("latin-1"), fetched_at)
            heapq.heappush(self._ready, (now, next(self._seq), entry))
        if out["taken"]:
            self._stat("frontier/redis/leased", len(out["taken"]))
        if out["seeds"] and self.hooks is not None:
            self.hooks.seeds(out["seeds"])
            self._claim_open = True  # released by the exchange that pushes them
        if (out["taken"] or out["seeds"]) and self.hooks is not None:
            self.hooks.wake()

    def _exchange_failed(self, failure: Any, ops: dict[int, ShardOps]) -> None:
        """Redis unreachable (or a script error): keep everything for the next exchange."""
        if self._closed:  # close() handled it
            return
        self._syncing = False
        self._requeue(ops)
        self._settle(None)
        self._stat("frontier/redis/errors", 1)
        self._health.failed("frontier exchange", failure.getErrorMessage())

    def _requeue(self, ops: dict[int, ShardOps]) -> None:
        """Work of shards whose exchange failed, back for the next one."""
        for op in ops.values():
            for push in op.push:
                self._outbox.append((push.entry, push.check, push.due))
            now = time.time()
            for i in range(0, len(op.release), 4):
                key, left, blob, back = op.release[i:i + 4]
                if left.startswith("P"):
                    self._parking.add(key)
                    left = left[1:]
                self._release.append((key, float(left) if left else None, blob, back, now))
            for key, fp, band in op.promote:
                self._promotions.append((key, to_signed(_FP.unpack(fp)[0]), band))
            self._done += [self._entry_of(member) for member in op.done]

