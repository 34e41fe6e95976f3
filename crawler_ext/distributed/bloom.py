"""The seen set of a distributed crawl: a Bloom filter in Redis bitmaps, split into blocks.

A fingerprint picks one block (from a mix of all its bits, so one host's URLs spread over all
blocks) and ``k`` bit positions inside it; a Lua script sets them and answers "new" when any
was still 0 -- test and set in one atomic step, so of two workers admitting one URL at once
exactly one wins.  Blocks are separate keys with their own hash tags: each stays far under
Redis's 512 MB string limit (``BLOCK_BITS`` = 2^27 bits, 16 MiB) and on Redis Cluster they
spread over the slots.  The size (bits, blocks, k) is fixed when the filter is created, from
``CRAWLER_EXT_BLOOM_CAPACITY`` and ``CRAWLER_EXT_BLOOM_ERROR_RATE``, and stored beside it, so
every worker uses the same geometry whatever its own settings say.

Admitting a URL and pushing it into the frontier are two round trips (on a cluster, to
different nodes): a worker killed between them would leave the URL seen and never queued,
lost for every worker.  So with ``claim_ttl`` set, an admission is also a *claim* kept beside
its block until the worker confirms the push (``confirm``, after the push was acknowledged).
A URL seen while its claim is open is looked at again (the frontier: a second later, then
every quarter of ``claim_ttl``, the lease time): a claim gone by then was confirmed, the URL is
seen; a claim still there and older than ``claim_ttl`` is a dead worker's, killed in between,
and the URL is new again for the one who finds it (counted: ``reclaimed``).  A worker only
cut off from Redis for less than ``claim_ttl`` confirms its push as soon as it is back:
nothing is fetched twice (one cut off longer counts its late confirmations: ``late_claims``).
"""

from __future__ import annotations

import logging
import math
from typing import Any

from crawler_ext.distributed.lua import lua

__all__ = ["BLOCK_BITS", "CLAIMED", "NEW", "RECLAIMED", "SEEN", "RedisBloom", "bloom_geometry"]

logger = logging.getLogger(__name__)

BLOCK_BITS = 1 << 27
#: answers of ``add_many``
SEEN, NEW, RECLAIMED, CLAIMED = 0, 1, 2, 3
_MASK = (1 << 64) - 1

# KEYS: the block, its claims.  ARGV: k, claim ttl, claims kept; per fingerprint its name, a
# second look or not, k positions.  Returns per fingerprint one of the codes above.
_LUA_ADD = lua("bloom_add.lua")


def bloom_geometry(capacity: int, error_rate: float) -> tuple[int, int, int]:
    """(bits per block, blocks, hashes) for ``capacity`` items at ``error_rate``."""
    bits = math.ceil(-capacity * math.log(error_rate) / math.log(2) ** 2)
    blocks = max(1, math.ceil(bits / BLOCK_BITS))
    hashes = max(1, round(bits / capacity * math.log(2)))
    return math.ceil(bits / blocks), blocks, hashes


def _mix(x: int) -> int:
    """splitmix64's finaliser: every output bit depends on every input bit."""
    x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9 & _MASK
    x = (x ^ (x >> 27)) * 0x94D049BB133111EB & _MASK
    return x ^ (x >> 31)


class RedisBloom:
    def __init__(self, redis: Any, prefix: str, capacity: int = 1_000_000,
                 error_rate: float = 0.01, claim_ttl: float = 0.0,
                 claims_kept: int = 1_000_000) -> None:
        self.redis = redis
        self.prefix = prefix
        self.meta_key = f"{prefix}:bloom:meta"
        self.capacity, self.error_rate = capacity, error_rate
        self.block_bits, self.blocks, self.hashes = bloom_geometry(capacity, error_rate)
        self._script = redis.register_script(_LUA_ADD)
        self.claim_ttl = claim_ttl  # 0: no claims (a seen set without a frontier)
        self.claims_kept = claims_kept  # per block, the newest (a bound for dead workers')
        self.last_commands = 0
        self.added = 0
        self.reclaimed = 0

    def open(self) -> None:
        """Create the filter's geometry, or adopt the one another worker created."""
        wanted = {"block_bits": self.block_bits, "blocks": self.blocks, "hashes": self.hashes,
                  "capacity": self.capacity}
        pipe = self.redis.pipeline()
        for name, value in wanted.items():
            pipe.hsetnx(self.meta_key, name, value)
        pipe.hgetall(self.meta_key)
        stored = {k.decode() if isinstance(k, bytes) else k: int(v)
                  for k, v in pipe.execute()[-1].items()}
        if any(stored.get(k) != v for k, v in wanted.items()):
            logger.info("Redis seen set: using the existing filter's size (%s), not this "
                        "worker's settings (%s)", stored, wanted)
        self.block_bits, self.blocks, self.hashes = (stored["block_bits"], stored["blocks"],
                                                     stored["hashes"])
        self.capacity = stored["capacity"]

    def block_key(self, block: int) -> str:
        return f"{{{self.prefix}:b{block}}}:bloom"

    def claims_key(self, block: int) -> str:
        return f"{{{self.prefix}:b{block}}}:claims"

    def positions(self, fp: int) -> tuple[int, list[int]]:
        h = _mix(fp & _MASK)
        block = (h >> 40) % self.blocks
        h1, h2 = h & 0xFFFFFFFF, (_mix(h) & 0xFFFFFFFF) | 1
        m = self.block_bits
        return block, [(h1 + i * h2) % m for i in range(self.hashes)]

    def add_many(self, fingerprints: list[int],
                 second_look: list[bool] | None = None) -> list[int]:
        """Test-and-set: for each fingerprint NEW, SEEN, CLAIMED (seen, its admission not yet
        confirmed pushed: look again later, with ``second_look``) or RECLAIMED (at a second
        look, the claim had gone stale: new).  One pipelined round trip with one script call
        per block touched (blocking: call it from a thread)."""
        by_block: dict[int, list[int]] = {}
        args: dict[int, list[Any]] = {}
        for i, fp in enumerate(fingerprints):
            block, positions = self.positions(fp)
            by_block.setdefault(block, []).append(i)
            block_args = args.setdefault(block, [self.hashes, self.claim_ttl, self.claims_kept])
            block_args += [fp & _MASK, int(bool(second_look and second_look[i]))]
            block_args.extend(positions)
        pipe = self.redis.pipeline(transaction=False)
        order = list(by_block)
        for block in order:
            self._script(keys=[self.block_key(block), self.claims_key(block)],
                         args=args[block], client=pipe)
        self.last_commands = len(order)
        results = pipe.execute() if order else []
        codes = [SEEN] * len(fingerprints)
        for block, flags in zip(order, results):
            for i, flag in zip(by_block[block], flags):
                codes[i] = int(flag)
        self.added += sum(1 for c in codes if c in (NEW, RECLAIMED))
        self.reclaimed += codes.count(RECLAIMED)
        return codes

    def confirm(self, fingerprints: list[int], pipe: Any) -> int:
        """Queue on ``pipe`` the end of these fingerprints' claims (their push into the
        frontier was acknowledged); returns the number of commands queued."""
        if not self.claim_ttl:
            return 0
        by_block: dict[int, list[int]] = {}
        for fp in fingerprints:
            by_block.setdefault(self.positions(fp)[0], []).append(fp & _MASK)
        for block, members in by_block.items():
            pipe.zrem(self.claims_key(block), *members)
        return len(by_block)

    def memory_bytes(self) -> int:
        return self.block_bits * self.blocks // 8
