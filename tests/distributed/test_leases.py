"""The Redis frontier's leases: one worker a key, lost and stalled leases, parked keys, a
restarted Redis, caps and promotions shared by the workers."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path

import pytest

from crawler_ext.admission.urls import fingerprint
from crawler_ext.distributed.bloom import RedisBloom
from crawler_ext.distributed.frontier import RedisFrontier
from crawler_ext.distributed.shards import ShardLayout, shard_of
from crawler_ext.frontier.adapter.codec import entry_url
from crawler_ext.frontier.politeness import Outcome, PolitenessPolicy
from crawler_ext.frontier.storage import Entry
from distributed.conftest import redis_lib
from distributed.support import _entry, _Evidence, _exchange, _frontier


def test_a_leased_host_is_fetched_by_one_worker_and_a_crashed_lease_returns(redis) -> None:
    # a 3 s rest: "still resting" holds on a loaded machine too
    a, b = _frontier(redis, 6.0, delay=3.0), _frontier(redis, 6.0, delay=3.0)
    for f in (a, b):
        f.open()
    a.add([_entry("h1", 1), _entry("h1", 2), _entry("h2", 1, band=0)])
    b.add([_entry("h1", 1)])  # the same URL from another worker: the seen set drops it
    _exchange(a)
    _exchange(b)
    assert b.shared_pending == 3
    now = time.time()
    first = [a.next(now), a.next(now), a.next(now)]
    got_a = [entry_url(e.data) for e in first if e is not None]
    got_b = [entry_url(e.data) for e in _exchange(b)]
    # each host leased once: a holds h1 and h2; b gets nothing while a holds them
    assert sorted(got_a) == ["http://h1/p/1", "http://h2/p/1"] and got_b == []
    # a reports h1's fetch: h1 rests 3 s, then b may take its second URL
    h1 = next(e for e in first if e is not None and e.key == "h1")
    a.done(h1, Outcome(200, 0.01), time.time())
    a.complete([h1.id])
    _exchange(a)
    assert _exchange(b) == []  # still resting
    time.sleep(3.1)
    taken = _exchange(b)
    assert [entry_url(e.data) for e in taken] == ["http://h1/p/2"]
    assert b.next(time.time()).key == "h1"
    # a crashes holding h2 (no renewal, no release): after the lease expires b gets h2 back
    time.sleep(3.2)
    taken = _exchange(b)
    assert [entry_url(e.data) for e in taken] == ["http://h2/p/1"]
    assert b.shared_pending == 2  # h1/p/2 and h2/p/1 are still leased (by b)


def test_a_worker_cut_off_from_redis_lets_its_leases_go_unfetched(redis) -> None:
    """The fence: an entry leased by a worker that Redis has not answered for half the lease
    time is never dispatched (another worker may hold its key by then); it returns to its
    queue when the lease expires in Redis, and another worker fetches it."""
    clock = [1000.0]
    stats: dict[str, float] = {}
    a = RedisFrontier(redis, ShardLayout("t", shards=4, lease_ttl=2.0),
                      PolitenessPolicy(min_delay=0.5, max_delay=0.5), [5, 2, 1],
                      RedisBloom(redis, "t", 10_000), buffer=8,
                      on_stat=lambda k, v: stats.update({k: stats.get(k, 0) + v}))
    a.fence.clock = lambda: clock[0]  # the fence's clock, not the machine's
    b = _frontier(redis, 2.0)
    for f in (a, b):
        f.open()
    a.add([_entry("h1", 1), _entry("h2", 1)])
    taken = _exchange(a)
    assert len(taken) == 2
    assert a.next(time.time()) is not None  # within the fence: dispatched
    clock[0] += 1.0  # Redis silent for half the lease time (an exchange's answer never came)
    assert a.next(time.time()) is None
    assert stats["frontier/redis/leases_fenced"] == 1
    assert a.leases.keys() <= {taken[0].key} and a.leases.held() == 1  # only the one in flight
    # the leases expire in Redis (a renewed none): b takes both, the one a let go among them
    time.sleep(2.2)
    assert sorted(e.key for e in _exchange(b)) == ["h1", "h2"]


def test_a_worker_back_from_a_stall_fetches_nothing_another_took_meanwhile(redis) -> None:
    """Stalled past its lease with an entry still in its buffer: the next exchange answers
    (the fence holds again) and says the key is gone -- the entry is let go, not fetched."""
    stats: dict[str, float] = {}
    a = RedisFrontier(redis, ShardLayout("t", shards=4, lease_ttl=2.0),
                      PolitenessPolicy(min_delay=0.5, max_delay=0.5), [5, 2, 1],
                      RedisBloom(redis, "t", 10_000), buffer=8,
                      on_stat=lambda k, v: stats.update({k: stats.get(k, 0) + v}))
    b = _frontier(redis, 2.0)
    for f in (a, b):
        f.open()
    a.add([_entry("h1", 1)])
    assert [e.key for e in _exchange(a)] == ["h1"]  # leased, waiting in a's buffer
    time.sleep(2.3)  # a stalls past its lease
    assert [e.key for e in _exchange(b)] == ["h1"]  # b takes the key over
    _exchange(a)
    assert a.next(time.time()) is None and stats["frontier/redis/leases_fenced"] == 1


@pytest.mark.parametrize("ends", ["after", "during"])
def test_a_fetch_from_a_lost_lease_frees_nothing_when_its_key_is_leased_again(single_redis,
                                                                            ends) -> None:
    """Stalled past its lease with a fetch in flight: another worker takes the key over,
    fetches and frees it; the stalled worker, resumed, leases the key again.  The old
    fetch's end -- reported after the exchange that leases the key again, or during it (after
    that exchange collected what it sends) -- must not free the new lease: the key would go
    to another worker while this one fetches from it (a politeness violation across workers,
    seen in the cluster nemesis)."""
    redis = single_redis
    a, b = _frontier(redis, 2.0, delay=0.5), _frontier(redis, 2.0, delay=0.5)
    for f in (a, b):
        f.open()
    a.add([_entry("h1", n) for n in range(1, 5)])
    _exchange(a)
    old = a.next(time.time())
    assert old is not None and old.key == "h1"  # in flight
    time.sleep(2.3)  # a stalls past its lease
    assert [e.key for e in _exchange(b)] == ["h1"]  # b takes the key over
    got = b.next(time.time())
    b.done(got, Outcome(200, 0.01), time.time())
    b.complete([got.id])
    _exchange(b)  # h1 rests 0.5 s
    time.sleep(0.6)

    def old_fetch_ends() -> None:
        a.done(old, Outcome(200, 0.01), time.time())
        a.complete([old.id])

    if ends == "during":  # (the exchange runs in its thread, the fetch ends on the reactor)
        run = a.sync.exchanger.run
        a.sync.exchanger.run = lambda *args, **kw: (old_fetch_ends(), run(*args, **kw))[1]
    assert [e.key for e in _exchange(a)] == ["h1"]  # gone, and leased again
    if ends == "after":
        old_fetch_ends()
    else:
        a.sync.exchanger.run = run
    new = a.next(time.time())
    assert new is not None and new.key == "h1"  # in flight under the new lease
    _exchange(a)
    time.sleep(0.6)
    assert _exchange(b) == []  # h1 is still a's
    a.done(new, Outcome(200, 0.01), time.time())
    a.complete([new.id])
    _exchange(a)
    time.sleep(0.6)
    assert [e.key for e in _exchange(b)] == ["h1"]  # freed by the fetch of its lease


def test_a_completion_under_a_lost_lease_is_refused_by_redis(single_redis) -> None:
    """The fencing token, checked in the exchange's script: a worker whose lease expired
    sends the completion of the entry it fetched under it (what a stalled worker's late
    message is) after another worker leased the entry again; Redis refuses it, so the entry
    stays the other worker's, to fetch, complete, or get back if that one dies."""
    redis = single_redis
    stats: dict[str, float] = {}
    a, b = _frontier(redis, 2.0, delay=0.5, stats=stats), _frontier(redis, 2.0, delay=0.5)
    for f in (a, b):
        f.open()
    a.add([_entry("h1", 1)])
    old = _exchange(a)[0]
    layout = ShardLayout("t", shards=4)
    tag = layout.tags[shard_of("h1", 4)]
    record = f"{old.id // 4}"
    time.sleep(2.3)  # a stalls past its lease
    taken = _exchange(b)
    assert [e.id for e in taken] == [old.id]  # the entry, leased again, by b
    a.leases.complete(old.id)  # a's late word on it, under its old lease (no Python guard)
    _exchange(a)
    assert redis.hexists(f"{tag}:e", record)  # refused: still b's
    assert stats["frontier/redis/leases_lost"] == 1  # (and counted)
    assert b"|h1" in b"".join(redis.zrange(f"{tag}:ls", 0, -1))
    b.complete([taken[0].id])
    _exchange(b)
    assert not redis.hexists(f"{tag}:e", record)  # b's own completion is applied


def test_a_parked_key_waits_in_redis_and_holds_no_crawl_open(redis) -> None:
    """robots.txt of a host failed: the key goes back to Redis parked until the retry; no
    worker takes it before, and its entries do not count as work that keeps a crawl open."""
    a, b = _frontier(redis), _frontier(redis)
    for f in (a, b):
        f.open()
    a.add([_entry("h1", 1), _entry("h1", 2), _entry("h2", 1)])
    _exchange(a)
    now = time.time()
    gate = lambda entry, at: (a.park(entry.key, at + 30.0), at + 30.0)[1] \
        if entry.key == "h1" else entry
    got = a.next(now, gate)
    assert got is not None and got.key == "h2" and a.next(now, gate) is None
    a.done(got, Outcome(200, 0.01), time.time())
    a.complete([got.id])
    _exchange(a)
    _exchange(b)
    assert _exchange(b) == []  # h1 waits 30 s, for every worker
    assert a.shared_pending == 2 and a.parked_pending(time.time()) == 2
    assert a.pending() == a.parked_pending(time.time())  # nothing else: the crawl may end
    assert set(a.parked) == {"h1"}


def test_an_empty_shared_frontier_ends_a_crawl_only_after_a_grace(redis) -> None:
    """Redis read empty once is not the end: the worker that completed the last page may
    push its links with its next exchange.  The other worker counts work pending until the
    frontier has read empty for ``FINISH_GRACE`` seconds; links pushed meanwhile start the
    wait again."""
    a, b = _frontier(redis, 6.0), _frontier(redis, 6.0)
    for f in (a, b):
        f.open()
    a.add([_entry("h1", 1)])
    _exchange(a)
    got = a.next(time.time())
    assert got is not None
    a.done(got, Outcome(200, 0.01), time.time())
    a.complete([got.id])
    _exchange(a)  # the page completed, its links not pushed yet
    _exchange(b)
    assert b.shared_pending == 0 and b.pending() == 1  # not the end yet
    a.add([_entry("h2", 1)])  # its links arrive
    _exchange(a)
    _exchange(b)
    assert b.shared_pending == 1 and b.sync.empty_since is None
    got = a.next(time.time())
    assert got is not None
    a.done(got, Outcome(200, 0.01), time.time())
    a.complete([got.id])
    _exchange(a)
    _exchange(b)
    assert b.pending() == 1
    b.sync.empty_since = time.monotonic() - b.FINISH_GRACE  # the grace has passed
    assert b.pending() == 0


def test_a_restarted_redis_is_noticed_and_trusted_with_nothing_from_before(
        tmp_path: Path) -> None:
    """A Redis of the test's own restarts (here with nothing kept, the worst case): the next
    exchange sees a new run id; the worker lets go of its leases, forgets its local seen
    set, and the entry ids jump so no id of the lost writes is issued again."""
    from conftest import free_port

    from crawler_ext.distributed.exchange import Exchange

    port = free_port()
    cmd = ["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "",
           "--appendonly", "no", "--dir", str(tmp_path)]

    def start() -> subprocess.Popen:
        server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL)
        client = redis_lib.Redis(port=port)
        for _ in range(100):
            try:
                client.ping()
                return server
            except redis_lib.ConnectionError:
                time.sleep(0.05)
        raise RuntimeError("redis-server did not start")

    class Hooks(_Evidence):
        forgot = 0

        def lost_writes(self) -> None:
            self.forgot += 1

    server = start()
    try:
        client = redis_lib.Redis(port=port)
        stats: dict[str, float] = {}
        a = RedisFrontier(client, ShardLayout("t", shards=4),
                          PolitenessPolicy(min_delay=0.0, max_delay=0.0), [5, 2, 1],
                          RedisBloom(client, "t", 10_000), buffer=8,
                          on_stat=lambda k, v: stats.update({k: stats.get(k, 0) + v}))
        hooks = Hooks(set())
        a.attach(hooks)
        a.open()
        a.add([_entry("h1", 1), _entry("h2", 1)])
        assert len(_exchange(a)) == 2
        server.kill()
        server.wait()
        server = start()
        _exchange(a)
        assert stats["frontier/redis/restarts"] == 1 and hooks.forgot == 1
        assert a.next(time.time()) is None  # the leases from before are let go
        assert all(int(client.get(f"{tag}:id") or 0) >= Exchange.ID_JUMP for tag in a.tags)
    finally:
        server.kill()
        server.wait()




def test_a_trap_patterns_cap_holds_across_workers(redis) -> None:
    """CRAWLER_EXT_HOST_PATTERN_CAP is counted in Redis with the push, for every pattern;
    once a worker's evidence calls a pattern a trap, all workers together admit no more of it
    than the cap (a pattern not judged a trap is only counted)."""
    from crawler_ext.admission.filters import url_pattern

    trap = url_pattern("http://h1/p/1")
    workers = []
    for _ in range(3):
        f = RedisFrontier(redis, ShardLayout("t", shards=4, pattern_cap=4),
                          PolitenessPolicy(min_delay=0.0, max_delay=0.0),
                          [5, 2, 1], RedisBloom(redis, "t", 10_000), buffer=8, on_stat=lambda k, v, w=len(workers): stats[w].update(
                              {k: stats[w].get(k, 0) + v}))
        f.attach(_Evidence(set()))
        f.open()
        workers.append(f)
    stats: list[dict] = [{}, {}, {}]
    # before any evidence: three URLs each, all admitted (and counted: 9 of the pattern)
    for w, f in enumerate(workers):
        f.add([_entry("h1", 10 * w + i) for i in range(3)])
        _exchange(f)
    # now every worker calls the pattern a trap: nothing more of it, from anyone
    for w, f in enumerate(workers):
        f.hooks.traps.add(trap)
        f.add([_entry("h1", 100 + 10 * w + i) for i in range(3)] + [_entry("h2", w)])
        _exchange(f)
    rejected = sum(s.get("admission/rejected/pattern_cap", 0) for s in stats)
    assert rejected == 9
    assert sum(s.get("frontier/redis/pushed", 0) for s in stats) == 9 + 3
    # a fresh host's pattern under the cap is admitted though judged a trap
    workers[0].add([_entry("h3", i) for i in range(6)])
    _exchange(workers[0])
    assert stats[0].get("admission/rejected/pattern_cap", 0) - 3 == 2  # 4 admitted, 2 not


def test_a_promotion_moves_the_shared_queued_entry_for_every_worker(redis) -> None:
    """A worker that admitted a URL and finds more links to it promotes it in Redis: the
    worker that leases the host next takes it before the entries queued ahead of it."""
    stats: dict = {}
    a, b = _frontier(redis, stats=stats), _frontier(redis)
    for f in (a, b):
        f.open()
    a.add([_entry("h1", i, band=2) for i in range(1, 6)])
    _exchange(a)
    fp = fingerprint("http://h1/p/4")
    assert not a.promote(fingerprint("http://h9/p/1"), 0)  # (not admitted here)
    assert a.promote(fp, 0) and not a.promote(fp, 1)  # (not a better band than now)
    a.next(time.time())  # a holds h1 (its first entry) ...
    _exchange(a)
    assert stats.get("frontier/promoted") == 1
    a.close()  # ... and gives it back unfetched
    taken = _exchange(b)
    assert [entry_url(e.data) for e in taken] == ["http://h1/p/4"]


def test_one_keys_entries_leave_in_request_priority_order(redis) -> None:
    f = _frontier(redis)
    f.policy = PolitenessPolicy(min_delay=0.0, max_delay=0.0)
    f.open()
    priorities = [0, 2, -1, 2, 40, 1, -30, 0]  # beyond -16..15 they are clamped, in order
    entries = [_entry("h1", n, band=n % 3) for n in range(len(priorities))]
    for entry, priority in zip(entries, priorities):
        entry.priority = priority
    f.add(entries)
    got = []
    for _ in range(40):
        _exchange(f)
        entry = f.next(time.time())
        if entry is not None:
            got.append(int(entry_url(entry.data).rsplit("/", 1)[1]))
            f.done(entry, Outcome(200, 0.0), time.time())
            f.complete([entry.id])
        if len(got) == len(priorities):
            break
    # priority first, then band, then arrival
    assert got == sorted(range(len(priorities)), key=lambda n: (-priorities[n], n % 3, n))


def test_close_gives_back_unfetched_leases_at_once(redis) -> None:
    a, b = _frontier(redis, lease_ttl=60), _frontier(redis, lease_ttl=60)
    a.open()
    a.add([_entry(f"h{i}", 1) for i in range(5)])
    assert len(_exchange(a) + _exchange(a)) == 5
    a.close()  # leased, never dispatched: back to the queues without waiting for expiry
    assert len(_exchange(b)) == 5


def test_entries_waiting_out_their_delay_after_robots_leave_room_for_more_keys(redis) -> None:
    """A worker's concurrency (its buffer) counts fetches in flight and entries due, not the
    entries that wait out their key's delay after its robots.txt: counted in, a broad crawl's
    worker kept most of its places empty (50 in flight of 200)."""
    a = _frontier(redis, 30.0, delay=5.0)
    a.open()
    a.add([_entry(f"h{i}", 1) for i in range(40)])
    first = _exchange(a)
    assert len(first) >= 8  # the buffer's 8 places, and a share more
    now = time.time()

    def robots_first(entry, now):  # every key's robots.txt goes first (an id-less entry)
        return Entry(entry.key, 0, b"R" + entry.key.encode())
    for _ in first:
        robots = a.next(now, robots_first)
        a.done(robots, Outcome(200, 0.01), now)  # answered: the entry waits 5 s with its key
    assert a.next(time.time(), robots_first) is None
    second = _exchange(a)  # nothing in flight, nothing due: the places are free
    assert len(second) >= 8 and not {e.key for e in second} & {e.key for e in first}


class _LosesAnAnswer:
    """A Redis client whose next pipeline is executed by the server but whose answer never
    comes back (the connection drops between the two), when armed."""

    def __init__(self, client) -> None:
        self.client = client
        self.armed = False

    def __getattr__(self, name: str):
        return getattr(self.client, name)

    def pipeline(self, *args, **kwargs):
        pipe = self.client.pipeline(*args, **kwargs)
        if self.armed:
            self.armed = False
            execute = pipe.execute

            def lost(*a, **k):
                execute(*a, **k)
                raise redis_lib.ConnectionError("connection dropped before the answer")

            pipe.execute = lost
        return pipe


def test_pushes_whose_answer_was_lost_are_not_queued_twice(redis) -> None:
    """The exchange's script ran in Redis but its answer was lost: the worker sends the
    pushes again, and the script, which recorded the exchange as applied with its writes,
    queues them once (queued twice, the URL would be fetched twice, no lease expired)."""
    stats: dict[str, float] = {}
    lossy = _LosesAnAnswer(redis)
    a = _frontier(redis, delay=0.0, stats=stats, client=lossy)
    a.attach(_Evidence(set()))
    a.open()
    a.add([_entry("h1", 1), _entry("h1", 2), _entry("h2", 1)])
    lossy.armed = True
    with pytest.raises(redis_lib.ConnectionError):
        _exchange(a)
    assert stats["frontier/redis/errors"] == 1
    _exchange(a)
    assert sum(redis.hlen(f"{tag}:e") for tag in a.tags) == 3
    assert stats["frontier/redis/pushes_repeated"] == 3
    a.add([_entry("h3", 1)])  # a push after a lost answer is queued as any other
    _exchange(a)
    assert sum(redis.hlen(f"{tag}:e") for tag in a.tags) == 4
