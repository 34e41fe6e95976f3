"""The frontier's pure logic, driven by a fake clock: bands, back queues, politeness, storage."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest

from crawler_ext.frontier import (
    Entry, Frontier, MemoryStore, Outcome, PolitenessPolicy, SqliteStore, WeightedBands,
    parse_retry_after,
)
from crawler_ext.frontier.contract import FrontierStore
from crawler_ext.frontier.core import BestFirst


def make(store=None, weights=(5, 2, 1), **kw) -> Frontier:
    policy = kw.pop("policy", PolitenessPolicy(min_delay=1.0, max_delay=60.0))
    return Frontier(store or MemoryStore(len(weights)), policy, list(weights), **kw)


def entry(key: str, band: int = 0, n: int = 0) -> Entry:
    return Entry(key, band, f"{key}/{n}".encode(), fp=hash((key, n)) & ((1 << 63) - 1))


def test_weighted_bands_ratio_and_no_starvation() -> None:
    wb = WeightedBands([5, 2, 1])
    picks = [wb.pick([1, 1, 1]) for _ in range(800)]
    counts = Counter(picks)
    assert counts[0] == 500 and counts[1] == 200 and counts[2] == 100
    # within every window of one cycle (8 picks) the lowest band is served
    assert all(2 in picks[i:i + 8] for i in range(0, 800, 8))
    assert wb.pick([0, 0, 3]) == 2 and wb.pick([0, 0, 0]) == -1


def test_front_queues_dequeue_by_weight() -> None:
    f = make(max_active_keys=1_000_000)
    f.add([entry(f"h{b}-{i}", band=b, n=i) for b in range(3) for i in range(400)])
    out = [f.next(0.0) for _ in range(80)]
    bands = Counter(e.band for e in out if e)
    assert bands[0] == 50 and bands[1] == 20 and bands[2] == 10


def test_one_request_in_flight_per_key_and_delay_after_response() -> None:
    f = make()
    f.add([entry("a", n=i) for i in range(3)] + [entry("b", n=0)])
    first = f.next(0.0)
    second = f.next(0.0)
    assert {first.key, second.key} == {"a", "b"}
    assert f.next(0.0) is None  # "a" is in flight, "b" is empty
    a = first if first.key == "a" else second
    f.done(a, Outcome(200, latency=0.5), now=1.0)  # delay = clamp(10 x 0.5) = 5 s
    assert f.next(5.9) is None
    assert f.next_ready_time() == pytest.approx(6.0)
    assert f.next(6.0).key == "a"


def test_back_queue_serves_best_band_first() -> None:
    f = make()
    f.add([entry("a", band=2, n=1), entry("a", band=0, n=2), entry("a", band=1, n=3)])
    got = []
    now = 0.0
    for _ in range(3):
        e = f.next(now)
        got.append(e.band)
        f.done(e, Outcome(200, 0.0), now)
        now += 1.0
    assert got == [0, 1, 2]


def test_best_first_routing_keeps_worse_keys_waiting_while_better_entries_wait() -> None:
    """The focus strategy's routing: keys are made active in band order and a key's back
    queue is filled one entry at a time, so a key whose entries are all worse is not served
    while better entries wait for their key; by default every key is active at once and
    served in its politeness turn."""
    served = {}
    for best_first in (False, True):
        f = make(best_first=BestFirst([5, 2, 1], 0.0, 100) if best_first else None)
        f.add([entry("a", band=0, n=i) for i in range(3)] +
              [entry("b", band=2, n=i) for i in range(3)])
        served[best_first] = [e.key if e else None for e in (f.next(0.0), f.next(0.0))]
    assert sorted(served[False]) == ["a", "b"]
    assert served[True] == ["a", None]


def test_backoff_retry_after_and_crawl_delay() -> None:
    policy = PolitenessPolicy(min_delay=1.0, max_delay=60.0, backoff_factor=4, backoff_max=300)
    f = make(policy=policy)
    f.add([entry("a", n=i) for i in range(6)])
    e = f.next(0.0)
    assert f.done(e, Outcome(503, 0.01), 0.0) == 4.0
    e = f.next(4.0)
    assert f.done(e, Outcome(429, 0.01), 4.0) == 16.0
    e = f.next(20.0)
    assert f.done(e, Outcome(429, 0.01, retry_after=7.0), 20.0) == 7.0  # exactly Retry-After
    e = f.next(27.0)
    assert f.done(e, Outcome(None, 0.01), 27.0) == 256.0  # x64 backoff, x4 again for an error
    e = f.next(283.0)
    assert f.done(e, Outcome(200, 0.01), 283.0) == 128.0  # a success halves the backoff
    e = f.next(411.0)
    assert f.done(e, Outcome(200, 0.01), 411.0) == 64.0



def test_a_key_failing_its_error_budget_in_a_row_is_parked() -> None:
    """Errors and 5xx count in a row, anything else resets the count; at the budget the key
    rests ERROR_PARK (parked: its URLs kept, the crawl not held); 0 never parks (broken once:
    the same outcomes with no budget back off only)."""
    from crawler_ext.frontier.politeness import ERROR_PARK, delay_rule

    for budget in (3, 0):
        policy = PolitenessPolicy(min_delay=1.0, max_delay=60.0, backoff_max=300,
                                  error_budget=budget)
        f = make(policy=policy)
        f.add([entry("a", n=i) for i in range(8)])
        now, delays = 0.0, []
        for status in (503, None, 404, 500, None, 502):  # a 404 is the URL's, not the host's
            e = f.next(now)
            assert e is not None, (budget, delays)
            delays.append(f.done(e, Outcome(status, 0.01), now))
            now += delays[-1]
            if delays[-1] >= ERROR_PARK:
                break
        if budget:
            assert delays[-1] == ERROR_PARK and len(delays) == 6  # 500, None, 502 in a row
            assert "a" in f.parked and f.parked_pending(now - ERROR_PARK + 1) == 2
            assert delay_rule(policy, delays[-1], 1.0, None, 0.0) == "error_budget"
        else:
            assert max(delays) <= 300 and "a" not in f.parked

def test_crawl_delay_is_a_floor() -> None:
    policy = PolitenessPolicy(min_delay=1.0, max_delay=60.0)
    f = make(policy=policy)
    f.set_crawl_delay("a", 3.0)
    f.add([entry("a", n=0)])
    e = f.next(0.0)
    assert f.done(e, Outcome(200, 0.01), 0.0) == 3.0


def test_parse_retry_after() -> None:
    assert parse_retry_after(b"120") == 120.0
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=1445412470.0) == 10.0
    assert parse_retry_after("soon") is None
    assert parse_retry_after(None) is None


def test_bound_on_active_keys_keeps_the_rest_in_front() -> None:
    f = make(max_active_keys=2)
    f.add([entry(f"h{i}") for i in range(5)])
    got = [f.next(0.0) for _ in range(5)]
    assert sum(e is not None for e in got) == 2
    assert f.active_keys() == 2 and f.store.front_sizes()[0] == 3


def test_promotion_moves_a_waiting_url_up() -> None:
    f = make(max_active_keys=1)
    blocker = entry("busy")
    low = entry("x", band=2)
    f.add([blocker, low])
    assert f.next(0.0).key == "busy"
    assert f.promote(low.fp, 0)
    assert f.store.front_sizes() == [1, 0, 0]
    f.done(blocker, Outcome(200, 0.0), 0.0)
    assert f.next(0.0).key == "x"
    assert f.pending() == 0


@pytest.mark.parametrize("kind", ["memory", "disk"])
def test_an_entry_promoted_twice_in_front_then_in_its_back_queue_goes_out_once(
        tmp_path: Path, kind: str) -> None:
    """Promotion works from the entry's remembered fields (the stores find it by id): two
    promotions in front, one more in the back queue, and every entry is handed out once."""
    from crawler_ext.frontier.disk import DiskStore
    from crawler_ext.frontier.kv import RocksEngine

    store = MemoryStore(3) if kind == "memory" else DiskStore(tmp_path / "d", 3, RocksEngine())
    f = make(store, max_active_keys=1, policy=PolitenessPolicy(min_delay=0, max_delay=0))
    f.open()
    blocker, low = entry("busy"), entry("x", band=2)
    f.add([blocker, low])
    assert f.next(0.0).key == "busy"
    assert f.promote(low.fp, 1) and f.promote(low.fp, 0) and not f.promote(low.fp, 0)
    assert f.store.front_sizes() == [1, 0, 0]
    f.done(blocker, Outcome(200, 0.0), 0.0)
    late = [entry("x", band=2, n=i) for i in range(1, 4)]
    f.max_active_keys = 2  # room for a key more: x's entries are routed to its back queue
    f.add(late)
    out = []
    for i in range(1, 12):
        got = f.next(float(i))
        if got is not None:
            out.append(got.data)
            if len(out) == 2:  # x/0 and x/1 went out: x/3 moves ahead of x/2
                assert f.promote(late[2].fp, 0)
            f.done(got, Outcome(200, 0.0), float(i))
    assert out == [low.data, late[0].data, late[2].data, late[1].data]
    assert f.pending() == 0
    f.close()


@pytest.mark.parametrize("durable", [False, True])
def test_within_a_key_request_priority_decides_then_band_then_arrival(
        tmp_path: Path, durable: bool) -> None:
    def queued(n: int, priority: int, band: int = 1) -> Entry:
        return Entry("a", band, b"%d" % n, priority=priority)

    entries = [queued(0, 0), queued(1, 2, band=2), queued(2, 0, band=0), queued(3, 2),
               queued(4, -1, band=0), queued(5, 0)]
    store: MemoryStore = MemoryStore(3)
    if durable:  # and the order survives a restart of the sqlite frontier
        first = SqliteStore(tmp_path / "f.sqlite3", 3)
        first.open()
        make(first).add(entries)
        first.close()
        store = SqliteStore(tmp_path / "f.sqlite3", 3)
        store.open()
        make(store).recover()
    f = make(store)
    if not durable:
        f.add(entries)
    got, now = [], 0.0
    while (e := f.next(now)) or f.pending():
        if e:
            got.append(int(e.data))
            f.done(e, Outcome(200, 0.0), now)
        now += 2.0
    assert got == [3, 1, 2, 0, 5, 4]


def test_sqlite_store_keeps_uncompleted_entries(tmp_path: Path) -> None:
    path = tmp_path / "f.sqlite3"
    store = SqliteStore(path, 3)
    assert isinstance(store, FrontierStore)
    store.open()
    f = make(store)
    f.add([entry("a", n=i) for i in range(3)] + [entry("b", band=1)])
    e = f.next(0.0)
    f.complete([e.id])  # done and processed
    leased = f.next(0.0)  # in flight when the process dies
    store.flush()
    store._db.close()  # no close(): as if killed after the last commit

    again = SqliteStore(path, 3)
    again.open()
    f2 = make(again)
    assert f2.recover() == 3
    got = []
    now = 0.0
    while (x := f2.next(now)) or f2.pending():
        if x:
            got.append(x.data)
            f2.done(x, Outcome(200, 0.0), now)
        now += 2.0
    assert leased.data in got and e.data not in got and len(got) == 3
    fps, mark = again.admitted_since(0)
    assert len(fps) == 4 and mark == 4


def test_sqlite_store_persists_host_state(tmp_path: Path) -> None:
    store = SqliteStore(tmp_path / "f.sqlite3", 3)
    store.open()
    f = make(store)
    f.set_crawl_delay("a", 9.0)
    store.close()
    again = SqliteStore(tmp_path / "f.sqlite3", 3)
    again.open()
    again.recover()
    assert again.host("a").crawl_delay == 9.0


def _web_like_spider():  # noqa: ANN202
    """A spider with the default callback ``parse`` and another, ``other``."""
    from scrapy import Spider

    class WebLike(Spider):
        name = "t"

        def parse(self, response):  # noqa: ANN001, ANN201
            return None

        def other(self, response):  # noqa: ANN001, ANN201
            return None

    return WebLike()


def test_codec_keeps_link_requests_compact_and_others_whole() -> None:
    from scrapy import Request

    from crawler_ext.frontier.adapter.codec import decode_request, encode_request, entry_url

    spider = _web_like_spider()
    link = Request("http://e.com/p/3.html", headers={"Referer": "http://e.com/p/2.html"},
                   meta={"depth": 2})
    blob = encode_request(link, spider)
    assert blob[:1] == b"U" and len(blob) < 80
    back = decode_request(blob, spider)
    assert (back.url, back.meta, back.headers.get("Referer")) == (
        link.url, {"depth": 2}, b"http://e.com/p/2.html")
    # a pattern-chain length travels with the URL, in the compact form
    chained = link.replace(meta={"depth": 2, "crawler_ext_chain": 4})
    blob = encode_request(chained, spider)
    assert blob[:1] == b"U" and decode_request(blob, spider).meta == chained.meta
    rich = Request("http://e.com/f", method="POST", body=b"x=1", callback=spider.other,
                   meta={"k": [1]}, priority=3)
    blob = encode_request(rich, spider)
    assert blob[:1] == b"D" and entry_url(blob) == "http://e.com/f"
    back = decode_request(blob, spider)
    assert (back.method, back.body, back.callback, back.meta["k"], back.priority) == (
        "POST", b"x=1", spider.other, [1], 3)


def test_peek_reads_a_requests_parts_as_the_properties_do_without_building_empty_ones() -> None:
    from scrapy import Request

    from crawler_ext.frontier.adapter.codec import is_plain, peek

    bare = Request("http://e.com/a")
    full = Request("http://e.com/b", headers={"Referer": "http://e.com/"}, cookies={"c": "1"},
                   flags=["f"], cb_kwargs={"k": 1})
    for name in ("headers", "cookies", "flags", "cb_kwargs"):
        assert not peek(bare, name)
        assert peek(full, name) == getattr(full, name) and peek(full, name)
    assert is_plain(bare, None) and not is_plain(full, None)
    if hasattr(bare, "_headers"):  # Scrapy >= 2.19: nothing was built by reading
        assert (bare._headers, bare._cookies, bare._flags, bare._cb_kwargs) == (None,) * 4


def test_a_decoded_link_has_the_url_scrapy_made_and_later_urls_are_made_safe_again() -> None:
    """A stored link is rebuilt with Scrapy's ``verbatim_url`` (its URL was made safe when it
    was stored): the same URL as Scrapy's own constructor makes of it, for URLs that quoting
    changes, and the key does not stay in meta -- a redirect's Location is quoted as usual."""
    from scrapy import Request

    from crawler_ext.frontier.adapter.codec import decode_request, encode_plain

    tricky = ["http://e.com/a b/c d.html?q=x y", "http://e.com/caf\u00e9/na\u00efve?\u00fc=1",
              "http://b\u00fccher.example/p%20q/%7Euser/?a=%2f&b=%zz",
              "http://e.com/p;params/../x/./y?x=[1]&y={2}|3#frag",
              "http://e.com/%E2%82%AC/\u20ac/%e2%82%ac", "https://e.com:8443/\u65e5\u672c/?k=\u8a9e"]
    for url in tricky:
        stored = Request(url, meta={"depth": 1})
        back = decode_request(encode_plain(stored), None)
        assert back.url == stored.url == Request(stored.url).url, url
        assert back.meta == {"depth": 1}
        hop = back.replace(url="http://e.com/moved here/\u00e9")
        assert hop.url == "http://e.com/moved%20here/%C3%A9" and "verbatim_url" not in hop.meta


def test_a_link_rebuilt_untracked_is_the_same_request_but_not_in_trackref() -> None:
    """Without Scrapy's memory debugger a stored link is rebuilt by Request's own __init__
    but not registered in trackref (a weak reference per request in flight, for the garbage
    collector to walk); with MEMDEBUG_ENABLED it is registered as Scrapy's own would be."""
    from scrapy import Request
    from scrapy.utils.test import get_crawler
    from scrapy.utils.trackref import live_refs

    from crawler_ext.frontier.adapter.codec import CHAIN, decode_request, encode_plain
    from crawler_ext.frontier.adapter.scheduler import FrontierScheduler

    stored = Request("http://e.com/a b", meta={"depth": 2, CHAIN: 3},
                     headers={"Referer": "http://e.com/"})
    blob = encode_plain(stored)
    tracked, untracked = decode_request(blob, None), decode_request(blob, None, tracked=False)
    assert type(untracked) is Request
    assert untracked.to_dict() == tracked.to_dict() == {**stored.to_dict(), "meta": stored.meta}
    assert untracked.headers == tracked.headers and untracked.meta == {"depth": 2, CHAIN: 3}
    assert tracked in live_refs[Request] and untracked not in live_refs[Request]
    for memdebug, want in ((False, False), (True, True)):
        crawler = get_crawler(settings_dict={"CRAWLER_EXT_ALLOWED_NETWORKS": "127.0.0.0/8",
                                             "MEMDEBUG_ENABLED": memdebug})
        scheduler = FrontierScheduler.from_crawler(crawler)
        assert scheduler.parts.requests.tracked is want
        scheduler.spider = None
        assert (scheduler.parts.requests.decode(blob) in live_refs[Request]) is want


def test_a_dispatch_before_the_hosts_next_allowed_time_is_counted() -> None:
    """With two in flight allowed a key stays in the ready heap while a request is out; its
    response then moves the next allowed time: the next request, alone in flight, would go
    out too early.  The frontier counts it (frontier/politeness_violations) for monitors."""
    seen: Counter = Counter()
    f = make(max_in_flight=2, on_stat=lambda name, value: seen.update({name: value}))
    f.add([entry("a", n=0), entry("a", n=1)])
    first = f.next(0.0)
    f.done(first, Outcome(200, 0.0), 0.0)  # next allowed: 1.0 (min delay)
    assert f.next(0.5) is not None
    assert seen["frontier/politeness_violations"] == 1


def test_is_plain_equals_its_first_definition_on_varied_requests() -> None:
    """The hot-path ``is_plain`` (attributes only) decides the stored form: it must say what
    the first, set-building definition said, for every kind of request."""
    import itertools

    from scrapy import Request

    from crawler_ext.frontier.adapter.codec import CHAIN, _stored_meta, is_plain

    spider = _web_like_spider()

    def reference(request: Request) -> bool:
        if request.method != "GET" or request.body or request.cookies:
            return False
        if request.headers and (set(request.headers) != {b"Referer"}
                                or len(request.headers.getlist(b"Referer")) != 1):
            return False
        if request.errback is not None or request.cb_kwargs or request.flags:
            return False
        if request.callback not in (None, getattr(spider, "parse", None)):
            return False
        if request.encoding != "utf-8" or request.dont_filter or request.priority:
            return False
        return set(_stored_meta(request)) <= {"depth", CHAIN}

    variants = {
        "method": [{}, {"method": "POST"}, {"method": "HEAD"}],
        "headers": [{}, {"headers": {"Referer": "http://e.com/"}},
                    {"headers": {"Accept": "x"}},
                    {"headers": {"Referer": "http://e.com/", "Accept": "x"}},
                    {"headers": [("Referer", "a"), ("Referer", "b")]}],
        "meta": [{}, {"meta": {"depth": 3}}, {"meta": {"depth": 1, CHAIN: 2}},
                 {"meta": {"download_latency": 0.2}}, {"meta": {"k": 1}},
                 {"meta": {"download_slot": "e.com"}}, {"meta": {"download_slot": "x"}}],
        "callback": [{}, {"callback": spider.parse}, {"callback": spider.other},
                     {"errback": spider.other}],
        "other": [{}, {"priority": 1}, {"dont_filter": True}, {"cookies": {"a": "1"}},
                  {"body": b"x"}, {"cb_kwargs": {"a": 1}}, {"flags": ["f"]},
                  {"encoding": "latin-1"}],
    }
    checked = 0
    for combo in itertools.product(*variants.values()):
        kwargs: dict = {}
        for part in combo:
            kwargs.update(part)
        request = Request("http://e.com/p/1.html", **kwargs)
        assert is_plain(request, spider) == reference(request), kwargs
        checked += 1
    assert checked == 3 * 5 * 7 * 4 * 8


def test_a_request_in_flight_keeps_no_object_for_the_garbage_collector() -> None:
    """What InFlight keeps per request until its reap is a tuple of plain values, which CPython
    stops tracking at its first collection (objects kept past young collections pace the full
    ones); the request's status and release still come out whole."""
    import gc

    from scrapy import Request

    from crawler_ext.frontier.adapter.events import Decisions
    from crawler_ext.frontier.adapter.inflight import InFlight
    from crawler_ext.frontier.adapter.roles import Port
    from crawler_ext.frontier.lag import LagProbe, ServerLatency

    class Response:
        status, headers, body = 503, {"Retry-After": "7"}, b""

    frontier = Frontier(MemoryStore(3), PolitenessPolicy(min_delay=0, max_delay=0), [5, 2, 1])
    frontier.add([Entry("h", 0, b"U0..http://h/", fp=5)])
    entry = frontier.next(100.0)
    assert entry is not None
    port = Port(inc=lambda *a: None, wake=lambda when, now: None, clock=lambda: 100.0,
                decisions=Decisions())
    inflight = InFlight(frontier, None, ServerLatency(LagProbe(lambda: 100.0)), port)
    request = Request("http://h/")
    inflight.add(request, entry, 100.0)
    inflight.downloaded(Response(), request)
    gc.collect()
    assert not any(gc.is_tracked(kept) for kept in inflight._requests.values())
    info = inflight.get(request)
    assert (info.key, info.fp, info.status, info.retry_after, info.left) == ("h", 5, 503, 7.0,
                                                                             False)
    inflight.left(request)
    assert inflight.get(request).left and frontier.store.host("h").in_flight == 0
    assert [e.fp for e in inflight.reap(None, False)] == [5] and len(inflight) == 0


def test_the_ready_heap_in_two_parts_pops_as_one_heap() -> None:
    """KeyState keeps in-order pushes in a FIFO and the others in a heap: pops and peeks are
    those of a single heap of (time, arrival), ties included, whatever the push order."""
    import heapq
    import random

    from crawler_ext.frontier.storage import KeyState

    rng = random.Random(7)
    for _ in range(200):
        state, ref, seq = KeyState(), [], 0
        clock = 0.0
        for _ in range(rng.randrange(1, 60)):
            if rng.random() < 0.6:
                # mostly in order (ready now, or the same delay), sometimes earlier
                when = clock + rng.choice([0.0, 0.0, 1.0, 1.0, rng.uniform(-2, 3)])
                key = f"k{seq}"
                state.heap_push(key, when)
                heapq.heappush(ref, (when, seq, key))
                seq += 1
            else:
                clock += rng.choice([0.0, 0.5, 2.0])
                want = heapq.heappop(ref)[2] if ref and ref[0][0] <= clock else None
                assert state.heap_pop_ready(clock) == want
            assert state.heap_peek() == ((ref[0][0], ref[0][2]) if ref else None)
        while ref:
            assert state.heap_pop_ready(float("inf")) == heapq.heappop(ref)[2]
        assert state.heap_pop_ready(float("inf")) is None and state.heap_peek() is None


def test_every_entry_kind_is_a_typed_record_with_one_codec_and_its_persisted_bytes() -> None:
    """The entries' formats are persisted (disk, sqlite, Redis): each kind's bytes as written
    before the typed records, read back as its record, and written again the same."""
    import pickle

    from crawler_ext.frontier.entries import (LinkRecord, LiveRecord, RequestRecord,
                                              RobotsHopRecord, RobotsRecord, decode, encode,
                                              entry_url)

    fields = {"url": "http://e.com/p", "method": "POST"}
    persisted = {
        b"U2\x00http://e.com/\x00http://e.com/a": LinkRecord(2, 0, b"http://e.com/",
                                                             b"http://e.com/a"),
        b"U0.3\x00\x00http://e.com/b": LinkRecord(0, 3, b"", b"http://e.com/b"),
        b"D" + pickle.dumps(fields, protocol=4): RequestRecord(fields),
        b"M17": LiveRecord(17),
        b"Rhttps://e.com:8443": RobotsRecord("https://e.com:8443"),
        b"H5": RobotsHopRecord(5),
    }
    for data, record in persisted.items():
        assert decode(data) == record
        assert encode(record) == data
    assert entry_url(b"U2\x00http://e.com/\x00http://e.com/a") == "http://e.com/a"
    assert entry_url(b"D" + pickle.dumps(fields, protocol=4)) == "http://e.com/p"
    with pytest.raises(ValueError):
        decode(b"Xwhat")


def test_best_first_a_worse_entry_waits_for_a_better_one_in_its_politeness_pause() -> None:
    """A focused crawl's dispatch: an entry more than the slack worse than the best one an
    active key holds waits while that key pauses, but for the exploration share."""
    served = {}
    for exploration in (0.0, 1.0):
        f = make(best_first=BestFirst([5, 2, 1], exploration, 100))
        f.add([entry("a", band=0, n=i) for i in range(2)] + [entry("b", band=2)])
        first = f.next(0.0)
        assert first is not None and first.key == "a"
        f.done(first, Outcome(200, 0.0), 0.0)  # a may go again at 1.0
        waited = f.next(0.5)
        served[exploration] = [waited.key if waited else None, f.next(1.0).key]
    assert served[0.0] == [None, "a"]  # b waits: a's better entry goes at its turn
    assert served[1.0] == ["b", "a"]  # explored


def test_best_first_picks_the_best_band_but_for_an_exploration_share() -> None:
    picks = BestFirst([4, 2, 1], 0.25, 10)
    chosen = [picks.pick([5, 5, 5]) for _ in range(400)]
    assert chosen.count(0) < 400 and chosen.count(0) >= 300  # 3 of 4 strictly the best
    assert picks.explored == 400 - chosen.count(0)
    assert BestFirst([4, 2, 1], 0.0, 10).pick([0, 0, 3]) == 2
