"""One exchange of a worker with the shared frontier in Redis: the part that runs in the
exchange thread, off the reactor (see :class:`~crawler_ext.distributed.frontier.RedisFrontier`,
which collects what an exchange carries and applies what it answers).

An exchange is at most three round trips: the seen set's test-and-set of the new links (when
there are any), one pipelined call of the exchange script per shard (push, release, renew,
reap, take), and -- once every shard took its pushes and a replica holds them -- the
completions of the pages whose links those were and the ends of the links' claims.  Before
it, the servers' identity is asked (a restart or failover may have lost acknowledged
writes), and again before the last round trip.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from crawler_ext.distributed.bloom import CLAIMED, SEEN, RedisBloom
from crawler_ext.distributed.identity import server_identity
from crawler_ext.distributed.lua import lua
from crawler_ext.distributed.shards import (CLAIMED_PUSH, LOOK_AGAIN, Asks, Claim, Exchanged,
                                            ShardLayout, ShardOps)
from crawler_ext.frontier.storage import Entry
from crawler_ext.int64 import to_unsigned

__all__ = ["Exchange"]


_LUA_READY = lua("frontier_ready.lua")

# KEYS[1]: the shard's entry hash (names the slot).  ARGV: a header of named values (JSON:
# see ``Exchange._call``), then the sections.  Returns: outstanding
# entries, expired leases, lost keys, taken (key, id, entry, state, new URLs still queued
# for the key, the lease's fencing token) flattened, over the budget, over the pattern cap,
# promoted, entries of parked
# keys, and the keys to renew whose lease had expired (gone).
_LUA_SYNC = _LUA_READY + lua("frontier_sync.lua")
_LUA_DONE = _LUA_READY + lua("frontier_done.lua")


# Seeds popped from the start-URLs list are claimed until the exchange that pushes them into
# the frontier, so no worker sees the crawl finished while seeds are on their way, and the
# seeds of a worker that dies in between go back to the list.  KEYS: the list, the claims
# hash and their expiry set (hash-tagged with the list's name: one slot).  ARGV: count,
# worker, ttl.  Returns popped seeds, seeds left, claims open.
_LUA_CLAIM = lua("seeds_claim.lua")


class Exchange:
    """The thread side of a frontier's exchanges: its scripts, and what it knows of the
    servers (their identity)."""

    ID_JUMP = 1 << 24  # entry ids skipped after a restart or failover (see _skip_ids)

    def __init__(self, redis: Any, layout: ShardLayout, bands: int, worker: str,
                 bloom: RedisBloom | None, clock: Callable[[], float]) -> None:
        self.redis = redis
        self.layout = layout
        self.bloom = bloom
        self.shards = layout.shards
        self.bands = bands
        self.worker = worker  # who holds a lease (see RedisFrontier.worker)
        self.lease_ttl = layout.lease_ttl
        self._tags = layout.tags
        self.clock = clock  # (the fence's clock, which a test may replace)
        self.script = self.redis.register_script(_LUA_SYNC)
        self._complete = self.redis.register_script(_LUA_DONE)
        self._claim = self.redis.register_script(_LUA_CLAIM)
        seeds_key = layout.seeds_key
        self._claim_keys = ([seeds_key, f"{{{seeds_key}}}:claims", f"{{{seeds_key}}}:claimed"]
                            if seeds_key else [])
        self._identity: tuple[str, ...] | None = None  # the servers' run ids
        # this worker's exchanges, numbered: a shard's script records the last one whose
        # pushes it queued, so pushes sent again after a lost answer are not queued twice
        self._seq = 0

    def _call(self, pipe: Any, n: int, op: ShardOps, take: list[int], reap: int) -> None:
        """Queue on ``pipe`` one call of the exchange's script for shard ``n`` (its
        completions go in the second round trip): a named header, then the sections."""
        header = {"prefix": self._tags[n], "worker": self.worker, "ttl": self.lease_ttl,
                  "bands": self.bands, "push": len(op.push), "release": len(op.release) // 5,
                  "done": 0, "renew": len(op.renew), "renew_keys": len(op.renew_keys),
                  "promote": len(op.promote), "take": take[:-1], "total": take[-1],
                  "reap": reap, "budget": self.layout.host_budget,
                  "cap": self.layout.pattern_cap, "share": self.layout.refresh_share,
                  "seq": self._seq}
        args: list[Any] = [json.dumps(header, separators=(",", ":"))]
        now = time.time()
        for push in op.push:
            delay = "" if push.due is None else repr(round(max(0.0, push.due - now), 3))
            args += [push.entry.key, push.entry.band, delay, push.blob, push.host, push.pattern,
                     push.trap, push.sent]
        args += op.release + op.renew + op.renew_keys
        for key, fp, band in op.promote:
            args += [key, fp, band]
        self.script(keys=[self._tags[n] + ":e"], args=args, client=pipe)

    def run(self, ops: dict[int, ShardOps], take: dict[int, list[int]], asks: Asks,
            final: bool = False) -> Exchanged:
        """Runs in a thread: a pipelined round trip (after one to the seen set when links need
        it), then, once its pushes were answered, one with the completions and the seen set's
        claims of those pushes: on a cluster one pipeline reaches the nodes one by one, and a
        completion (or a claim's end) sent beside the push of the page's links could be
        applied, and the links lost, with a kill between two nodes."""
        # the fence counts from before the first command is sent (a cluster's pipeline sends
        # each command at once), whatever comes between (a stalled process, a slow link)
        sent_at = self.clock()
        self._seq += 1
        for op in ops.values():  # each push names the exchange it was first sent in
            op.push = [push if push.sent else push._replace(sent=self._seq) for push in op.push]
        # a server restarted or failed over since the last exchange may have lost writes it
        # had acknowledged: the completions and claims' ends from before are not sent
        identity = server_identity(self.redis, self._tags)
        known, self._identity = self._identity, identity
        changed = {n for n in range(self.shards) if known and identity[n] != known[n]}
        restarted = bool(changed)
        dropped = 0
        if restarted:
            dropped, confirm = self._distrust(changed, ops, asks.confirm)
            asks = replace(asks, confirm=confirm)
        commands = 0  # in the pipeline below
        seen_commands = 0
        filtered = 0
        reclaimed = 0
        pushes = [(n, item) for n, op in ops.items() for item in op.push]
        checks = [(n, item) for n, item in pushes
                  if item.check is True or item.check == LOOK_AGAIN]
        wait: list[tuple[Entry, bool]] = []  # seen, a claim open: entry, a second look
        if checks and self.bloom is not None:
            before = self.bloom.reclaimed
            codes = self.bloom.add_many([to_unsigned(item.entry.fp) for _, item in checks],
                                        [item.check == LOOK_AGAIN for _, item in checks])
            seen_commands = self.bloom.last_commands
            reclaimed = self.bloom.reclaimed - before
            rejected = {id(item) for (_, item), code in zip(checks, codes)
                        if code in (SEEN, CLAIMED)}
            wait = [(item.entry, item.check == LOOK_AGAIN)
                    for (_, item), code in zip(checks, codes) if code == CLAIMED]
            filtered = len(rejected) - len(wait)
            for op in ops.values():
                # the seen set now holds the new ones as this worker's claims: if their push
                # fails they are pushed again unchecked (checked again, they would be lost)
                op.push = [item._replace(check=CLAIMED_PUSH, claimed_at=sent_at)
                           if item.check is True or item.check == LOOK_AGAIN else item
                           for item in op.push if id(item) not in rejected]
        pipe = self.redis.pipeline(transaction=False)
        # every shard when keys are asked of any (each answers what its frontier holds)
        shards = range(self.shards) if take or asks.reap else list(ops)
        nothing = [0] * (self.bands + 1)
        for n in shards:
            self._call(pipe, n, ops.get(n) or ShardOps(), take.get(n, nothing), int(asks.reap))
            commands += 1
        if asks.release_claim:  # after the push of the seeds' entries above
            pipe.hdel(self._claim_keys[1], self.worker)
            pipe.zrem(self._claim_keys[2], self.worker)
            commands += 2
        if asks.seeds:
            self._claim(keys=self._claim_keys, args=[asks.seeds, self.worker,
                                                     self.lease_ttl], client=pipe)
            commands += 1
        seeds_at = commands - 1
        # a script that fails (a cluster node failing over) fails its shard alone: its work
        # goes back to the outbox, the other shards' results count
        results = pipe.execute(raise_on_error=False) if commands else []
        # a cluster node whose writes no replica holds yet (DirectPipeline.lagging)
        lagging = list(getattr(pipe, "lagging", ()))
        out = Exchanged(sent_at=sent_at, filtered=filtered,
                        pushed=len(pushes) - filtered - len(wait), reclaimed=reclaimed,
                        wait=wait, commands=commands + seen_commands, lagging=lagging,
                        restarted=restarted, dropped=dropped)
        if lagging:
            out.lagging_shards = self._served_by(set(lagging))
        remote: dict[int, int] = {}
        for n, result in zip(shards, results):
            if isinstance(result, Exception):
                out.failed[n] = ops.get(n) or ShardOps()
                out.error = f"{type(result).__name__}: {result}"
                out.pushed -= len(out.failed[n].push)
                continue
            out.answered.append(n)
            (outstanding, expired, lost, taken, over, pover, promoted, parked, gone,
             repeated) = result
            out.repeated += int(repeated)
            out.pushed -= int(repeated)
            out.gone += [key.decode("utf-8", "surrogatepass") for key in gone]
            out.parked[n] = int(parked)
            out.promoted += int(promoted)
            out.over += int(over)
            out.pover += int(pover)
            out.pushed -= int(over) + int(pover)
            remote[n] = int(outstanding)
            out.expired += int(expired)
            out.lost += int(lost)
            for i in range(0, len(taken), 6):
                key = taken[i].decode("utf-8", "surrogatepass")
                rid = int(taken[i + 1])
                out.taken.append((key, rid * self.shards + n, taken[i + 2], taken[i + 3],
                                  int(taken[i + 4]), taken[i + 5].decode("ascii")))
        out.remote = remote
        # asked again before completions and claims' ends go out: a failover (or restart)
        # during this exchange, which the client rode out by itself, moved its pushes
        confirm = asks.confirm
        second = confirm or any(op.done or any(item.check == CLAIMED_PUSH for item in op.push)
                                for op in ops.values())
        again = server_identity(self.redis, self._tags) if second else identity
        moved = {n for n in range(self.shards) if again[n] != identity[n]}
        if moved:
            self._identity = again
            out.restarted = True
            more, confirm = self._distrust(moved, ops, confirm)
            out.dropped += more
        out.moved = moved
        self._after_pushes(ops, confirm, out)
        if asks.seeds and not isinstance(results[seeds_at], Exception):
            popped, waiting, claims = results[seeds_at]
            out.seeds = [s.decode("utf-8", "replace") if isinstance(s, bytes) else s
                         for s in (popped or [])]
            out.seeds_waiting = int(waiting) + int(claims)
        if not results or len(shards) < self.shards or out.failed:
            out.remote = None if final else out.remote
        if final and out.failed:
            raise RuntimeError(out.error)
        return out

    def _served_by(self, nodes: set[str]) -> set[int]:
        """The shards that ``nodes`` serve (all of them when the client cannot say: the
        safe side, their fetches wait)."""
        try:
            return {n for n in range(self.shards)
                    if self.redis.get_node_from_key(self._tags[n]).name in nodes}
        except Exception:  # noqa: BLE001 - the cluster's slots in flux (a failover)
            return set(range(self.shards))

    def _distrust(self, shards: set[int], ops: dict[int, ShardOps],
                  confirm: list[Claim]) -> tuple[int, list[Claim]]:
        """The servers of ``shards`` changed (a restart or failover) and may have lost writes
        they acknowledged: no completion of this exchange is sure (a page's links went to
        every shard), and the claims of the URLs pushed to those shards stay open (another
        worker admits such a URL again once its claim is stale).  Returns the completions
        dropped and the claims' ends still to send."""
        self._skip_ids(shards)
        dropped = sum(len(op.done) for op in ops.values())
        for op in ops.values():
            op.done = []
        return dropped, [claim for claim in confirm if claim[1] not in shards]

    def _skip_ids(self, shards: set[int]) -> None:
        """The entry ids a server issued in the writes it lost would be issued again, and a
        completion or lease still naming one of them would hit another entry: the counters
        of ``shards`` jump past every id issued lately."""
        for n in shards:
            self.redis.incrby(f"{self._tags[n]}:id", self.ID_JUMP)

    def _after_pushes(self, ops: dict[int, ShardOps], confirm: list[Claim],
                      out: Exchanged) -> None:
        """The second round trip: completions, if every shard took its pushes (else they
        wait: the page's links may be in the one that failed), and the ends of the claims of
        the admissions pushed now and before.  What fails goes with the next exchange."""
        confirm = confirm + [(to_unsigned(item.entry.fp), n, item.claimed_at)
                             for n, op in ops.items()
                             if n not in out.failed and n not in out.moved
                             for item in op.push if item.check == CLAIMED_PUSH]
        dones = {n: op.done for n, op in ops.items() if op.done and n not in out.failed}
        if out.failed or out.lagging:
            # the failed shards' completions return with their other work; and while a
            # node's writes are on its primary alone, a failover could lose pushes whose
            # source pages were completed, or whose claims ended (in the seen set, on other
            # nodes): neither is sent until a replica holds the writes
            out.done_back = [member for members in dones.values() for member in members]
            dones = {}
        if out.lagging:
            out.confirm = confirm
            confirm = []
        pipe = self.redis.pipeline(transaction=False)
        for n, members in dones.items():
            self._complete(keys=[self._tags[n] + ":e"], args=[self._tags[n], *members],
                           client=pipe)
        commands = len(dones) + (self.bloom.confirm([fp for fp, _, _ in confirm], pipe)
                                 if self.bloom else 0)
        if not commands:
            return
        try:
            results = pipe.execute(raise_on_error=False)
        except Exception as exc:  # noqa: BLE001 - Redis gone between the two round trips
            results = [exc] * commands
        out.commands += commands
        for (n, members), result in zip(dones.items(), results):
            if isinstance(result, Exception):
                out.done_back += members
                out.error = f"{type(result).__name__}: {result}"
            else:
                outstanding, refused = result
                out.lost += int(refused)  # (a completion under a lost lease: refused)
                if out.remote is not None:
                    out.remote[n] = int(outstanding)
        if any(isinstance(result, Exception) for result in results[len(dones):]):
            out.confirm = confirm
            out.error = out.error or "the seen set's claims could not be ended"
        elif self.bloom is not None:
            # a claim ended later than the claims' time after it was taken (this worker was
            # stalled or cut off, or a node held its writes): another worker may have found
            # it stale and admitted the URL again, and the page is fetched twice
            now = self.clock()
            out.late_claims = sum(1 for _, _, at in confirm
                                     if now - at > self.bloom.claim_ttl)
