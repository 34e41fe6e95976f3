"""The seen set of a distributed crawl: a Bloom filter in Redis bitmaps, split into blocks.

A fingerprint picks one block (from a mix of all its bits, so one host's URLs spread over all
blocks) and ``k`` bit positions inside it; a Lua script sets them and answers "new" when any
was still 0 -- test and set in one atomic step, so of two workers admitting one URL at once
exactly one wins.  Blocks are separate keys with their own hash tags: each stays far under
Redis's 512 MB string limit (``BLOCK_BITS`` = 2^27 bits, 16 MiB) and on Redis Cluster they
spread over the slots.  The size (bits, blocks, k) is fixed when the filter is created, from
``CRAWLER_EXT_BLOOM_CAPACITY`` and ``CRAWLER_EXT_BLOOM_ERROR_RATE``, and stored beside it, so
every worker uses the same geometry whatever its own settings say.
"""

from __future__ import annotations

import logging
import math
from crawler_ext.distributed.lua import lua
from typing import Any

__all__ = ["BLOCK_BITS", "RedisBloom", "bloom_geometry"]

logger = logging.getLogger(__name__)

BLOCK_BITS = 1 << 27
_MASK = (1 << 64) - 1

# KEYS[1]: the block.  ARGV[1]: k; then k positions per fingerprint.  Returns 1 (new) / 0.
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
                 error_rate: float = 0.01) -> None:
        self.redis = redis
        self.prefix = prefix
        self.meta_key = f"{prefix}:bloom:meta"
        self.capacity, self.error_rate = capacity, error_rate
        self.block_bits, self.blocks, self.hashes = bloom_geometry(capacity, error_rate)
        self._script = redis.register_script(_LUA_ADD)
        self.last_commands = 0
        self.added = 0

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

    def positions(self, fp: int) -> tuple[int, list[int]]:
        h = _mix(fp & _MASK)
        block = (h >> 40) % self.blocks
        h1, h2 = h & 0xFFFFFFFF, (_mix(h) & 0xFFFFFFFF) | 1
        m = self.block_bits
        return block, [(h1 + i * h2) % m for i in range(self.hashes)]

    def add_many(self, fingerprints: list[int]) -> list[bool]:
        """Test-and-set: for each fingerprint, True if it was new.  One pipelined round trip
        with one script call per block touched (blocking: call it from a thread)."""
        by_block: dict[int, list[int]] = {}
        args: dict[int, list[int]] = {}
        for i, fp in enumerate(fingerprints):
            block, positions = self.positions(fp)
            by_block.setdefault(block, []).append(i)
            args.setdefault(block, [self.hashes]).extend(positions)
        pipe = self.redis.pipeline(transaction=False)
        order = list(by_block)
        for block in order:
            self._script(keys=[self.block_key(block)], args=args[block], client=pipe)
        self.last_commands = len(order)
        results = pipe.execute() if order else []
        new = [False] * len(fingerprints)
        for block, flags in zip(order, results):
            for i, flag in zip(by_block[block], flags):
                new[i] = bool(flag)
        self.added += sum(new)
        return new

    def memory_bytes(self) -> int:
        return self.block_bits * self.blocks // 8
