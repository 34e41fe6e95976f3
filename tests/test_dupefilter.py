"""The Bloom seen set: measured false-positive rate, snapshots, exact mode."""

from __future__ import annotations

import random
from pathlib import Path

from crawler_ext.dupefilter import MAYBE, BloomDupeFilter
from scrapy import Request


def test_measured_false_positive_rate_is_near_the_target() -> None:
    df = BloomDupeFilter(capacity=50_000, error_rate=0.01)
    rng = random.Random(5)
    added = {rng.getrandbits(64) for _ in range(50_000)}
    for fp in added:
        df.seen_fingerprint(fp)
    probes = [fp for fp in (rng.getrandbits(64) for _ in range(100_000)) if fp not in added]
    false_hits = sum(fp.to_bytes(8, "big") in df.bloom for fp in probes)
    rate = false_hits / len(probes)
    assert rate < 0.02
    assert abs(df.estimated_fp_rate() - rate) < 0.01
    assert 8 < df.size_bytes() * 8 / 50_000 < 16  # about 10 bits per URL at 1 %


def test_every_added_fingerprint_is_seen() -> None:
    df = BloomDupeFilter(capacity=1000, error_rate=0.01)
    fps = [random.Random(1).getrandbits(64) + i for i in range(5000)]  # grows past capacity
    for fp in fps:
        df.seen_fingerprint(fp)
    assert all(df.seen_fingerprint(fp) for fp in fps)


def test_request_seen_uses_the_canonical_url_and_snapshots_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "seen.bloom"
    df = BloomDupeFilter(capacity=1000, path=path)
    df.open()
    assert not df.request_seen(Request("http://Example.com:80/a/./b#x"))
    assert df.request_seen(Request("http://example.com/a/b"))
    df.snapshot(mark=42)
    again = BloomDupeFilter(capacity=1000, path=path)
    again.open()
    assert again.mark == 42
    assert again.request_seen(Request("http://example.com/a/b"))
    assert not again.request_seen(Request("http://example.com/a/c"))


def test_exact_mode_never_skips_a_new_url(tmp_path: Path) -> None:
    # a tiny, overfull Bloom filter: most new URLs look "maybe seen"
    df = BloomDupeFilter(capacity=1000, error_rate=0.5, path=tmp_path / "seen.bloom", exact=True)
    df.open()
    first = list(range(1, 20_001))
    assert all(df.seen_fingerprint(fp) is not True for fp in first)
    maybe = [fp for fp in range(20_001, 40_001) if df.seen_fingerprint(fp) is MAYBE]
    assert len(maybe) > 1000
    assert not any(df.confirm(maybe))  # all new: none skipped
    assert all(df.confirm(first[:10] + maybe[:10]))
    # the same new URL twice in one batch: the first copy is new, the second seen
    fresh = [fp for fp in range(50_001, 60_001) if df.seen_fingerprint(fp) is MAYBE][0]
    assert df.confirm([fresh, fresh]) == [False, True]
    df.close()


def test_the_scheduler_adapts_scrapys_rfpdupefilter_explicitly(caplog) -> None:
    import logging

    from scrapy.dupefilters import RFPDupeFilter
    from scrapy.utils.test import get_crawler

    from crawler_ext.frontier.adapter.scheduler import FrontierScheduler

    crawler = get_crawler(settings_dict={
        "CRAWLER_EXT_ALLOWED_NETWORKS": "127.0.0.0/8",
        "DUPEFILTER_CLASS": "scrapy.dupefilters.RFPDupeFilter"})
    with caplog.at_level(logging.INFO, logger="crawler_ext.seen.adapter"):
        scheduler = FrontierScheduler.from_crawler(crawler)
    assert "RFPDupeFilter is not one of crawler_ext's" in caplog.text
    assert isinstance(scheduler.df.dupefilter, RFPDupeFilter)
    from scrapy import Spider

    scheduler.spider = Spider("t")  # (open() would set it, and start the reactor's loops)
    scheduler.spider.crawler = crawler
    assert scheduler.enqueue_request(Request("http://127.0.0.1/a"))
    assert not scheduler.enqueue_request(Request("http://127.0.0.1/a"))  # RFPDupeFilter's say
    assert scheduler.enqueue_request(Request("http://127.0.0.1/a", method="POST", body=b"x"))
    scheduler.close("finished")


def test_a_dupefilter_class_that_is_not_one_is_refused_in_one_line(tmp_path) -> None:
    import subprocess
    import sys

    from conftest import ROOT

    proc = subprocess.run([sys.executable, "-m", "scrapy", "crawl", "web", "-a",
                           "seeds=http://127.0.0.1:9/", "-s", "DUPEFILTER_CLASS=builtins.dict"],
                          cwd=ROOT, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines()[-1].endswith(
        "DUPEFILTER_CLASS builtins.dict has no request_seen(): it is not a Scrapy dupefilter")
    assert "Traceback" not in proc.stderr


def test_the_bloom_filter_is_a_seen_set() -> None:
    from crawler_ext.seen import SeenSet, as_seen_set

    df = BloomDupeFilter(capacity=1000)
    assert as_seen_set(df) is df
    members = [m for m in dir(SeenSet) if not m.startswith("_")]
    assert [m for m in members if not hasattr(df, m)] == []
    assert df.check(Request("http://e.com/"), 42) is False and df.check(Request("http://x/"), 42)


def test_the_one_pass_insert_equals_the_librarys_add_through_filter_growth() -> None:
    # the seen set's test-and-set skips the library's second hashing of the newest filter:
    # answers, per-filter counts and bits must stay exactly the library's (snapshots too)
    from pybloom_live import ScalableBloomFilter

    from crawler_ext.seen.bloom import seen_or_add

    rng = random.Random(5)
    mine, library = (ScalableBloomFilter(initial_capacity=100, error_rate=0.01,
                                         mode=ScalableBloomFilter.LARGE_SET_GROWTH)
                     for _ in range(2))
    keys = [rng.randrange(3000).to_bytes(8, "big") for _ in range(5000)]  # repeats too
    assert [seen_or_add(mine, k) for k in keys] == [library.add(k) for k in keys]
    assert len(mine.filters) == len(library.filters) > 3  # grown several times
    assert [f.count for f in mine.filters] == [f.count for f in library.filters]
    assert all(a.bitarray == b.bitarray for a, b in zip(mine.filters, library.filters))
