"""A broad crawl in small: a few hundred hosts of the broad test web (``testweb/broad.py``:
shared hosting, its own DNS server, lognormal latencies, hosts that never answer, robots.txt
variants), crawled by ``scrapy crawl web`` through the pack's resolver.  The server's request
log judges: no robots.txt rule broken, no host faster than its delay, names looked up once.
The full-size comparison with stock Scrapy is ``python benchmarks/run.py broad``."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import pytest
from conftest import run_crawl

from testweb import politeness_violations, read_log
from testweb.broad import BroadWeb, BroadWebServer, robots_violations

HOSTS = 300


def test_the_broad_web_is_deterministic_and_shares_addresses() -> None:
    web, again = BroadWeb(7, 2_000), BroadWeb(7, 2_000)
    assert [web.address(i) for i in range(50)] == [again.address(i) for i in range(50)]
    assert web.page(3, 0, 80) == again.page(3, 0, 80)
    assert 8_000 <= len(web.page(3, 0, 80)) <= 32_000
    per_address = Counter(web.address(i) for i in range(web.n_hosts))
    assert per_address.most_common(1)[0][1] >= 50  # shared hosting: one address, many names
    assert len(per_address) < web.n_hosts / 3
    kinds = Counter(web.robots_kind(i) for i in range(web.n_hosts))
    assert {"private", "missing", "unavailable", "crawl_delay", "disallow_all",
            "no_answer"} <= set(kinds)
    assert web.respond(web.name(1), "/", "127.0.0.9", 80)[0] == 421  # not its address


@pytest.mark.slow
def test_a_broad_crawl_is_polite_obeys_robots_txt_and_asks_each_name_once(
        tmp_path: Path) -> None:
    with BroadWebServer(tmp_path / "web", hosts=HOSTS, max_pages=8,
                        latency_scale=0.05) as server:
        result = run_crawl("-a", f"seeds={server.seeds_path}", items_path=tmp_path / "items.jsonl",
                           settings={"CRAWLER_EXT_DNS_SERVERS": f"127.0.0.1:{server.dns_port}",
                                     "CRAWLER_EXT_POLITENESS_MIN_DELAY": 1.0,
                                     "CONCURRENT_REQUESTS": 100, "DOWNLOAD_TIMEOUT": 2,
                                     "CRAWLER_EXT_POLITENESS_BACKOFF_MAX": 4,
                                     "CLOSESPIDER_TIMEOUT": 150, "LOG_LEVEL": "INFO",
                                     "CRAWLER_EXT_GC_THRESHOLD": 10_000},
                           timeout=240)
        queries = server.dns_queries()
    assert result.returncode == 0, result.output[-3000:]
    assert result.stat("finish_reason") == "finished", result.stats
    assert "Traceback" not in result.output and " ERROR: " not in result.output
    web = server.web
    log = read_log(server.log_path)
    assert robots_violations(log, web) == []
    assert politeness_violations(log, 1.0, tolerance=0.05) == []
    live = {web.name(i) for i in range(HOSTS) if not web.dead(i)
            and web.robots_kind(i) not in ("disallow_all", "unavailable", "no_answer")}
    fetched = {e.host for e in log if e.path != "/robots.txt" and e.status == 200}
    assert len(fetched & live) >= 0.95 * len(live), len(live - fetched)
    # names are looked up once each (the resolver's cache; a failed fetch does not ask again)
    assert max(queries.values()) <= 2, Counter(queries.values())
    assert len(queries) >= 0.95 * len({e.host for e in log})
    # the garbage collector tuned for the crawl (CRAWLER_EXT_GC_THRESHOLD), its work counted
    assert "Garbage collector: " in result.output
    assert result.stat("gc/collections/0") is not None, result.stats


def test_the_collector_tuning_freezes_start_up_and_widens_the_young_generation() -> None:
    import gc

    from crawler_ext.runtime.collector import tune

    before = gc.get_threshold()
    try:
        assert not tune(0) and gc.get_threshold() == before  # 0: Python's collector as it is
        assert tune(12_345)
        assert gc.get_threshold() == (12_345, before[1], before[2])
        assert gc.get_freeze_count() > 1000  # the start-up objects, out of the collector's sight
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
