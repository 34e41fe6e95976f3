"""The reactor side of a worker's exchanges with the shared frontier
(:mod:`crawler_ext.distributed.frontier`): it collects what an exchange carries from the
outbox, the lease book and the open claims, runs the exchange in a thread (one at a time), and
applies what it answers: entries leased, seeds, work of failed shards back for the next one,
a restart's lost writes, the stats.  Reactor thread only, but for the exchange itself."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Sequence
from typing import Any

from twisted.internet import threads
from twisted.python.failure import Failure

from crawler_ext.distributed.claims import Claims
from crawler_ext.distributed.exchange import Exchange
from crawler_ext.distributed.fence import LeaseFence
from crawler_ext.distributed.health import health_of
from crawler_ext.distributed.leases import LeaseBook
from crawler_ext.distributed.outbox import Outbox
from crawler_ext.distributed.shards import LOOK_AGAIN, Asks, Exchanged, ShardOps, shard_of
from crawler_ext.frontier.storage import Entry

__all__ = ["Sync"]

logger = logging.getLogger(__name__)

#: what an exchange answers, counted in these stats
_COUNTED = (("filtered", "dupefilter/redis/filtered"),
            ("reclaimed", "dupefilter/redis/reclaimed"),  # admitted by a worker that died
            ("late_claims", "dupefilter/redis/late_claims"),  # claims another found stale
            ("pushed", "frontier/redis/pushed"),
            ("over", "admission/rejected/host_budget"),  # counted by all workers together
            ("promoted", "frontier/promoted"),  # queued entries moved to a better band
            ("pover", "admission/rejected/pattern_cap"),  # a trap pattern over its cap
            ("expired", "frontier/redis/leases_expired"),
            ("repeated", "frontier/redis/pushes_repeated"),  # their first answer was lost
            ("lost", "frontier/redis/leases_lost"))


class Sync:
    """The exchanges of one worker: :meth:`flush` starts one in a thread unless one runs."""

    #: seconds between polls while there is nothing to send and the shared frontier holds
    #: nothing this worker could take: an empty frontier, its keys leased by this worker
    IDLE_POLL = 0.5

    def __init__(self, redis: Any, exchanger: Exchange, parts: tuple[Outbox, LeaseBook, Claims],
                 fence: LeaseFence, weights: Sequence[float], buffer: int,
                 stat: Callable[[str, float], None]) -> None:
        self.exchanger = exchanger
        self.outbox, self.leases, self.claims = parts
        self.fence = fence
        self.shards = exchanger.shards
        self.weights = list(weights)
        self.buffer = buffer  # leased entries and keys this worker holds at most
        self.seeds = exchanger.layout.seeds_key is not None  # popped from a start-URLs list
        self.pattern_cap = exchanger.layout.pattern_cap
        self._stat = stat
        self.hooks: Any = None  # the scheduler's (see RedisFrontier.attach)
        self.remote: int | None = None  # entries queued or leased anywhere; None: not known
        self.empty_since: float | None = None  # monotonic: since when ``remote`` reads 0
        self.remote_parked = 0  # entries of parked keys in Redis (all workers')
        self._running: dict[int, ShardOps] = {}  # the ops of the exchange running in a thread
        self._last: Exchanged | None = None  # what it answered (None: it failed)
        self._syncing = False
        self._closed = False
        self._reaped_at = 0.0
        self._exchanged_at = 0.0
        self._idle = False  # the last exchange took nothing
        self._turn = 0  # the shard asked first for a key when the room is smaller than them
        self._lock = threading.Lock()
        self._health = health_of(redis)  # one log line per outage for all components

    def flush(self) -> None:
        """Start an exchange with Redis in a thread (unless one is still running)."""
        if self._syncing or self._closed:
            return
        now = time.time()
        quiet = self.outbox.quiet() and not self.leases.unsent() and self.claims.quiet(now)
        if quiet and self._idle and not self._elsewhere() \
                and now - self._exchanged_at < self.IDLE_POLL:
            return  # the last poll found nothing ready: poll less often while idle
        ops, take, asks = self._collect()
        self._syncing = True
        self._running = ops
        d = threads.deferToThread(self._exchange_locked, ops, take, asks)
        d.addCallbacks(self._exchanged, self._exchange_failed, errbackArgs=(ops,))

    def _elsewhere(self) -> bool:
        """Whether the shared frontier holds entries this worker did not lease (queued, or
        leased by another worker): their keys come ready, and a worker that found nothing
        polls as often as a busy one, or the busy ones, exchanging more often, would take
        every key as it comes ready and leave it idle."""
        return self.remote is None or self.remote > self.leases.held()

    def exchange_now(self) -> list[Entry]:
        """Blocking: one exchange, here and now (tests, benchmarks); the entries it leased."""
        before = {id(entry) for entry in self.leases.buffered()}
        ops, take, asks = self._collect()
        try:
            out = self.exchanger.run(ops, take, asks)
        except Exception as exc:  # as a failed exchange in the thread, then raised
            self._exchange_failed(Failure(exc), ops)
            raise
        self._exchanged(out)
        return [e for e in self.leases.buffered() if id(e) not in before]

    def _exchange_locked(self, ops: dict[int, ShardOps], take: dict[int, list[int]],
                         asks: Asks) -> Exchanged:
        with self._lock:  # close() waits for it, and reads what it answered
            self._last = None
            self._last = self.exchanger.run(ops, take, asks)
            return self._last

    def close(self) -> None:
        """The last exchange: what this worker holds but has not fetched goes back (leases
        of entries whose processing did not finish expire)."""
        self._closed = True
        if self._syncing:  # an exchange still runs, or its answer was not handled yet
            with self._lock:
                out = self._last
            self._requeue(self._running if out is None else out.failed)
            self._settle(out)
        self.leases.give_back()
        self.outbox.add(self.claims.unchecked(), False, admitted_here=False)
        ops, _, asks = self._collect()
        try:
            self.exchanger.run(ops, {}, asks, final=True)
        except Exception as exc:  # noqa: BLE001 - the leases expire anyway
            logger.warning("Redis frontier: final exchange failed (%s); this worker's leases "
                           "return to the frontier when they expire", exc)

    def _collect(self) -> tuple[dict[int, ShardOps], dict[int, list[int]], Asks]:
        ops: dict[int, ShardOps] = {}

        def shard(key: str) -> ShardOps:
            n = shard_of(key, self.shards)
            if n not in ops:
                ops[n] = ShardOps()
            return ops[n]

        now = time.time()
        self.outbox.add(self.claims.due(now), LOOK_AGAIN, admitted_here=False)
        hooks = self.hooks
        self.outbox.collect(shard, hooks.trap_pattern if self.pattern_cap and hooks else None)
        self.leases.collect(shard, time.time())
        room = self.buffer - self.leases.occupying(now)
        take = self._take(room) if room > 0 and not self._closed else {}
        reap = now - self._reaped_at >= 1.0
        if reap:
            self._reaped_at = now
        confirm, release_claim = self.claims.to_send()
        asks = Asks(seeds=100 if self.seeds and room > 0 and not self._closed else 0,
                    release_claim=release_claim, reap=reap, confirm=confirm)
        return ops, take, asks

    def _take(self, room: int) -> dict[int, list[int]]:
        """What an exchange asks each shard for (per band, then the total), for ``room``
        places: ready keys are not spread evenly over the shards, so a share and a half of
        the room (what comes beyond the room waits in the local buffer, its key leased).  A
        room smaller than that many shards asks one key of as many shards, taken in turn:
        a worker with a few free places does not hold keys other workers could fetch from
        (asking every shard for two, 8 places held up to 32 keys and starved the others)."""
        want = -(-3 * room // 2)
        if want >= self.shards:
            asked: Sequence[int] = range(self.shards)
            per_shard = -(-want // self.shards)
        else:
            asked = [(self._turn + i) % self.shards for i in range(want)]
            self._turn = (self._turn + want) % self.shards
            per_shard = 1
        weight = sum(self.weights)
        quotas = [max(1, round(per_shard * w / weight)) for w in self.weights] + [per_shard]
        return {n: quotas for n in asked}

    def _settle(self, out: Exchanged | None) -> None:
        """After an exchange (None: it failed whole): completions and claims' ends it could
        not send go with the next one."""
        self.claims.settle(None if out is None else out.confirm)
        if out is not None:
            self.leases.completions_back(out.done_back)

    def _exchanged(self, out: Exchanged) -> None:
        if self._closed:  # close() handled it
            return
        self._syncing = False
        now = time.time()
        self.fence.answered(out.answered, out.sent_at)
        self.fence.lagging(out.lagging_shards)
        if out.gone:  # (before the entries taken now: a key may be gone and taken again)
            let_go, released = self.leases.gone(set(out.gone))
            if let_go:
                self._stat("frontier/redis/leases_fenced", let_go)
            if released:  # (as a release that finds its lease expired in Redis counts)
                self._stat("frontier/redis/leases_lost", released)
        self._requeue(out.failed)
        self._settle(out)
        if out.restarted:
            self._after_restart(out.dropped)
        if out.error:
            self._stat("frontier/redis/errors", 1)
            self._health.failed("frontier exchange", out.error)
        else:
            self._health.answered("frontier exchange")
        self._exchanged_at = now
        self._idle = not out.taken and not out.seeds
        self._stat("frontier/redis/exchanges", 1)
        self._stat("frontier/redis/commands", out.commands)
        for name, stat in _COUNTED:
            if getattr(out, name):
                self._stat(stat, getattr(out, name))
        if out.wait:  # seen while a claim was open: looked at again (see RedisBloom)
            self._stat("dupefilter/redis/second_looks", len(out.wait))
            self.claims.wait(out.wait, now)
        if out.lagging:
            self._stat("frontier/redis/held_for_replicas", 1)
        if out.remote is not None and len(out.remote) == self.shards:
            self.remote = sum(out.remote.values())
            if self.remote:
                self.empty_since = None
            elif self.empty_since is None:
                self.empty_since = time.monotonic()
            self.remote_parked = sum(out.parked.values())
        if out.seeds_waiting is not None:
            self.claims.seeds_waiting = out.seeds_waiting
        hooks = self.hooks
        for key, entry_id, record, state, discovery, token in out.taken:
            _, robots = self.leases.leased(key, entry_id, record, state, discovery, now,
                                           token)
            if robots and hooks is not None:
                for origin, (status, fetched_at, body) in robots.items():
                    hooks.robots_import(origin, status, body.encode("latin-1"), fetched_at)
        if out.taken:
            self._stat("frontier/redis/leased", len(out.taken))
        if out.seeds and hooks is not None:
            hooks.seeds(out.seeds)
            self.claims.seeds_taken()  # released by the exchange that pushes them
        if (out.taken or out.seeds) and hooks is not None:
            hooks.wake()

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
            self.outbox.requeue(op)
            self.leases.requeue(op)

    def _after_restart(self, dropped: int) -> None:
        """Redis restarted (or a shard failed over) and may lack writes it acknowledged: let
        go of every lease (entries waiting and in flight: their pages may be fetched again),
        the completions not sent (dropped, their pages fetched again rather than their links
        lost), and what this worker remembers of admitted links (the shared seen set decides
        again)."""
        waiting, in_flight = self.leases.forget()
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
