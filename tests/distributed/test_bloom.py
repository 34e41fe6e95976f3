"""The shared seen set (a Redis Bloom filter) and the order of a page's completion and its
links' pushes."""

from __future__ import annotations

import json
import time
from typing import Any

from crawler_ext.admission.urls import fingerprint
from crawler_ext.distributed.bloom import CLAIMED, NEW, RECLAIMED, SEEN, RedisBloom, bloom_geometry
from crawler_ext.distributed.shards import shard_of
from crawler_ext.frontier.politeness import Outcome
from crawler_ext.int64 import to_unsigned
from distributed.support import _entry, _exchange, _frontier


def test_bloom_blocks_test_and_set_atomically_with_its_false_positive_rate(redis) -> None:
    bits, blocks, k = bloom_geometry(1_000_000_000, 0.01)
    assert blocks == 72 and bits * blocks / 8 < 1.25e9 and k == 7  # 1 B URLs: 1.2 GB, 72 keys
    bloom = RedisBloom(redis, "t", capacity=20_000, error_rate=0.01)
    bloom.open()
    fps = [fingerprint(f"http://h{i % 50}.example/p/{i}") for i in range(20_000)]
    assert all(bloom.add_many(fps[:10_000]))
    assert not any(bloom.add_many(fps[:10_000]))  # seen, every one
    again = bloom.add_many(fps[10_000:] + fps[10_000:12_000])  # a batch with repeats
    assert sum(again[:10_000]) >= 10_000 * 0.99 and not any(again[10_000:])
    # at capacity, new URLs are taken for seen at about the target rate (1 %); the probes are
    # added as they are tested, so the filter ends 10 % over capacity
    probes = [fingerprint(f"http://other.example/{i}") for i in range(2_000)]
    false_positive = 1 - sum(bloom.add_many(probes)) / len(probes)
    assert 0.002 < false_positive < 0.02
    # a second worker with other settings adopts the stored geometry
    other = RedisBloom(redis, "t", capacity=5_000_000, error_rate=0.001)
    other.open()
    assert (other.block_bits, other.blocks, other.hashes) == (
        bloom.block_bits, bloom.blocks, bloom.hashes)
    assert not any(other.add_many(fps[:1000]))


def test_an_admission_whose_worker_died_before_its_push_is_new_again(redis) -> None:
    """Admitting a URL (the seen set) and queueing it (the frontier) are two round trips: a
    worker killed in between leaves the URL seen and never queued.  Its claim stays open: a
    worker that finds the URL looks again a claim's time later and, the claim still open,
    admits it; a claim confirmed meanwhile (its worker was only cut off) leaves it seen."""
    ttl = 1.0
    dead, other, third = (RedisBloom(redis, "t", 10_000, claim_ttl=ttl) for _ in range(3))
    for bloom in (dead, other, third):
        bloom.open()
    lost, pushed = fingerprint("http://h/lost"), fingerprint("http://h/pushed")
    assert dead.add_many([lost, pushed]) == [NEW, NEW]
    pipe = redis.pipeline(transaction=False)
    assert dead.confirm([pushed], pipe) == 1
    pipe.execute()
    assert other.add_many([lost, pushed]) == [CLAIMED, SEEN]
    assert other.add_many([lost], [True]) == [CLAIMED]  # too early: the claim is fresh
    time.sleep(ttl + 0.1)
    assert other.add_many([lost, pushed], [True, True]) == [RECLAIMED, SEEN]
    assert third.add_many([lost], [True]) == [CLAIMED]  # claimed again, by `other`, now
    assert (other.reclaimed, other.added, third.reclaimed) == (1, 1, 0)
    # without claims (a seen set of its own), the answers are new or seen
    plain = RedisBloom(redis, "plain", 10_000)
    plain.open()
    assert plain.add_many([lost, lost]) == [NEW, SEEN]
    assert redis.exists(plain.claims_key(plain.positions(lost)[0])) == 0


def test_a_page_is_completed_only_after_the_links_it_found_were_queued(redis) -> None:
    """On a cluster one pipeline reaches the nodes one by one: a completion sent beside the
    push of the page's links could be applied on one node and the links lost with a kill
    before the next.  So completions go in a second round trip, once every shard took its
    pushes; when one failed they wait, with its pushes, for the next exchange."""
    a = _frontier(redis)
    a.open()
    a.add([_entry("h1", 1)])
    _exchange(a)
    page = a.next(time.time())
    a.done(page, Outcome(200, 0.01), time.time())
    links = [_entry(f"l{i}", 1) for i in range(8)]  # the page's links, over the shards
    a.add(links)
    a.complete([page.id])
    failing = shard_of(links[0].key, a.shards)
    script = a.exchanger.script

    def one_shard_fails(keys: list, args: list, client: Any) -> None:
        if keys[0].startswith(a.tags[failing]) and json.loads(args[0])["push"]:  # its pushes
            client.hincrby(keys[0], "x", "NaN")  # an error, in the shard's slot
        else:
            script(keys=keys, args=args, client=client)

    a.exchanger.script = one_shard_fails
    _exchange(a)
    a.exchanger.script = script
    queued = lambda: sum(int(redis.hlen(f"{tag}:e")) for tag in a.tags)
    assert queued() == 1 + 8 - sum(1 for e in links if shard_of(e.key, a.shards) == failing)
    _exchange(a)  # the failed shard's pushes, then the completion
    assert queued() == 8 and a.shared_pending == 8


def test_a_url_admitted_by_a_worker_killed_before_its_push_is_fetched(redis) -> None:
    """Through the frontier: the dead worker's admission (bits set, claim open, no push) does
    not hide the URL from the worker that finds it again."""
    lease_ttl = 1.0
    stats: dict = {}
    dead, b = _frontier(redis, lease_ttl), _frontier(redis, lease_ttl, stats=stats)
    for f in (dead, b):
        f.open()
    lost = _entry("h1", 1)
    assert dead.bloom.add_many([to_unsigned(lost.fp)]) == [NEW]  # then killed
    b.add([lost, _entry("h1", 2)])
    _exchange(b)
    # h1/p/2 queued (and leased: in the local buffer too); the second look is pending work
    assert b.shared_pending == 1 and b.claims.looking_again() == 1 and b.pending() == 3
    time.sleep(lease_ttl + 0.1)
    _exchange(b)
    assert b.shared_pending == 2 and not b.claims.looking_again()
    assert stats["dupefilter/redis/reclaimed"] == 1
    assert stats["dupefilter/redis/second_looks"] == 1
    assert stats["frontier/redis/pushed"] == 2
    # a worker stopped while a second look waits pushes the URL rather than lose it
    other = _entry("h2", 1)
    assert dead.bloom.add_many([to_unsigned(other.fp)]) == [NEW]
    b.add([other])
    _exchange(b)
    assert b.claims.looking_again() == 1
    b.close()
    assert sum(int(redis.hlen(f"{tag}:e")) for tag in b.tags) == 3
