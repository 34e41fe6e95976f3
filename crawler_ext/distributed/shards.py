"""The shared frontier's layout in Redis and the messages of an exchange: a leaf module, so
the parts of a worker (outbox, leases, claims, sync, exchange, frontier) import their
common types from here and not from each other.

* :class:`ShardLayout` -- where a crawl's state lives: its key prefix, its shards (a
  politeness key belongs to the shard :func:`shard_of` names; a shard's keys share one hash
  tag, so every script touches one cluster slot), the start-URLs and stats keys, and the
  limits every worker holds alike (lease time, host budget, pattern cap, refresh share);
* :class:`ShardOps`, :class:`Push`, :class:`Asks` -- what one exchange carries;
* :class:`Exchanged` -- what it answers, applied on the reactor thread.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from crawler_ext.frontier.storage import Entry

__all__ = ["CLAIMED_PUSH", "LOOK_AGAIN", "Asks", "Claim", "Exchanged", "Push", "ShardLayout",
           "ShardOps", "shard_of"]

#: the seen-set check of an outbox entry: True (check), False (none), or one of these
CLAIMED_PUSH = 2  # admitted (claimed): its claim in the seen set ends once its push is answered
LOOK_AGAIN = 3  # seen while another worker's claim was open: a second look
Claim = tuple[int, int, float]  # an admission's claim to end: fingerprint, shard, claimed at


def shard_of(key: str, shards: int) -> int:
    return zlib.crc32(key.encode("utf-8", "surrogatepass")) % shards


class Push(NamedTuple):
    """An entry pushed to its shard."""

    entry: Entry
    check: bool | int  # True: meets the seen set; CLAIMED_PUSH, LOOK_AGAIN; False: unchecked
    blob: bytes  # its record in the shard
    due: float | None  # a delayed entry's due time
    host: str  # for the host's page budget ("": not counted)
    pattern: str  # for the pattern's cap
    trap: str  # "1": this worker's pages call the pattern a trap
    claimed_at: float = 0.0  # when its claim in the seen set was taken (the fence's clock)
    sent: int = 0  # the worker's exchange it was first sent in (0: not sent yet)


class ShardOps:
    """What one exchange with Redis carries, per shard."""

    __slots__ = ("done", "promote", "push", "release", "renew", "renew_keys")

    def __init__(self) -> None:
        self.push: list[Push] = []
        self.promote: list[tuple[str, bytes, int]] = []  # key, fingerprint (8 bytes), band
        self.release: list[str] = []  # key, delay left, blob, back, token: five a release
        self.done: list[str] = []
        self.renew: list[str] = []
        self.renew_keys: list[str] = []


@dataclass
class Asks:
    """What an exchange asks besides its shards' operations."""

    seeds: int = 0  # seeds to pop from the start-URLs list (and claim)
    release_claim: bool = False  # the seeds claimed last time are pushed now: end the claim
    reap: bool = False  # return expired leases of other workers to their queues
    confirm: list[Claim] = field(default_factory=list)  # admissions' claims to end


@dataclass
class Exchanged:
    """What an exchange answers (the frontier applies it on the reactor thread)."""

    sent_at: float  # the fence's clock when it began
    answered: list[int] = field(default_factory=list)  # shards that answered
    # (key, entry id, record, key state, new URLs still queued for the key) leased now
    taken: list[tuple[str, int, bytes, bytes, int, str]] = field(default_factory=list)
    expired: int = 0  # leases of others found expired and returned
    lost: int = 0  # this worker's leases that had expired (keys lost)
    filtered: int = 0  # pushes the seen set knew
    pushed: int = 0
    reclaimed: int = 0  # seen, admitted by a worker that died before its push
    wait: list[tuple[Entry, bool]] = field(default_factory=list)  # seen, claim open: 2nd look?
    commands: int = 0
    remote: dict[int, int] | None = field(default_factory=dict)  # shard -> entries queued
    seeds: list[str] = field(default_factory=list)
    seeds_waiting: int | None = None
    failed: dict[int, ShardOps] = field(default_factory=dict)  # shards whose script failed
    error: str | None = None
    over: int = 0  # over the host budget
    pover: int = 0  # over a trap pattern's cap
    promoted: int = 0
    confirm: list[Claim] = field(default_factory=list)  # claims' ends to send again
    done_back: list[str] = field(default_factory=list)  # completions to send again
    lagging: list[Any] = field(default_factory=list)  # nodes no replica caught up with yet
    lagging_shards: set[int] = field(default_factory=set)  # the shards those nodes serve
    restarted: bool = False  # a server restarted or failed over
    parked: dict[int, int] = field(default_factory=dict)  # shard -> entries of parked keys
    gone: list[str] = field(default_factory=list)  # keys whose lease expired while held
    dropped: int = 0  # completions not sent (a restart)
    late_claims: int = 0
    repeated: int = 0  # pushes sent again that an exchange whose answer was lost had queued
    moved: set[int] = field(default_factory=set)  # shards whose server changed meanwhile


@dataclass(frozen=True)
class ShardLayout:
    """Where a crawl's shared frontier lives in Redis, and the limits its workers share."""

    prefix: str  # every key of the crawl starts with it
    shards: int = 16  # CRAWLER_EXT_REDIS_SHARDS
    lease_ttl: float = 60.0  # CRAWLER_EXT_REDIS_LEASE_TTL: a worker's lease on a key
    host_budget: int = 0  # CRAWLER_EXT_HOST_PAGE_BUDGET, held across workers (0: none)
    pattern_cap: int = 0  # CRAWLER_EXT_HOST_PATTERN_CAP, held across workers (0: none)
    refresh_share: float = 0.5  # CRAWLER_EXT_RECRAWL_SHARE, per key, in Redis
    seeds_key: str | None = None  # the start-URLs list seeds are popped from (None: none)
    stats_key: str | None = None  # the hash the workers' stats are summed into at close
    wait_for_seeds: bool = False  # an idle crawl waits for seeds pushed from outside

    @property
    def tags(self) -> list[str]:
        """Each shard's hash tag: its keys' common prefix (one cluster slot a shard)."""
        return [f"{{{self.prefix}:s{n}}}" for n in range(self.shards)]
