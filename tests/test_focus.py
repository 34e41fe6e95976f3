"""Focused crawling: the page classifier and the link scorer on real pages, the strategy's
bands, and bad input stopping ``scrapy crawl`` with one line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from crawler_ext import config
from crawler_ext.errors import ConfigError
from crawler_ext.focus.classifier import PageClassifier
from crawler_ext.focus.links import LinkFeatures, LinkScorer
from crawler_ext.focus.strategy import FocusStrategy, band_of
from crawler_ext.focus.topic import Keywords, load_examples, page_text
from tests.conftest import run_crawl

TOPIC = "flex"  # the flex manual (lexical analysis) is the topic; the other sites are not
OTHERS = ("libgcrypt", "junit4", "jsoncpp", "docutils", "debian-faq")


@pytest.fixture(scope="module")
def pages() -> dict[str, list[Path]]:
    from testweb.corpus import build_corpus

    sites = {s.name: s for s in build_corpus()}
    if TOPIC not in sites:
        pytest.skip("the real-site corpus is not available (offline?)")
    return {name: sorted(sites[name].root.rglob("*.html"))[:80]
            for name in (TOPIC, *OTHERS) if name in sites}


def _texts(paths: list[Path]) -> list[str]:
    return [page_text(p.read_bytes(), True) for p in paths]


def test_the_page_classifier_tells_the_topic_on_pages_it_never_saw(pages) -> None:
    train = {name: _texts(paths[0::2]) for name, paths in pages.items()}
    held_out = {name: _texts(paths[1::2]) for name, paths in pages.items()}
    classifier = PageClassifier.train(train[TOPIC], [t for n in OTHERS if n in train
                                                     for t in train[n]])
    on = classifier.relevances(held_out[TOPIC])
    off = classifier.relevances([t for n in OTHERS if n in held_out for t in held_out[n]])
    right = sum(r >= 0.5 for r in on) + sum(r < 0.5 for r in off)
    assert right >= 0.9 * (len(on) + len(off)), (right, len(on), len(off))
    # keywords alone: a keyword classifier
    keywords = PageClassifier.train([], [], Keywords.parse(["flex", "scanner", r"lex\w*"]))
    assert sum(r >= 0.5 for r in keywords.relevances(held_out[TOPIC])) >= 0.8 * len(on)


def test_the_link_scorer_learns_which_links_lead_to_the_topic(pages) -> None:
    """Links whose anchors and URLs say nothing of the topic (the prior cannot tell them
    apart): outcomes teach the scorer that links into /lex/ lead to relevant pages."""
    classifier = PageClassifier.train([], [], Keywords.parse(["scanner"]))
    links = [LinkFeatures(f"http://{host}.test/{kind}/page{i}.html", "next", 0.0, f"{host}.test",
                          0.5)
             for i in range(200) for host, kind in (("a", "lex"), ("b", "misc"))]
    learned, fixed = LinkScorer(classifier), LinkScorer(classifier, learn=False)
    for scorer in (learned, fixed):
        for link in links:
            scorer.outcome(link, "/lex/" in link.url)
    fresh = [LinkFeatures(f"http://{h}.test/{k}/new.html", "next", 0.0, f"{h}.test", 0.5)
             for h, k in (("a", "lex"), ("b", "misc"))]
    lex, misc = learned.scores(fresh)
    assert lex > misc + 0.2, (lex, misc)
    assert fixed.scores(fresh)[0] == fixed.scores(fresh)[1]  # no learning: the prior only


def test_a_links_words_count_a_keyword_fully_and_are_scored_once(pages) -> None:
    """On a page a keyword hit raises the model's answer; on a link's few words it counts
    fully (the model, trained on whole pages, answers short texts weakly), and a link's
    score travels with it so learning from its outcome does not score it again."""
    texts = {name: _texts(paths[:20]) for name, paths in pages.items()}
    classifier = PageClassifier.train(texts[TOPIC], [t for n in OTHERS if n in texts
                                                     for t in texts[n]],
                                      Keywords.parse(["scanner"]))
    anchor = "scanner options"
    (page_score,) = classifier.relevances([anchor])
    (link_score,) = classifier.link_relevances([anchor])
    assert link_score == 1.0 > page_score  # one keyword of one: fully on topic by it
    scorer = LinkScorer(classifier)
    (link,) = scorer.described([LinkFeatures("http://a.test/opts.html", anchor, 0.0, "a.test",
                                             0.5)])
    assert link.topical == link_score and "t:9" in link.tokens(link.topical)
    calls = []
    classifier.link_relevances = lambda words: calls.append(words) or [0.0] * len(words)
    assert scorer.described([link]) == [link] and calls == [[]]  # carried, not scored again


def test_a_links_harvest_is_its_directorys_drawn_towards_its_hosts() -> None:
    """A directory's pages on topic describe its links better than its host's (a site keeps
    a subject under one directory); a directory with few pages fetched leans on its host,
    and a host not seen yet counts as undecided."""
    from crawler_ext.focus.harvest import Harvest, directory_of

    assert directory_of("http://a.test:8080/docs/x/y.html?q=1") == ("a.test:8080", "docs")
    assert directory_of("http://a.test/index.html") == directory_of("http://a.test") == \
        ("a.test", "")
    harvest = Harvest(prior_weight=1.0)
    assert harvest.of("http://new.test/docs/a.html") == harvest.host("new.test") == 0.5
    for i in range(6):
        harvest.add(f"http://a.test/sql/p{i}.html", True)
        harvest.add(f"http://a.test/blog/p{i}.html", False)
    assert harvest.host("a.test") == pytest.approx(6.5 / 13)
    on, off = harvest.of("http://a.test/sql/new.html"), harvest.of("http://a.test/blog/new.html")
    assert on > 0.9 and off < 0.1, (on, off)
    # a directory not fetched yet: its host's harvest; after one page, half its own
    assert harvest.of("http://a.test/faq/new.html") == harvest.host("a.test")
    harvest.add("http://a.test/faq/p.html", True)
    assert harvest.of("http://a.test/faq/x.html") == pytest.approx((1 + 7.5 / 14) / 2)


def test_the_words_around_a_link_are_its_context() -> None:
    """The HTML processor gives a link the words of its sentence (or, for a link alone in a
    list item, its list) when a focused crawl asks; the learned scorer reads them as tokens
    of their own, the prior does not."""
    from crawler_ext.processors.contract import Document
    from crawler_ext.processors.html import HtmlProcessor

    html = (b"<html><body><p>" + b"filler words here " * 10 + b"</p><p>Read how the lexer "
            b"splits tokens in the <a href='/lex.html'>next chapter</a> on scanners and "
            b"grammars.</p><ul><li><a href='/a.html'>Parsing</a></li><li><a href='/b.html'>"
            b"Lexing</a></li></ul></body></html>")
    document = Document("http://a.test/", "text/html", {}, html)
    processor = HtmlProcessor()
    assert {link.context for link in processor.process(document).links} == {""}  # off
    processor.link_context = True
    links = {link.url: link for link in processor.process(document).links}
    assert links["http://a.test/lex.html"].context == \
        "Read how the lexer splits tokens in the on scanners and grammars."
    assert links["http://a.test/a.html"].context == "Lexing"  # its neighbours in the list
    link = LinkFeatures("http://a.test/x.html", "next", 0.0, "a.test", 0.5, "lexer tokens")
    assert "c:lexer" in link.tokens(0.5) and "lexer" not in link.text()


def test_the_focus_strategy_maps_scores_onto_bands() -> None:
    strategy = FocusStrategy(16)
    assert band_of(100, 16) == 0 and band_of(0, 16) == 15 and band_of(-5, 16) == 15
    assert strategy.link(1, "h", 0, 0, None, False) == 0  # a start URL goes first
    assert strategy.link(2, "h", 1, 90, 1, False) < strategy.link(3, "h", 1, 20, 1, False)
    assert strategy.link(4, "h", 1, 90, 1, True) == strategy.link(2, "h", 1, 90, 1, False) + 1
    many = FocusStrategy(101)  # demoted by 1/16 of the scores whatever the bands
    assert many.link(4, "h", 1, 90, 1, True) == many.link(2, "h", 1, 90, 1, False) + 6


def test_a_focused_frontier_in_101_bands_serves_links_one_point_of_score_apart() -> None:
    """Built as a crawl builds it: with ``CRAWLER_EXT_FRONTIER_BANDS`` 101 a focused crawl
    keeps a band a point of score, so a link scored 0.99 found after one scored 0.95 leaves
    first; in the 16 bands of the default the two tie and go first come, first served.  The
    default weights of 101 bands span what those of 16 do."""
    from types import SimpleNamespace

    from scrapy.settings import Settings

    from crawler_ext.frontier import Entry, Outcome
    from crawler_ext.frontier.adapter.factory import make_frontier, make_strategy

    order = []
    for bands in (101, 16):
        crawler = SimpleNamespace(settings=Settings({"CRAWLER_EXT_FOCUS_ENABLED": True,
                                                     "CRAWLER_EXT_FRONTIER_BANDS": bands}),
                                  stats=None)
        strategy = make_strategy(crawler)
        frontier = make_frontier(crawler, 0.5, best_first=True).frontier
        assert strategy.bands == bands
        weights = config.band_weights(crawler.settings)
        assert len(weights) == bands and weights[0] / weights[-1] == 2.0 ** 15
        for n, (host, priority) in enumerate((("a.test", 95), ("b.test", 99))):
            band = strategy.link(n + 1, host, 1, priority, 7, False)
            frontier.add([Entry(host, band, host.encode(), fp=n + 1)])
        served = []
        for _ in range(2):
            entry = frontier.next(100.0)
            served.append(entry.key)
            frontier.done(entry, Outcome(200, 0.0), 100.0)
        order.append(served)
    assert order == [["b.test", "a.test"], ["a.test", "b.test"]]
    assert config.band_weights(Settings({})) == [2.0 ** (15 - b) for b in range(16)]


def test_focus_enabled_and_the_strategy_setting_agree_or_stop_the_crawl() -> None:
    from scrapy.settings import Settings

    assert config.focus_enabled(Settings({"CRAWLER_EXT_FOCUS_ENABLED": True}))
    assert config.focus_enabled(Settings({"CRAWLER_EXT_STRATEGY": "focus"}))
    assert not config.focus_enabled(Settings({}))
    with pytest.raises(ConfigError, match="CRAWLER_EXT_STRATEGY=focus but"):
        config.focus_enabled(Settings({"CRAWLER_EXT_STRATEGY": "focus",
                                       "CRAWLER_EXT_FOCUS_ENABLED": False}))
    with pytest.raises(ConfigError, match="CRAWLER_EXT_FOCUS_ENABLED is on but"):
        config.focus_enabled(Settings({"CRAWLER_EXT_STRATEGY": "my.Strategy",
                                       "CRAWLER_EXT_FOCUS_ENABLED": True}))


def test_bad_examples_stop_the_crawl_with_one_line(tmp_path: Path) -> None:
    empty, same_a, same_b, broken = (tmp_path / n for n in ("empty", "a", "b", "broken"))
    for folder in (empty, same_a, same_b, broken):
        folder.mkdir()
    for folder in (same_a, same_b):
        (folder / "page.html").write_text("<title>Same</title><p>the very same words here</p>")
    os.symlink(tmp_path / "nowhere.html", broken / "gone.html")
    with pytest.raises(ConfigError, match="holds no .html or .txt example"):
        load_examples(empty, "CRAWLER_EXT_FOCUS_RELEVANT")
    with pytest.raises(ConfigError, match="cannot read"):
        load_examples(broken, "CRAWLER_EXT_FOCUS_RELEVANT")
    with pytest.raises(ConfigError, match="predicts one class only"):
        PageClassifier.train(load_examples(same_a, "x"), load_examples(same_b, "y"))
    with pytest.raises(ConfigError, match="is not a regular expression"):
        Keywords.parse(["price(", "shop"])
    cases = [({"CRAWLER_EXT_FOCUS_RELEVANT": str(empty),
               "CRAWLER_EXT_FOCUS_IRRELEVANT": str(same_b)}, "holds no .html or .txt example"),
             ({"CRAWLER_EXT_FOCUS_RELEVANT": str(same_a),
               "CRAWLER_EXT_FOCUS_IRRELEVANT": str(same_b)}, "predicts one class only"),
             ({"CRAWLER_EXT_FOCUS_RELEVANT": str(broken),
               "CRAWLER_EXT_FOCUS_IRRELEVANT": str(same_b)}, "cannot read"),
             ({}, "give examples or keywords of the topic")]
    for settings, message in cases:
        result = run_crawl("-a", "seeds=http://focus.test:9/", timeout=60,
                           settings={"CRAWLER_EXT_FOCUS_ENABLED": True, **settings})
        assert result.returncode == 2, result.output[-2000:]
        assert message in result.output and "Traceback" not in result.output, result.output



def test_dispatch_waits_for_the_scores_but_never_for_long() -> None:
    from crawler_ext.frontier.adapter.hold import DispatchHold

    hold = DispatchHold(0, patience=10.0)
    assert hold.verdict(0, 100.0) == "go"
    assert hold.verdict(1, 100.0) == "hold" and hold.verdict(3, 109.0) == "hold"
    # a page whose processing hangs: one dispatch goes, then the wait starts again
    assert hold.verdict(1, 110.0) == "expired" and hold.verdict(1, 110.1) == "hold"
    assert hold.verdict(0, 111.0) == "go" and hold.verdict(1, 125.0) == "hold"
    assert DispatchHold(2).verdict(2, 0.0) == "go"


@pytest.mark.slow
def test_learned_link_scores_take_over_where_they_rank_better_and_cost_no_harvest(
        tmp_path: Path) -> None:
    """Anchors say "page" and URLs only a section name (/kb/ on topic): no keyword can tell
    the links apart, and only learning from the pages they led to can.  In real crawls the
    learned model earns its place (it ranks the outcomes better than the prior, so it is
    trusted) and the harvest with it is not below the harvest without; its gain is measured
    in benchmarks/focus.py, not here."""
    from tests.conftest import free_port
    from testweb import read_log
    from testweb.requestlog import politeness_violations
    from testweb.static import RealWebServer
    from testweb.topical import build

    port = free_port()
    web = build(tmp_path / "web", hosts=12, pages_per_host=60, dense_hosts=3,
                informative=False, port=port, seed=7)
    budget = len(web.labels) // 4
    seeds = ",".join(f"http://{s.name}.real.test:{port}/index.html" for s in web.sites[:6])
    harvest = {True: 0, False: 0}
    runs: list[tuple[bool, int]] = []
    trusted: list[tuple[bool, int]] = []
    # two crawls each, alternated, at a 0.1 s politeness floor: one crawl's harvest moves by a
    # few pages with the order responses come back in, more so on a loaded machine (the
    # tests run two files at once), and a paced crawl leaves the scorer outcomes to learn
    # from before each host's next pick
    for n, learn in enumerate((True, False, True, False)):
        with RealWebServer(web.sites, workdir=tmp_path / f"run-{n}", port=port) as server:
            result = run_crawl("-a", f"seeds={seeds}", "-a", "allowed_domains=real.test",
                               items_path=tmp_path / f"items-{n}.jsonl", timeout=180,
                               settings={"CRAWLER_EXT_HOSTS": server.hosts_setting,
                                         "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.1,
                                         "CRAWLER_EXT_FOCUS_ENABLED": True,
                                         "CRAWLER_EXT_FOCUS_KEYWORDS": ",".join(web.keywords),
                                         "CRAWLER_EXT_FOCUS_LEARN": learn,
                                         "CRAWLER_EXT_FOCUS_TUNNEL_DEPTH": 3,
                                         "CLOSESPIDER_PAGECOUNT": budget + 40})
            assert result.returncode == 0, result.output[-3000:]
            log = [e for e in read_log(server.log_path) if e.path != "/robots.txt"]
        assert politeness_violations(log, min_gap=0.1) == []
        first = sorted(log, key=lambda e: e.start)[:budget]
        runs.append((learn, sum(web.labels.get(f"{e.host}{e.path}", False) for e in first)))
        harvest[learn] += runs[-1][1]
        assert result.stat("focus/fetched") > 0
        assert result.stat("focus/scored_on_reactor") == 0  # (in the processor workers)
        assert all("relevance" in item for item in result.items)
        trusted.append((learn, result.stat("focus/link_model/trusted")))
    # measured (relevant pages in the budget, learned against not, two crawls each): 81
    # against 84 and 88 against 88 on a quiet machine, single crawls spread 39 to 49 -- no
    # gain a few crawls can show, no harm either; earlier builds measured 1.02 to 1.43
    assert harvest[True] >= 0.8 * harvest[False], runs
    # the learned model took over in a crawl that learned (it ranked the outcomes better
    # than the prior at the end; measured: in each of four), never without learning
    assert (True, 1) in trusted and all(t == 0 for learn, t in trusted if not learn), trusted
    print(runs)


@pytest.mark.slow
def test_a_focused_crawl_with_examples_only_holds_on_documentation_it_never_saw(
        tmp_path: Path) -> None:
    """A topical web of Apache httpd manual sections among other manuals' (testweb.topics),
    islands behind off-topic pages, the examples held out of it: the pack, given examples
    only, harvests far above breadth-first on the same graph and budget, politely; the
    server's log is the judge."""
    from benchmarks.focus_sim import BreadthFirst, Graph, simulate
    from tests.conftest import free_port
    from testweb import read_log
    from testweb.requestlog import politeness_violations
    from testweb.static import RealWebServer
    from testweb.topics import build

    port = free_port()
    try:
        web = build(tmp_path / "web", topic="apache", hosts=20, pages_per_host=60,
                    topic_hosts=4, port=port)
    except RuntimeError as exc:  # (no Debian mirror: the documentation cannot be had)
        pytest.skip(str(exc))
    budget = web.relevant // 3
    graph = Graph.load(tmp_path / "web" / "web.json")
    breadth = sum(simulate(graph, BreadthFirst(), budget)) / budget
    seeds = ",".join(f"http://{seed.split('/', 1)[0]}:{port}/index.html" for seed in web.seeds)
    with RealWebServer(web.sites, workdir=tmp_path / "run", port=port) as server:
        result = run_crawl("-a", f"seeds={seeds}", "-a", "allowed_domains=real.test",
                           items_path=tmp_path / "items.jsonl", timeout=180,
                           settings={"CRAWLER_EXT_HOSTS": server.hosts_setting,
                                     "CRAWLER_EXT_POLITENESS_MIN_DELAY": 0.05,
                                     "CRAWLER_EXT_FOCUS_ENABLED": True,
                                     "CRAWLER_EXT_FOCUS_RELEVANT": str(web.relevant_examples),
                                     "CRAWLER_EXT_FOCUS_IRRELEVANT":
                                         str(web.irrelevant_examples),
                                     "CLOSESPIDER_PAGECOUNT": budget + budget // 4})
        assert result.returncode == 0, result.output[-3000:]
        log = [e for e in read_log(server.log_path) if e.path != "/robots.txt"]
    assert politeness_violations(log, min_gap=0.05) == []
    assert result.stat("focus/dispatch_held") > 0  # (the pages' scores came first)
    first = sorted(log, key=lambda e: e.start)[:budget]
    harvest = sum(web.labels.get(f"{e.host}{e.path}", False) for e in first) / budget
    share = web.relevant / len(web.labels)
    # measured: 0.37-0.40 (dispatch held for the scores; 0.21-0.23 not held), 0.39 beside
    # four busy loops (0.06-0.23 not held: CI once saw 0.04), against 0.13 of the web on
    # topic and 0.00 for breadth-first (simulated): a crawl that ignored the topic reaches
    # no island within the budget
    assert harvest > breadth + 0.05 and harvest >= 0.5 * share, (harvest, share, breadth)
    assert result.stat("frontier/deferred") > 0  # worse links waited for better ones
    assert all("relevance" in item for item in result.items)
