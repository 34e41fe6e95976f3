"""The frontier contract (``crawler_ext.frontier.contract``): the same scenarios over the
memory, sqlite, disk and Redis backends (Redis: the real server on 127.0.0.1:6379, database 9)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from crawler_ext.frontier import Frontier, MemoryStore, Outcome, PolitenessPolicy, SqliteStore
from crawler_ext.frontier.adapter.codec import entry_url
from crawler_ext.frontier.contract import FrontierBackend
from crawler_ext.frontier.disk import DiskStore
from crawler_ext.frontier.kv import RocksEngine
from crawler_ext.frontier.contract import FrontierStore
from crawler_ext.frontier.storage import Entry
from crawler_ext.admission.urls import fingerprint

BACKENDS = ["memory", "sqlite", "disk", "redis"]
WEIGHTS = [5, 2, 1]


class Driver:
    """Builds a backend and drives it synchronously (Redis: one exchange per ``sync``)."""

    def __init__(self, kind: str, tmp_path: Path) -> None:
        self.kind = kind
        self.path = tmp_path / "frontier.sqlite3"
        self.redis = None
        if kind == "redis":
            redis_lib = pytest.importorskip("redis")
            # a database of its own per pytest-xdist worker, 13 or 14 (tests/conftest.py)
            db = 13 + int(os.environ.get("PYTEST_XDIST_WORKER", "gw0")[2:] or 0) % 2
            self.redis = redis_lib.Redis.from_url(f"redis://127.0.0.1:6379/{db}")
            try:
                self.redis.ping()
            except redis_lib.ConnectionError:
                pytest.fail("Redis does not answer on 127.0.0.1:6379 (.ci/run starts one)")
            self.redis.flushdb()

    def make(self, min_delay: float = 0.0, share: float = 0.5) -> FrontierBackend:
        policy = PolitenessPolicy(min_delay=min_delay, max_delay=max(min_delay, 0.01),
                                  latency_factor=0.0)
        if self.kind == "redis":
            from crawler_ext.distributed.frontier import RedisFrontier
            from crawler_ext.distributed.shards import ShardLayout

            layout = ShardLayout("c", shards=4, lease_ttl=1.0, refresh_share=share)
            frontier: FrontierBackend = RedisFrontier(self.redis, layout, policy, WEIGHTS,
                                                      buffer=8)
        else:
            frontier = Frontier(self.store(), policy, WEIGHTS, refresh_share=share)
            frontier.open()
            frontier.recover()  # (journaled: the local backends)
            return frontier
        frontier.open()
        return frontier

    def store(self) -> FrontierStore:
        if self.kind == "memory":
            return MemoryStore(3)
        if self.kind == "sqlite":
            return SqliteStore(self.path, 3)
        # small heads, so that the scenarios read queues back from disk
        return DiskStore(self.path.parent / "disk", 3, RocksEngine(), front_room=2, back_room=1,
                         delay_room=1)

    def sync(self, frontier: FrontierBackend) -> None:
        if self.kind == "redis":
            frontier.exchange_now()  # type: ignore[attr-defined]
        else:
            frontier.flush()

    def take(self, frontier: FrontierBackend) -> Entry | None:
        self.sync(frontier)
        return frontier.next(time.time())

    def crash(self, frontier: FrontierBackend) -> None:
        """The process dies after its last commit (no close, no give-back)."""
        self.sync(frontier)
        if self.kind == "sqlite":
            frontier.store._db.close()  # type: ignore[attr-defined]
        if self.kind == "disk":
            frontier.store.kv.close()  # type: ignore[attr-defined]

    def teardown(self) -> None:
        if self.redis is not None:
            self.redis.flushdb()


@pytest.fixture(params=BACKENDS)
def driver(request, tmp_path: Path):
    d = Driver(request.param, tmp_path)
    yield d
    d.teardown()


def entry(key: str, n: int, band: int = 1, priority: int = 0, refresh: bool = False) -> Entry:
    url = f"http://{key}/p/{n}"
    return Entry(key, band, b"U0\x00\x00" + url.encode(), fingerprint(url), priority=priority,
                 refresh=refresh)


def number(e: Entry) -> int:
    return int(entry_url(e.data).rsplit("/", 1)[1])


def drain(driver: Driver, frontier: FrontierBackend, count: int, seconds: float = 10.0
          ) -> list[Entry]:
    """Take, report and complete entries until ``count`` were taken (or time runs out)."""
    got: list[Entry] = []
    deadline = time.time() + seconds
    while len(got) < count and time.time() < deadline:
        e = driver.take(frontier)
        if e is None:
            time.sleep(0.02)
            continue
        got.append(e)
        frontier.done(e, Outcome(200, 0.0), time.time())
        frontier.complete([e.id])
    return got


def test_every_backend_implements_the_contract(driver: Driver) -> None:
    frontier = driver.make()
    members = [m for m in dir(FrontierBackend) if not m.startswith("_")] + \
        list(FrontierBackend.__annotations__)
    missing = [m for m in members if not hasattr(frontier, m)]
    assert missing == []


def test_one_lease_per_key_and_its_delay_after_done(driver: Driver) -> None:
    frontier = driver.make(min_delay=0.4)
    frontier.add([entry("a", 1), entry("a", 2), entry("b", 1)])
    first, second = driver.take(frontier), driver.take(frontier)
    assert first is not None and second is not None and {first.key, second.key} == {"a", "b"}
    assert driver.take(frontier) is None  # both keys leased: nothing else may go out
    a = first if first.key == "a" else second
    frontier.done(a, Outcome(200, 0.0), time.time())
    released = time.time()
    frontier.complete([a.id])
    nxt = None
    while nxt is None and time.time() - released < 5:
        nxt = driver.take(frontier)
        if nxt is None:
            time.sleep(0.02)
    assert nxt is not None and nxt.key == "a" and number(nxt) == 2
    assert time.time() - released >= 0.4 - 0.02  # the key rested its delay


def test_one_keys_entries_go_by_priority_then_band_then_arrival(driver: Driver) -> None:
    frontier = driver.make()
    specs = [(0, 1), (2, 2), (0, 0), (2, 1), (-1, 0), (0, 1)]  # (priority, band)
    frontier.add([entry("a", n, band=b, priority=p) for n, (p, b) in enumerate(specs)])
    got = [number(e) for e in drain(driver, frontier, len(specs))]
    assert got == [3, 1, 2, 0, 5, 4]


def test_delayed_entries_become_ready_at_their_due_time(driver: Driver) -> None:
    frontier = driver.make()
    due = time.time() + 3.0  # ("not yet due" holds on a loaded machine too)
    frontier.add_delayed([entry("a", 7)], due)
    frontier.add([entry("b", 1)])
    assert frontier.pending() >= 2
    got = drain(driver, frontier, 1)
    assert [e.key for e in got] == ["b"]
    assert driver.take(frontier) is None  # not yet due
    later = drain(driver, frontier, 1)
    assert [number(e) for e in later] == [7] and time.time() >= due


def test_what_was_not_completed_comes_back_after_a_crash(driver: Driver) -> None:
    if driver.kind == "memory":
        pytest.skip("the memory backend keeps nothing past its process, by design")
    frontier = driver.make()
    frontier.add([entry("a", 1), entry("b", 1), entry("c", 1)])
    frontier.add_delayed([entry("d", 1)], time.time() + 0.3)
    done = drain(driver, frontier, 1)  # fetched and processed: never again
    leased = driver.take(frontier)  # in flight when the process dies
    assert leased is not None
    driver.crash(frontier)
    again = driver.make()
    if driver.kind == "redis":
        time.sleep(1.1)  # the dead worker's leases expire (lease TTL 1 s)
    got = drain(driver, again, 3)
    urls = sorted(entry_url(e.data) for e in got)
    assert entry_url(done[0].data) not in urls
    assert entry_url(leased.data) in urls and "http://d/p/1" in urls and len(urls) == 3
    assert drain(driver, again, 1, seconds=1.5) == []


def test_pending_counts_what_is_left_until_all_is_completed(driver: Driver) -> None:
    frontier = driver.make()
    frontier.add([entry("a", 1), entry("b", 1)])
    frontier.add_delayed([entry("c", 1)], time.time() + 0.5)
    driver.sync(frontier)
    assert frontier.pending() >= 3  # a shared frontier may count leased entries too
    drain(driver, frontier, 2)
    driver.sync(frontier)
    assert frontier.pending() >= 1  # the delayed entry holds the crawl open
    drain(driver, frontier, 1)
    driver.sync(frontier)
    # (a shared frontier reads empty a few seconds before it says so: FINISH_GRACE)
    deadline = time.monotonic() + 10.0
    while frontier.pending() and time.monotonic() < deadline:
        time.sleep(0.5)
        driver.sync(frontier)
    assert frontier.pending() == 0


@pytest.mark.parametrize("share, expected", [(0.5, "drdrdrdrdd"), (0.0, "ddddddrrrr"),
                                             (1.0, "rrrrdddddd")])
def test_refreshes_take_their_share_of_a_keys_turns_when_both_wait(
        driver: Driver, share: float, expected: str) -> None:
    """CRAWLER_EXT_RECRAWL_SHARE: when a key's refreshes (due delayed entries) and newly found
    URLs both wait, refreshes get that share of its turns; a lane alone takes every turn."""
    frontier = driver.make(share=share)
    frontier.add([entry("a", n) for n in range(1, 7)])
    # refreshes are delayed entries; a better band than the links' must not let them go first
    frontier.add_delayed([entry("a", n, band=0, refresh=True) for n in range(101, 105)],
                         time.time())
    got = drain(driver, frontier, 10)
    assert "".join("r" if number(e) > 100 else "d" for e in got) == expected
    assert [number(e) for e in got if e.refresh] == [101, 102, 103, 104]


def test_a_refresh_keeps_its_lane_through_a_crash(driver: Driver) -> None:
    if driver.kind == "memory":
        pytest.skip("the memory backend keeps nothing past its process, by design")
    frontier = driver.make(share=1.0)
    frontier.add([entry("a", n) for n in range(1, 4)])
    frontier.add_delayed([entry("a", n, refresh=True) for n in range(101, 103)], time.time())
    leased = driver.take(frontier)  # in flight when the process dies
    assert leased is not None and leased.refresh
    driver.crash(frontier)
    again = driver.make(share=1.0)
    if driver.kind == "redis":
        time.sleep(1.1)  # the dead worker's leases expire (lease TTL 1 s)
    got = drain(driver, again, 5)
    assert [number(e) for e in got] == [101, 102, 1, 2, 3]


def test_the_frontier_says_whether_new_urls_of_a_key_wait(driver: Driver) -> None:
    """``discovery_waiting``, which the recrawl policy budgets by (the ``host_released``
    signal): after a key's turn, whether newly found URLs of the key still wait."""
    frontier = driver.make()
    frontier.add([entry("a", 1), entry("a", 2)])
    first = drain(driver, frontier, 1)
    assert len(first) == 1 and frontier.discovery_waiting("a") is True
    drain(driver, frontier, 1)
    assert frontier.discovery_waiting("a") is False
