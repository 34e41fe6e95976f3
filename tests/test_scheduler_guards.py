"""Behaviour the scheduler must keep through the redesign, checked in process (no crawl):
the order of a flush, the snapshot after a journal commit, no completion while links wait
for DNS, and what counts as pending."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from scrapy import Request, Spider
from scrapy.signalmanager import SignalManager

from crawler_ext.dupefilter import BloomDupeFilter
from crawler_ext.frontier import Frontier, PolitenessPolicy, SqliteStore
from crawler_ext.frontier.adapter.roles import Policies
from crawler_ext.frontier.adapter.scheduler import FrontierScheduler
from crawler_ext.frontier.scoring import Scorer
from crawler_ext.frontier.strategy import DefaultStrategy
from crawler_ext.hosts.robots import RobotsCache
from crawler_ext.meta import ROBOTS_META
from crawler_ext.signals import frontier_commit


class RecordingStore(SqliteStore):
    def __init__(self, path: Path, calls: list[str]) -> None:
        super().__init__(path, 3)
        self.calls = calls

    def complete(self, entry_ids: list[int]) -> None:
        self.calls.append("complete")
        super().complete(entry_ids)

    def flush(self) -> None:
        self.calls.append("journal commit")
        super().flush()


class RecordingSeen(BloomDupeFilter):
    def __init__(self, calls: list[str]) -> None:
        super().__init__(capacity=1000)
        self.calls = calls

    def flush(self) -> None:
        self.calls.append("seen flush")

    def snapshot(self, mark: int) -> None:
        self.calls.append(f"snapshot at {mark}")


def make(tmp_path: Path, **kwargs) -> tuple[FrontierScheduler, list[str]]:
    calls: list[str] = []
    store = RecordingStore(tmp_path / "f.sqlite3", calls)
    store.open()
    frontier = Frontier(store, PolitenessPolicy(min_delay=0, max_delay=0), [5, 2, 1])
    signals = SignalManager()
    signals.connect(lambda **_: calls.append("frontier_commit"), signal=frontier_commit,
                    weak=False)
    crawler = SimpleNamespace(signals=signals)  # no engine: every response is processed
    sched = FrontierScheduler(frontier, RecordingSeen(calls), DefaultStrategy(Scorer(3)),
                              journal=frontier, crawler=crawler, **kwargs)  # (a durable store)
    sched.spider = Spider("t")
    return sched, calls


def fetch_one(sched: FrontierScheduler) -> None:
    request = sched.next_request()
    assert request is not None
    sched.parts.inflight.left(request)  # the download returned; the response was processed


def test_a_flush_completes_then_signals_then_commits_the_journal_then_the_seen_set(
        tmp_path: Path) -> None:
    sched, calls = make(tmp_path)
    assert sched.enqueue_request(Request("http://e.com/a"))
    fetch_one(sched)
    calls.clear()
    sched.parts.durability.flush()
    assert calls == ["complete", "frontier_commit", "journal commit", "seen flush"]


def test_the_seen_set_is_snapshotted_right_after_a_journal_commit(tmp_path: Path) -> None:
    sched, calls = make(tmp_path)
    for i in range(3):
        sched.enqueue_request(Request(f"http://e.com/{i}"))
    calls.clear()
    sched.parts.durability.snapshot()
    assert calls == ["journal commit", "snapshot at 3"]  # the position it covers: 3 admitted


def test_nothing_is_completed_while_links_wait_for_dns(tmp_path: Path) -> None:
    sched, calls = make(tmp_path)
    assert sched.enqueue_request(Request("http://e.com/a"))
    fetch_one(sched)
    sched.parts.keys._waiting["slow.test"] = ["a link waiting for its address"]
    calls.clear()
    sched.parts.durability.reap()
    assert "complete" not in calls  # its parent's links are not journalled yet
    assert sched.has_pending_requests()  # and the waiting link keeps the crawl open
    sched.parts.keys._waiting.clear()
    sched.parts.durability.reap()
    assert calls == ["complete"]


def test_pending_counts_unconfirmed_urls_and_robots_redirects(tmp_path: Path) -> None:
    sched, _ = make(tmp_path)
    assert not sched.has_pending_requests()
    sched.parts.intake.unconfirmed.append((Request("http://e.com/u"), "http://e.com/u", 1, None))
    assert sched.has_pending_requests()
    sched.parts.intake.unconfirmed.clear()
    robots, _ = make(tmp_path / "r", policies=Policies(robots=RobotsCache(agent="t")))
    hop = Request("http://e.com/robots1.txt",
                  meta={ROBOTS_META: "http://e.com"})
    assert robots.enqueue_request(hop) and robots.has_pending_requests()
    assert robots.next_request() is hop  # paced on its key like any fetch, then sent


def test_a_redirect_target_meets_the_seen_set_even_with_dont_filter(tmp_path: Path) -> None:
    sched, _ = make(tmp_path)
    assert sched.enqueue_request(Request("http://e.com/t"))
    # a retried request's redirect: Scrapy copied the retry's dont_filter onto it
    redirected = Request("http://e.com/t", dont_filter=True,
                         meta={"redirect_urls": ["http://e.com/"], "retry_times": 1})
    assert not sched.enqueue_request(redirected)
