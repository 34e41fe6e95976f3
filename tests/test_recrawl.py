"""Recrawl mode (``CRAWLER_EXT_RECRAWL_ENABLED``) on a changing test web: pages with known
change periods, ETag/Last-Modified and 304s.  The server's request log is the judge."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from conftest import run_crawl
from warcio.archiveiterator import ArchiveIterator

from crawler_ext.recrawl.policy import RefreshPolicy
from testweb import politeness_violations, read_log

PERIOD = 2.0  # page n changes every 2 s x 4^(n%4-1): 2, 8, 32 s; never if n%4 == 0


def test_the_policy_revisits_changing_pages_more_and_static_ones_less() -> None:
    policy = RefreshPolicy(min_interval=1.0, max_interval=100.0, share=0.5)
    due = {"fast": 0.0, "static": 0.0}
    fetches = Counter()
    t = 0.0
    while t < 600:
        for page, when in due.items():
            if when <= t:
                version = int(t // 5) if page == "fast" else 0  # "fast" changes every 5 s
                verdict = policy.observe(f"http://h/{page}", "h", t, exact=version, delay=1.0)
                due[page] = t + verdict.interval
                fetches[page] += 1
        t += 0.5
    assert fetches["fast"] > 3 * fetches["static"], fetches
    assert policy.history("http://h/fast").changes > 10
    assert 0 < policy.estimated_freshness() <= 1


def test_a_page_that_looks_static_is_checked_at_growing_intervals() -> None:
    """A young history proves little: the interval grows with the span watched (at most half
    of it), up to the maximum, instead of jumping to the maximum after one unchanged check;
    and a lone static page does not take its host's budget (0.5 fetches/s here)."""
    policy = RefreshPolicy(min_interval=1.0, max_interval=100.0, share=0.5)
    t, intervals = 0.0, []
    for _ in range(20):
        intervals.append(policy.observe("http://h/s", "h", t, exact=1, delay=1.0).interval)
        t += intervals[-1]
    assert intervals[0] == 1.0 and intervals[-1] == 100.0
    assert all(b <= max(0.5 * sum(intervals[:i + 1]), 1.0) + 1e-9
               for i, b in enumerate(intervals[1:]))
    assert intervals == sorted(intervals)


@pytest.mark.slow
def test_a_recrawl_sends_conditional_requests_and_refetches_changing_pages(
        testweb_factory, tmp_path: Path) -> None:
    web = testweb_factory(hosts=3, pages=8, hazards=False, change_period=PERIOD)
    result = run_crawl("-a", f"seeds={web.seeds_path}", items_path=tmp_path / "items.jsonl",
                       settings={"CRAWLER_EXT_HOSTS": web.hosts_setting,
                                 "CRAWLER_EXT_RECRAWL_ENABLED": True,
                                 "CRAWLER_EXT_RECRAWL_MIN_INTERVAL": 1,
                                 "CRAWLER_EXT_RECRAWL_MAX_INTERVAL": 30,
                                 "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.2,
                                 "CLOSESPIDER_TIMEOUT": 25})
    assert result.returncode == 0, result.output[-3000:]
    assert result.stats["finish_reason"] == "closespider_timeout"  # it ran until stopped
    log = read_log(web.log_path)
    assert politeness_violations(log, min_gap=0.2) == []
    pages = [e for e in log if e.path.startswith("/p/")]
    by_class = Counter(int(e.path.split("/")[2].split(".")[0]) % 4 for e in pages)
    first = {(e.host, e.path) for e in pages}
    assert len(pages) > 2 * len(first)  # pages were fetched again
    # conditional requests: the server answers 304 only to one whose validators match
    assert any(e.status == 304 for e in log)
    assert result.stat("recrawl/not_modified") == sum(e.status == 304 for e in log)
    assert result.stat("recrawl/changed") > 0 and result.stat("recrawl/due") > 0
    # refetches go to the pages that change (every 2 s) before those that never change
    assert by_class[1] > by_class[0], by_class
    # the 304s are in the WARC as revisits of profile server-not-modified
    revisits = 0
    for path in (tmp_path / "warcs").glob("*.warc.gz"):
        with open(path, "rb") as fh:
            revisits += sum(1 for r in ArchiveIterator(fh) if r.rec_type == "revisit" and
                            "server-not-modified" in (r.rec_headers.get_header("WARC-Profile")
                                                      or ""))
    assert revisits == sum(e.status == 304 for e in log)
