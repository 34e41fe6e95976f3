"""Admission on the test web: spelling variants fetched once, traps contained, exact mode."""

from __future__ import annotations

import pytest

from collections import Counter
from pathlib import Path
from urllib.parse import unquote

from conftest import run_crawl

from testweb import read_log

TRAPS = ("/cal/", "/s/", "/rep/")


def resource(path: str) -> str:
    """The resource a path names, as the test web's server identifies it (parameter order is
    kept: merging reordered queries is a heuristic, off by default)."""
    p, _, query = path.partition("?")
    params = [q for q in query.split("&") if q and not q.startswith(("utm_", "sid="))]
    return unquote(p) + ("?" + "&".join(params) if params else "")


@pytest.mark.slow
def test_no_resource_twice_and_traps_contained(testweb_factory, tmp_path: Path) -> None:
    # 3 of the 30 hosts are trap hosts with 3 traps each (calendar, repeating segments,
    # session ids in paths); the trap defences run with their defaults
    web = testweb_factory(hosts=30, pages=25)
    result = run_crawl("-a", f"seeds={web.seeds_path}", items_path=tmp_path / "items.jsonl",
                       settings={"CRAWLER_EXT_HOSTS": web.hosts_setting,
                                 "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.05,
                                 "CRAWLER_EXT_POLITENESS_MAX_DELAY": 1.0,
                                 "CRAWLER_EXT_POLITENESS_LATENCY_FACTOR": 1,
                                 "CRAWLER_EXT_POLITENESS_BACKOFF_MAX": 2,
                                 "CONCURRENT_REQUESTS": 64})
    assert result.returncode == 0, result.output[-3000:]
    log = read_log(web.log_path)
    # refetches that are not spelling duplicates: retries after 429/503 and robots.txt
    ok = [e for e in log if e.status not in (429, 503) and e.path != "/robots.txt"]
    refused = {(e.host, e.path) for e in log if e.status in (429, 503)}
    spellings: dict[tuple[str, str], set[str]] = {}
    for e in ok:
        if (e.host, e.path) in refused or e.path.startswith("/loop/"):
            continue
        spellings.setdefault((e.host, resource(e.path)), set()).add(e.path)
    twice = {k: v for k, v in spellings.items() if len(v) > 1 and not any("sid=" in p for p in v)}
    assert twice == {}, list(twice.items())[:5]
    counts = Counter((e.host, e.path) for e in ok if (e.host, e.path) not in refused
                     and not e.path.startswith("/loop/"))
    assert max(counts.values()) == 1
    trap_fetches = sum(1 for e in log if e.path.startswith(TRAPS))
    share = trap_fetches / len(log)
    print(f"trap share of fetches: {share:.3%} ({trap_fetches} of {len(log)})")
    # a trap is only known once its first page is seen: 9 fetches are the floor; each trap
    # may cost one more before the chain filters or content dedup stop it
    assert 9 <= trap_fetches <= 18
    assert share <= 0.01


@pytest.mark.slow
def test_exact_mode_fetches_what_an_overfull_bloom_filter_would_skip(
        testweb_factory, tmp_path: Path) -> None:
    web = testweb_factory(hosts=20, pages=30, hazards=False)
    common = {"CRAWLER_EXT_HOSTS": web.hosts_setting, "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.02,
              "ROBOTSTXT_OBEY": False, "CRAWLER_EXT_BLOOM_CAPACITY": 1000,
              "CRAWLER_EXT_BLOOM_ERROR_RATE": 0.6}
    bloom = run_crawl("-a", f"seeds={web.seeds_path}", items_path=tmp_path / "a.jsonl",
                      settings=common)
    web.clear_log()
    exact = run_crawl("-a", f"seeds={web.seeds_path}", items_path=tmp_path / "b.jsonl",
                      settings={**common, "CRAWLER_EXT_SEEN_MODE": "bloom+exact"})
    assert bloom.returncode == 0 and exact.returncode == 0, exact.output[-3000:]
    assert len(bloom.items) < 600  # false positives skipped new pages
    assert len(exact.items) == 600
    assert exact.stat("dupefilter/false_positives_caught") > 0
