"""Recrawl mode (``CRAWLER_EXT_RECRAWL_ENABLED``) on a changing test web: pages with known
change periods, ETag/Last-Modified and 304s.  The server's request log is the judge."""

from __future__ import annotations

from collections import Counter
from pathlib import Path
from statistics import median

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


def test_refreshes_get_a_hosts_whole_rate_when_no_new_url_of_it_waits() -> None:
    """The refresh budget is CRAWLER_EXT_RECRAWL_SHARE of a host's rate while its new URLs
    wait (the frontier gives refreshes that share of its turns), all of it when none wait:
    either side takes what the other leaves."""
    def intervals(discovery: bool | None) -> list[float]:
        policy = RefreshPolicy(min_interval=0.1, max_interval=1000.0, share=0.25,
                               explore=1000.0)
        t, out = 0.0, []
        for k in range(200):
            for page in range(20):  # 20 pages changing every 10 s, one fetch a second
                verdict = policy.observe(f"http://h/{page}", "h", t, exact=int(t // 10),
                                         delay=1.0, discovery=discovery)
                out.append(verdict.interval)
            t += 20.0 if k < 5 else 1.0
        return out[-20:]
    busy, idle, unknown = intervals(True), intervals(False), intervals(None)
    # a quarter of the rate, and all of it: the pages' intervals (76 s and 20 s)
    assert median(busy) == pytest.approx(4 * median(idle), rel=0.1)
    assert unknown == busy


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


def test_a_more_important_page_of_two_alike_is_revisited_more(tmp_path: Path) -> None:
    """Two pages that change alike on one host; the frontier found one four times as
    important (its request's meta): it gets the larger share of the host's revisits, and its
    weight survives the history log."""
    from crawler_ext.recrawl.history import HistoryLog

    policy = RefreshPolicy(min_interval=0.5, max_interval=100.0, share=0.5)
    log = HistoryLog(tmp_path / "h.jsonl")
    log.open(policy)
    due, fetches, t = {"a": 0.0, "b": 0.0}, Counter(), 0.0
    while t < 600:
        for page, when in due.items():
            if when <= t:
                weight = (4.0 if page == "a" else 0.25) if t == 0 else None  # found once
                verdict = policy.observe(f"http://h/{page}", "h", t, exact=int(t // 6),
                                         delay=1.0, weight=weight)
                log.append(f"http://h/{page}", "h", t, int(t // 6), None, None, False, weight)
                due[page] = t + verdict.interval
                fetches[page] += 1
        t += 0.25
    assert fetches["a"] > 1.3 * fetches["b"], fetches
    log.close(policy)
    again = RefreshPolicy(min_interval=0.5, max_interval=100.0)
    HistoryLog(log.path).load(again)
    assert again.history("http://h/a").weight == 4.0 and again.history("http://h/b").weight == 0.25


def test_the_histories_survive_a_restart_and_a_torn_line(tmp_path: Path) -> None:
    from crawler_ext.recrawl.history import HistoryLog

    policy = RefreshPolicy(min_interval=1.0, max_interval=100.0)
    log = HistoryLog(tmp_path / "h.jsonl")
    log.open(policy)
    for t in range(12):
        for page in ("a", "b"):
            exact = t // 3 if page == "a" else 0
            policy.observe(f"http://h/{page}", "h", float(t), exact, etag=f'"{exact}"')
            log.append(f"http://h/{page}", "h", float(t), exact, f'"{exact}"', None, False)
        if t == 5:
            log.flush()
            log.compact(policy)  # the state so far, then the observations after it
            log._file = open(log.path, "a", encoding="utf-8")
    log.flush()
    with open(log.path, "a") as fh:
        fh.write('{"k": "o", "u": "http://h/a", "h"')  # a kill mid-line
    for _ in range(2):  # replayed, then compacted and replayed again
        again = RefreshPolicy(min_interval=1.0, max_interval=100.0)
        HistoryLog(log.path).load(again)
        for page in ("a", "b"):
            want, got = policy.history(f"http://h/{page}"), again.history(f"http://h/{page}")
            assert (got.checks, got.changes, got.last_fetch, got.etag, got.exact) == (
                want.checks, want.changes, want.last_fetch, want.etag, want.exact)
            assert [(round(t, 3), c) for t, c in got.recent] == \
                [(round(t, 3), c) for t, c in want.recent]
        HistoryLog(log.path).compact(again)
    assert again.history("http://h/a").changes == 3


def _recrawl(web, tmp_path: Path, **settings: object):
    """A recrawl of the changing test web ``web`` (intervals 1 to 30 s), with ``settings``."""
    return run_crawl("-a", f"seeds={web.seeds_path}", items_path=tmp_path / "items.jsonl",
                     settings={"CRAWLER_EXT_HOSTS": web.hosts_setting,
                               "CRAWLER_EXT_RECRAWL_ENABLED": True,
                               "CRAWLER_EXT_RECRAWL_MIN_INTERVAL": 1,
                               "CRAWLER_EXT_RECRAWL_MAX_INTERVAL": 30, **settings})


@pytest.mark.slow
def test_a_recrawl_sends_conditional_requests_and_refetches_changing_pages(
        testweb_factory, tmp_path: Path) -> None:
    web = testweb_factory(hosts=3, pages=8, hazards=False, change_period=PERIOD)
    result = _recrawl(web, tmp_path, CRAWLER_EXT_POLITENESS_MIN_DELAY=0.2,
                      CLOSESPIDER_TIMEOUT=25)
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


@pytest.mark.slow
def test_a_resumed_recrawl_keeps_its_histories_and_its_refreshes(testweb_factory,
                                                                 tmp_path: Path) -> None:
    """Under JOBDIR the refreshes are queued on disk and the histories in
    JOBDIR/recrawl_history.jsonl: the same command run again goes on with conditional GETs
    at once (the validators are known) and fetches no page as new."""
    web = testweb_factory(hosts=2, pages=8, hazards=False, change_period=PERIOD)
    settings = {"CRAWLER_EXT_HOSTS": web.hosts_setting, "JOBDIR": str(tmp_path / "job"),
                "CRAWLER_EXT_RECRAWL_ENABLED": True, "CRAWLER_EXT_RECRAWL_MIN_INTERVAL": 1,
                "CRAWLER_EXT_RECRAWL_MAX_INTERVAL": 30,
                "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.2, "CLOSESPIDER_TIMEOUT": 10}
    first = run_crawl("-a", f"seeds={web.seeds_path}", items_path=tmp_path / "1.jsonl",
                      settings=settings)
    assert first.returncode == 0, first.output[-3000:]
    assert (tmp_path / "job" / "recrawl_history.jsonl").exists()
    split = max(e.end for e in read_log(web.log_path))
    second = run_crawl("-a", f"seeds={web.seeds_path}", items_path=tmp_path / "2.jsonl",
                       settings=settings)
    assert second.returncode == 0, second.output[-3000:]
    assert "resumed the change histories of 16 pages" in second.output
    later = [e for e in read_log(web.log_path) if e.start > split and e.path.startswith("/p/")]
    first = {}
    for e in later:
        first.setdefault((e.host, e.path), e.status)
    # the pages that never change: their first fetch after the restart is already a 304
    static = {k: v for k, v in first.items() if int(k[1][3:].split(".")[0]) % 4 == 0}
    assert static and set(static.values()) == {304}, first
    pages = [e for e in read_log(web.log_path) if e.start > split and e.path != "/robots.txt"]
    assert second.stat("recrawl/fetched") == len(pages)  # refreshes only, none new
    assert politeness_violations([e for e in read_log(web.log_path) if e.start > split],
                                 min_gap=0.2) == []


@pytest.mark.slow
def test_discovery_keeps_its_share_of_a_host_while_refreshes_wait(testweb_factory,
                                                                 tmp_path: Path) -> None:
    """CRAWLER_EXT_RECRAWL_SHARE in the frontier: while a host's refreshes and its newly found
    pages both wait, refreshes take about that share of its fetches (not all of them, though a
    refresh is queued in a better band than a new link), and the rest goes to discovery."""
    web = testweb_factory(hosts=1, pages=40, hazards=False, change_period=0.5)
    result = _recrawl(web, tmp_path, CRAWLER_EXT_RECRAWL_SHARE=0.25,
                      CRAWLER_EXT_POLITENESS_MIN_DELAY=0.1, CRAWLER_EXT_POLITENESS_MAX_DELAY=0.1,
                      CLOSESPIDER_TIMEOUT=20)
    assert result.returncode == 0, result.output[-3000:]
    log = [e for e in read_log(web.log_path) if e.path.startswith("/p/") or e.path == "/"]
    assert politeness_violations(log, min_gap=0.1) == []
    seen: set[str] = set()
    kinds = []  # "n" a page's first fetch, "r" a refresh, up to the last new page
    for e in log:
        kinds.append("r" if e.path in seen else "n")
        seen.add(e.path)
    assert len(seen) == 40, len(seen)
    window = kinds[:max(i for i, k in enumerate(kinds) if k == "n") + 1]
    share = window.count("r") / len(window)
    assert 0.1 <= share <= 0.35, (share, "".join(window))
