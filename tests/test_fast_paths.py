"""The CPU fast paths (#20) change no answer: a crawl with the known-links spider middleware
(known links refused before the engine) fetches exactly the URLs the same crawl fetches
without it, with the same politeness, and refuses known links in the middleware."""

from __future__ import annotations

import pytest

from pathlib import Path

from conftest import run_crawl

from testweb import politeness_violations, read_log

OFF = '{"crawler_ext.frontier.adapter.knownlinks.KnownLinksMiddleware": null}'


@pytest.mark.slow
def test_refusing_known_links_before_the_engine_fetches_the_same_urls(testweb_factory,
                                                                       tmp_path: Path) -> None:
    fetched, results = [], []
    for name, extra in (("on", {}), ("off", {"SPIDER_MIDDLEWARES": OFF})):
        web = testweb_factory(hosts=8, pages=10, hazards=False)
        result = run_crawl("-a", f"seeds={web.seeds_path}",
                           items_path=tmp_path / f"{name}.jsonl",
                           settings={"CRAWLER_EXT_HOSTS": web.hosts_setting,
                                     "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.05, **extra})
        assert result.returncode == 0, result.output[-3000:]
        log = read_log(web.log_path)
        assert politeness_violations(log, min_gap=0.05) == []
        fetched.append(sorted((e.host.split(".")[0], e.path) for e in log))
        results.append(result)
        web.stop()
    on, off = results
    assert fetched[0] == fetched[1] and len(fetched[0]) > 80
    # the same links were refused as known; with the middleware, before the engine's round
    assert on.stat("frontier/known_links") == off.stat("frontier/known_links") > 100
    assert on.stat("dupefilter/filtered") == off.stat("dupefilter/filtered")
    assert on.stat("scheduler/enqueued") == off.stat("scheduler/enqueued")
    assert on.stat("frontier/known_links/before_engine") == on.stat("frontier/known_links")
    assert off.stat("frontier/known_links/before_engine") == 0
