"""The crawling-strategy seam: the default strategy orders URLs exactly as the scoring it
wraps, a user's strategy plugs in by ``CRAWLER_EXT_STRATEGY`` and decides the bands, and a
bad value stops ``scrapy crawl`` with one line."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from conftest import run_crawl
from scrapy import Request, Spider
from scrapy.settings import Settings

from crawler_ext.admission.urls import fingerprint
from crawler_ext.config import ConfigError
from crawler_ext.dupefilter import BloomDupeFilter
from crawler_ext.frontier import Frontier, MemoryStore, PolitenessPolicy
from crawler_ext.frontier.adapter.factory import make_strategy, strategy_class
from crawler_ext.frontier.adapter.scheduler import FrontierScheduler
from crawler_ext.frontier.importance import MEAN_IMPORTANCE, Opic
from crawler_ext.frontier.scoring import Scorer
from crawler_ext.frontier.strategy import CrawlingStrategy, DefaultStrategy


def _crawler(**settings: object) -> SimpleNamespace:
    return SimpleNamespace(settings=Settings(settings), stats=None)


def test_the_default_strategy_scores_as_the_scoring_it_wraps() -> None:
    """Host rank, OPIC importance and depth (scoring.py), a band lower when demoted."""
    scorer = Scorer(16, {"a.test": 0.9})
    strategy, opic = DefaultStrategy(scorer), Opic()
    seed, page = fingerprint("http://a.test/"), fingerprint("http://a.test/p")
    assert strategy.link(seed, "a.test", 0, 0, None, False) == \
        scorer.band(scorer.score("a.test", 0, (opic.seed(seed), opic.importance(seed))[1]))
    link = fingerprint("http://b.test/x")
    band = strategy.link(link, "b.test", 1, 0, page, False)
    opic.queued(link)
    opic.link(page, link, "b.test", 1, 0)
    assert band == scorer.band(scorer.score("b.test", 1, opic.importance(link)))
    demoted = fingerprint("http://b.test/y")
    assert strategy.link(demoted, "b.test", 1, 0, page, True) == min(band + 1, 15)
    assert strategy.band("c.test", 0, 0) == scorer.band(scorer.score("c.test", 0,
                                                                     MEAN_IMPORTANCE))
    strategy.link(fingerprint("http://b.test/z"), "b.test", 1, 0, seed, False)
    # the seed's page done: its cash flows to its link, which may move to a better band
    moves = strategy.page_crawled(seed)
    assert [target for target, _ in moves] == [fingerprint("http://b.test/z")]
    assert all(0 <= moved < 16 for _, moved in moves)


def test_the_setting_chooses_the_default_or_a_users_class() -> None:
    default = make_strategy(_crawler())
    assert isinstance(default, DefaultStrategy) and default.bands == 16
    assert default.refresh_share == 0.5
    assert make_strategy(_crawler(CRAWLER_EXT_STRATEGY="default",
                                  CRAWLER_EXT_FRONTIER_BANDS=4)).bands == 4
    mine = make_strategy(_crawler(CRAWLER_EXT_STRATEGY=f"{__name__}.EverythingInBandTwo",
                                  CRAWLER_EXT_FRONTIER_BANDS=3))
    assert isinstance(mine, EverythingInBandTwo)
    with pytest.raises(ConfigError, match="set CRAWLER_EXT_FRONTIER_BANDS to the same"):
        make_strategy(_crawler(CRAWLER_EXT_STRATEGY=f"{__name__}.EverythingInBandTwo"))


@pytest.mark.parametrize(("value", "says"), [
    ("focussed", "unknown strategy"),
    ("no_such_module.Strategy", "cannot load it"),
    ("crawler_ext.frontier.scoring.Scorer", "not a crawling strategy"),
])
def test_a_bad_strategy_is_one_clear_error(value: str, says: str) -> None:
    with pytest.raises(ConfigError, match=says):
        strategy_class(make_name(value))


def make_name(value: str) -> str:
    from crawler_ext import config

    return config.get(Settings({"CRAWLER_EXT_STRATEGY": value}), "CRAWLER_EXT_STRATEGY")


class EverythingInBandTwo:
    """A user's strategy: every URL in band 2 of 3, nothing promoted."""

    bands = 3
    refresh_share = 0.5

    def __init__(self) -> None:
        self.links: list[tuple[int, str, int, int | None]] = []
        self.crawled: list[int] = []

    def link(self, fp: int, key: str, depth: int, priority: int, page: int | None,
             demoted: bool) -> int:
        self.links.append((fp, key, depth, page))
        return 2

    def rediscovered(self, page: int, fp: int, url: str, depth: int, priority: int) -> None:
        pass

    def page_crawled(self, fp: int) -> list[tuple[int, int]]:
        self.crawled.append(fp)
        return []

    def band(self, key: str, depth: int, priority: int) -> int:
        return 2

    def weight(self, fp: int) -> float | None:
        return None


def test_the_scheduler_asks_the_strategy_for_every_band() -> None:
    mine = EverythingInBandTwo()
    strategy: CrawlingStrategy = mine  # (the protocol, structurally)
    frontier = Frontier(MemoryStore(3), PolitenessPolicy(min_delay=0, max_delay=0), [5, 2, 1])
    sched = FrontierScheduler(frontier, BloomDupeFilter(capacity=1000), strategy)
    sched.spider = Spider("t")
    sched.enqueue_request(Request("http://a.test/"))
    sched.enqueue_request(Request("http://a.test/b", headers={"Referer": "http://a.test/"},
                                  meta={"depth": 1}))
    assert frontier.band_sizes() == [0, 0, 2]
    assert mine.links == [(fingerprint("http://a.test/"), "a.test", 0, None),
                     (fingerprint("http://a.test/b"), "a.test", 1,
                      fingerprint("http://a.test/"))]


def test_scrapy_crawl_with_a_bad_strategy_stops_with_one_line(tmp_path: Path) -> None:
    result = run_crawl("-a", "seeds=http://a.test/",
                       settings={"CRAWLER_EXT_STRATEGY": "no_such_module.Strategy"})
    errors = [line for line in result.output.splitlines() if "error:" in line]
    assert result.returncode == 2 and len(errors) == 1, result.output
    assert "CRAWLER_EXT_STRATEGY=no_such_module.Strategy: cannot load it" in errors[0]
    assert "Traceback" not in result.output
