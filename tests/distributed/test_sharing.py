"""How the workers of one crawl share the shared frontier's ready keys: a worker leases about
as many keys as it has places, and one that found nothing keeps asking as often as a busy one
while others hold work, so no worker is left idle by another's head start."""

from __future__ import annotations

import pytest
from twisted.internet import defer

import crawler_ext.distributed.sync as sync_module
from crawler_ext.distributed.bloom import RedisBloom
from crawler_ext.distributed.frontier import RedisFrontier
from crawler_ext.distributed.shards import ShardLayout
from crawler_ext.frontier.politeness import PolitenessPolicy
from distributed.support import _entry, _exchange

SHARDS = 16  # CRAWLER_EXT_REDIS_SHARDS' default


def _worker(redis, places: int) -> RedisFrontier:
    frontier = RedisFrontier(redis, ShardLayout("share", shards=SHARDS, lease_ttl=30.0),
                             PolitenessPolicy(min_delay=0.5, max_delay=0.5), [5, 2, 1],
                             RedisBloom(redis, "share", 10_000), buffer=places)
    frontier.open()
    return frontier


def test_a_worker_with_few_places_leases_about_as_many_keys_and_leaves_the_rest(
        redis) -> None:
    # 40 hosts ready; the first worker to exchange has 8 places (CONCURRENT_REQUESTS 8): it
    # leases a share and a half of them, asking one key of 12 of the 16 shards, not two of
    # each (32 keys: the whole web of the crawl test, whose other workers then idled)
    a, b = _worker(redis, 8), _worker(redis, 8)
    a.add([_entry(f"host{n}", 1) for n in range(40)])
    taken_a = _exchange(a)
    assert 1 <= len(taken_a) <= 12
    taken_b = _exchange(b)
    assert len(taken_b) >= 8
    assert not {e.key for e in taken_a} & {e.key for e in taken_b}
    # the next exchange asks the shards after those: every shard in turn
    asked = [sorted(a.sync._take(4)) for _ in range(3)]
    assert asked == [[0, 1, 12, 13, 14, 15], [2, 3, 4, 5, 6, 7], [8, 9, 10, 11, 12, 13]]
    # a room as large as the shards asks each of them for a share and a half of it
    large = a.sync._take(100)
    assert sorted(large) == list(range(SHARDS)) and all(q == large[0] for q in large.values())
    assert large[0][-1] == 10


def test_an_idle_worker_polls_at_every_flush_while_others_hold_work(
        redis, monkeypatch: pytest.MonkeyPatch) -> None:
    started: list[object] = []  # the exchanges started (in a thread, never run here)
    monkeypatch.setattr(sync_module.threads, "deferToThread",
                        lambda *args: started.append(args) or defer.Deferred())
    a, b = _worker(redis, 8), _worker(redis, 8)
    a.add([_entry("h1", 1)])
    _exchange(a)
    assert _exchange(b) == []  # a holds the only key: b found nothing
    assert b.sync._idle and b.sync.remote == 1
    b.sync.flush()  # others hold work: b asks again at once, as a busy worker would
    assert len(started) == 1
    b.sync._syncing = False
    b.sync.remote = 0  # an empty shared frontier: b polls only every IDLE_POLL seconds
    b.sync.flush()
    assert len(started) == 1
