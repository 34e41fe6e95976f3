"""Focused crawling on topical webs of real documentation the pack never saw
(``testweb.topics``: SQLite, Apache httpd, SQLAlchemy; a page is on topic when its section
comes from the topic's package), with examples only -- no keyword list.

For each topic, on the same graph and budget (a third of the topic's pages or less):
the simulator's references (breadth-first, keyword best-first, parent-relevance
best-first, the pack's own link scorer in order, and the oracle: ``focus_sim``) and the pack
as real ``scrapy crawl`` runs with its politeness, alternated, the median shown.  Reported:
harvest at budget (the share of the first ``budget`` fetches, by the server's log, that are
on topic), its share of the oracle, the harvest curve, politeness gaps, and the page
classifier's precision and recall against the labels on the pages it judged.  Then each
learning feature on and off (alternated real crawls).
"""

from __future__ import annotations

import json
import statistics
import tempfile
from pathlib import Path

from benchmarks.focus_sim import CURVE_POINTS, Graph, curve, policies, simulate
from benchmarks.harness import crawl, table
from testweb import read_log
from testweb.requestlog import politeness_violations

DELAY = 0.05
TOPICS = ("sqlite", "apache", "sqlalchemy")
PERTURBED = 5
#: the real crawls: the pack as a user runs it with examples only, and its parts turned off
REAL = [("the pack, examples only", {}),
        # a band a point of score: links in their scores' exact order (docs/focus.md)
        ("the same, 101 bands", {"CRAWLER_EXT_FRONTIER_BANDS": 101}),
        ("the same, no exploration", {"CRAWLER_EXT_FOCUS_EXPLORATION": 0.0}),
        ("the same, 16 active hosts", {"CRAWLER_EXT_FOCUS_ACTIVE_HOSTS": 16}),
        ("the same, learning off", {"CRAWLER_EXT_FOCUS_LEARN": False}),
        ("the same, tunnel depth 2", {"CRAWLER_EXT_FOCUS_TUNNEL_DEPTH": 2}),
        ("the same, dispatch not held for scores", {"CRAWLER_EXT_FOCUS_MAX_UNSCORED": -1})]


def feature_rows(graph: Graph, classifier, budget: int) -> list[list]:
    """The simulated pack scorer as shipped; its learned answer always used, with every
    feature and each one off; and learning off."""
    import random

    from benchmarks.focus_sim import PackScorer
    from crawler_ext.focus.links import FEATURES

    base = dict(graph.relevance)
    variants = [("as shipped: learned, used while it ranks better than the prior", {}),
                ("learned, always used, all features", {"gated": False})] + \
        [(f"learned, always used, without {kind}", {"gated": False,
                                                    "features": FEATURES - {kind}})
         for kind in sorted(FEATURES)] + [("learning off (the prior alone)", {"learn": False})]
    rows = []
    try:
        for name, kwargs in variants:
            harvests = []
            for n in range(PERTURBED):
                rng = random.Random(n)
                graph.relevance = {k: min(1.0, max(0.0, v + (rng.uniform(-0.05, 0.05) if n
                                                               else 0.0)))
                                   for k, v in base.items()}
                policy = PackScorer(graph, classifier, **{k: v for k, v in kwargs.items()
                                                          if k != "gated"})
                policy.scorer.gated = kwargs.get("gated", True)
                harvests.append(sum(simulate(graph, policy, budget)) / budget)
            rows.append([name, statistics.median(harvests),
                         ", ".join(f"{h:.3f}" for h in harvests)])
    finally:
        graph.relevance = base
    return rows


def free_port() -> int:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def focus_settings(web, items: Path, **extra) -> dict:
    return {"CRAWLER_EXT_POLITENESS_MIN_DELAY": DELAY, "CONCURRENT_REQUESTS": 16,
            "CRAWLER_EXT_FOCUS_ENABLED": True,
            "CRAWLER_EXT_FOCUS_RELEVANT": str(web.relevant_examples),
            "CRAWLER_EXT_FOCUS_IRRELEVANT": str(web.irrelevant_examples),
            "FEEDS": json.dumps({str(items): {"format": "jsonlines", "fields": ["url",
                                                                              "relevance"]}}),
            **extra}


def classifier_quality(judged: dict[str, float], labels: dict[str, bool],
                       threshold: float = 0.5) -> tuple[float, float]:
    """(precision, recall) of the verdicts ``judged`` (page key -> relevance) against the
    labels."""
    said = {k for k, r in judged.items() if r >= threshold}
    truth = {k for k in judged if labels.get(k)}
    hit = len(said & truth)
    return hit / max(1, len(said)), hit / max(1, len(truth))


def real_crawl(web, port: int, budget: int, work: Path, tag: str, **extra) -> dict:
    """One ``scrapy crawl`` to the budget: harvest, curve, gaps, classifier quality."""
    from testweb.static import RealWebServer

    items = work / f"items-{tag}.jsonl"
    with RealWebServer(web.sites, workdir=work / f"run-{tag}", port=port) as server:
        stats = crawl(server, {**focus_settings(web, items, **extra),
                               "CLOSESPIDER_PAGECOUNT": budget + budget // 4},
                      ",".join(f"http://{s.split('/', 1)[0]}:{port}/index.html"
                               for s in web.seeds), work, "-a", "allowed_domains=real.test")
        log = [e for e in read_log(server.log_path) if e.path != "/robots.txt"]
    first = sorted(log, key=lambda e: e.start)[:budget]
    labels = [web.labels.get(f"{e.host}{e.path}", False) for e in first]
    judged = {}
    for line in items.read_text().splitlines() if items.exists() else []:
        item = json.loads(line)
        if item.get("relevance") is not None:
            judged[Graph.key(item["url"])] = item["relevance"]
    precision, recall = classifier_quality(judged, web.labels)
    return {"harvest": sum(labels) / max(1, budget), "curve": curve(labels, budget),
            "gaps": len(politeness_violations(log, min_gap=DELAY)), "precision": precision,
            "recall": recall, "stats": stats}


def bench_focus(quick: bool) -> None:
    from crawler_ext.focus.classifier import PageClassifier
    from crawler_ext.focus.topic import load_examples
    from testweb.topics import build

    runs = 1 if quick else 3
    summary = []
    for topic in TOPICS[:1] if quick else TOPICS:
        with tempfile.TemporaryDirectory() as tmp:
            work = Path(tmp)
            port = free_port()
            web = build(work / "web", topic=topic, port=port)
            budget = web.relevant // 3
            graph = Graph.load(work / "web" / "web.json")
            classifier = PageClassifier.train(
                load_examples(web.relevant_examples, "relevant"),
                load_examples(web.irrelevant_examples, "irrelevant"))
            graph.classify(classifier)
            precision, recall = classifier_quality(graph.relevance, web.labels)
            rows = []
            simulated = {}
            for make in policies(graph, classifier):
                policy = make()
                labels = simulate(graph, policy, budget)
                simulated[policy.name] = sum(labels) / budget
                rows.append([f"{policy.name} (simulated)", simulated[policy.name], *curve(
                    labels, budget), "", "", "", ""])
            oracle = rows[-1][1]
            # the real crawls, alternated: one crawl's harvest moves with the order responses
            # come back in; the median run of each is shown
            real: dict[str, list[dict]] = {name: [] for name, _ in REAL}
            for n in range(runs):
                for index, (name, extra) in enumerate(REAL):
                    real[name].append(real_crawl(web, port, budget, work, f"{index}-{n}",
                                                 **extra))
            for name, _ in REAL:
                ordered = sorted(real[name], key=lambda r: r["harvest"])
                median = ordered[len(ordered) // 2]
                rows.append([f"{name} (scrapy crawl)", median["harvest"], *median["curve"],
                             median["gaps"],
                             f"{median['precision']:.2f} / {median['recall']:.2f}",
                             median["stats"].get(
                                 "frontier/deferred", 0),
                             ", ".join(f"{r['harvest']:.3f}" for r in real[name])])
            rows = [r[:2] + [r[1] / oracle if oracle else 0.0] + r[2:] for r in rows]
            table(f"Focused crawling, topic {topic}: {len(web.labels):,} pages on "
                  f"{len(web.sites)} hosts, {web.relevant:,} on topic; budget {budget:,} "
                  f"fetches; the classifier on the whole web: precision {precision:.2f}, "
                  f"recall {recall:.2f}",
                  ["crawl", "harvest at budget", "of the oracle",
                   *(f"harvest at {p:.0%}" for p in CURVE_POINTS), "politeness gaps",
                   "classifier precision / recall (pages judged)", "deferred", "runs"],
                  rows)
            table(f"The link scorer's learned features, topic {topic}, simulated (median of "
                  f"{PERTURBED} runs, each page's relevance moved by up to ±0.05: one run "
                  "moves a lot with small changes)", ["scorer", "harvest at budget", "runs"],
                  feature_rows(graph, classifier, budget))
            median = sorted(real[REAL[0][0]], key=lambda r: r["harvest"])[runs // 2]
            summary.append([topic, median["harvest"], median["harvest"] / oracle,
                            simulated["keyword best-first"], oracle])
    table("Focused crawling, every topic: the pack (examples only, median of alternated real "
          "crawls) against the simulated keyword best-first and oracle",
          ["topic", "pack harvest", "of the oracle", "keyword best-first", "oracle"], summary)
