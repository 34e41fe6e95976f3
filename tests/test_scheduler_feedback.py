"""The scheduler's feedback loop from content dedup, built from plain objects (no engine)."""

from __future__ import annotations

import json
from pathlib import Path

from scrapy import Request, Spider

from crawler_ext.dupefilter import BloomDupeFilter
from crawler_ext.frontier import Frontier, MemoryStore, PolitenessPolicy
from crawler_ext.frontier.adapter.roles import SchedulerOptions
from crawler_ext.frontier.adapter.scheduler import FrontierScheduler
from crawler_ext.frontier.scoring import Scorer
from crawler_ext.frontier.strategy import DefaultStrategy


def make_scheduler(rules_path: Path | None = None) -> FrontierScheduler:
    frontier = Frontier(MemoryStore(3), PolitenessPolicy(min_delay=0, max_delay=0), [5, 2, 1])
    sched = FrontierScheduler(frontier, BloomDupeFilter(capacity=1000), DefaultStrategy(Scorer(3)),
                              SchedulerOptions(rules_path=rules_path, learn_min_evidence=3))
    sched.spider = Spider("t")
    return sched


def test_duplicates_differing_in_one_parameter_teach_a_rule(tmp_path: Path) -> None:
    rules = tmp_path / "learned_rules.json"
    sched = make_scheduler(rules)
    for i in range(3):
        sched.parts.learning.content_duplicate(f"http://e.com/p/{i}?sid={i}1&x=1",
                                               f"http://e.com/p/{i}?x=1", kind="exact")
    assert sched.admission.learned == {"e.com": {"sid"}}
    assert json.loads(rules.read_text()) == {"e.com": ["sid"]}
    assert sched.enqueue_request(Request("http://e.com/q?sid=77&x=2"))
    assert not sched.enqueue_request(Request("http://e.com/q?x=2&sid=99"))  # same URL now
    again = make_scheduler(rules)
    again.parts.learning.load()
    assert again.admission.learned == {"e.com": {"sid"}}


def test_duplicate_prone_pattern_is_queued_lower() -> None:
    sched = make_scheduler()
    assert sched.enqueue_request(Request("http://e.com/print/1.html"))
    assert sched.frontier.band_sizes() == [0, 1, 0]  # depth 0, unknown host: band 1
    for i in range(3):
        sched.parts.learning.content_duplicate(f"http://e.com/print/{i}.html",
                                         f"http://e.com/p/{i}.html", kind="near")
    assert sched.enqueue_request(Request("http://e.com/print/9.html"))
    assert sched.frontier.band_sizes() == [0, 1, 1]  # the same pattern, one band lower
    assert sched.enqueue_request(Request("http://e.com/other/9.html"))
    assert sched.frontier.band_sizes() == [0, 2, 1]
