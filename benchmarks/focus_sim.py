"""The focus benchmark's simulator: crawl orders computed on a topical web's graph
(``testweb.topics``, its ``web.json``), with no network, at the same budget as the real
crawls.  A simulated crawl fetches one page at a time, the best-scored link first (ties in
the order found), and never a URL twice; a page's links are scored when it is fetched.

The references, on the same graph and budget:

* **breadth-first**: links in the order found (stock Scrapy with FIFO queues);
* **keyword best-first**: a link scores the share of the topic's keywords in its parent
  page's text and in its anchor and URL words, half each;
* **parent-relevance best-first**: a link scores its parent page's relevance by the pack's
  page classifier (trained from the examples);
* **the pack's scorer**: the focus middleware's link scorer and tunnel rule, learning online
  from the classifier's verdicts, as in a real crawl but in order and one page at a time:
  what a real crawl loses against it, it loses to concurrency and politeness;
* **oracle**: a link scores its target's label.
"""

from __future__ import annotations

import heapq
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from crawler_ext.focus.classifier import PageClassifier
from crawler_ext.focus.links import FEATURES
from crawler_ext.focus.policy import FocusPolicy, Found
from crawler_ext.focus.topic import Keywords

__all__ = ["CURVE_POINTS", "Graph", "policies", "simulate"]

CURVE_POINTS = (0.1, 0.25, 0.5, 1.0)  # shares of the budget the harvest curve is read at


@dataclass
class Graph:
    pages: dict[str, dict]  # "<host>/<path>" -> title, text, on, links [(url, anchor)]
    seeds: list[str]
    keywords: list[str]
    relevance: dict[str, float] = field(default_factory=dict)  # by the pack's classifier
    port: int = 80  # the web server's, in the links' URLs

    @classmethod
    def load(cls, web_json: Path) -> Graph:
        data = json.loads(web_json.read_text())
        return cls(data["graph"], [f"{h}.real.test/index.html" for h in data["hubs"]],
                   data["keywords"], port=data.get("port", 80))

    @staticmethod
    def key(url: str) -> str:
        parts = urlsplit(url)
        return f"{parts.hostname}{parts.path}"

    def url(self, key: str) -> str:
        """The URL of the page ``key`` as the web's links write it."""
        host, _, path = key.partition("/")
        return f"http://{host}:{self.port}/{path}"

    def text(self, key: str) -> str:
        """A page's text as the crawler reads it: title, body and link anchors."""
        page = self.pages[key]
        return " ".join([page["title"], page["text"], *(a for _, a in page["links"])])

    def classify(self, classifier: PageClassifier) -> None:
        keys = list(self.pages)
        self.relevance = dict(zip(keys, classifier.relevances([self.text(k) for k in keys]),
                                  strict=True))


# -- policies: score(parent key, [(url, anchor)]) -> scores; fetched(key, carried) -----------
class Policy:
    name = ""

    def scores(self, parent: str, links: list[tuple[str, str]], carried: Any
               ) -> list[tuple[float, Any]] | None:
        raise NotImplementedError

    def fetched(self, key: str, carried: Any) -> None:
        return None


class BreadthFirst(Policy):
    name = "breadth-first"

    def __init__(self) -> None:
        self.serial = 0

    def scores(self, parent, links, carried):
        self.serial += 1
        return [(-self.serial, None)] * len(links)


class KeywordBestFirst(Policy):
    name = "keyword best-first"

    def __init__(self, graph: Graph) -> None:
        self.graph = graph
        self.keywords = Keywords.parse(graph.keywords)
        self.saturation = min(3, len(self.keywords.patterns))

    def _share(self, text: str) -> float:
        return min(1.0, self.keywords.hits(text) / self.saturation)

    def scores(self, parent, links, carried):
        from crawler_ext.focus.links import url_words

        page = 0.5 * self._share(self.graph.text(parent))
        return [(page + 0.5 * self._share(f"{a} {' '.join(url_words(u))}"), None)
                for u, a in links]


class ParentRelevance(Policy):
    name = "parent-relevance best-first"

    def __init__(self, graph: Graph) -> None:
        self.graph = graph

    def scores(self, parent, links, carried):
        return [(self.graph.relevance[parent], None)] * len(links)


class Oracle(Policy):
    name = "oracle (links scored by their targets' labels)"

    def __init__(self, graph: Graph) -> None:
        self.graph = graph

    def scores(self, parent, links, carried):
        return [(1.0 if self.graph.pages.get(Graph.key(u), {}).get("on") else 0.0, None)
                for u, _ in links]


class PackScorer(Policy):
    """The focus middleware's rules on the graph (``crawler_ext.focus.policy``, the same
    object): the classifier's verdict, the link scorer learning online from the verdicts,
    the tunnel."""

    name = "the pack's link scorer, simulated"

    def __init__(self, graph: Graph, classifier: PageClassifier, threshold: float = 0.5,
                 tunnel: int = 4, learn: bool = True, features: frozenset[str] = FEATURES
                 ) -> None:
        self.graph = graph
        self.policy = FocusPolicy(classifier, threshold, tunnel, learn, features)
        self.scorer = self.policy.scorer

    def fetched(self, key, carried):
        self.policy.judged(self.graph.url(key), self.graph.relevance[key],
                           carried[0] if carried is not None else None)

    def scores(self, parent, links, carried):
        relevance = self.graph.relevance[parent]
        distance = self.policy.distance(relevance, carried[1] if carried else None)
        scored = self.policy.scored(relevance, distance, [Found(u, a) for u, a in links])
        if scored is None:
            return None
        return [(s, (f, distance)) for f, s in scored]


def policies(graph: Graph, classifier: PageClassifier) -> list[Callable[[], Policy]]:
    return [BreadthFirst, lambda: KeywordBestFirst(graph), lambda: ParentRelevance(graph),
            lambda: PackScorer(graph, classifier), lambda: Oracle(graph)]


def simulate(graph: Graph, policy: Policy, budget: int) -> list[bool]:
    """The labels of the first ``budget`` pages the policy fetches, in order."""
    heap: list[tuple[float, int, str, Any]] = []
    seen = set()
    serial = 0
    for seed in graph.seeds:
        seen.add(seed)
        heap.append((-1.0, serial, seed, None))
        serial += 1
    heapq.heapify(heap)
    out: list[bool] = []
    while heap and len(out) < budget:
        _, _, key, carried = heapq.heappop(heap)
        page = graph.pages.get(key)
        if page is None:
            continue
        out.append(bool(page["on"]))
        policy.fetched(key, carried)
        links = [(u, a) for u, a in page["links"] if Graph.key(u) not in seen]
        links = list({Graph.key(u): (u, a) for u, a in links}.values())
        scored = policy.scores(key, links, carried) if links else []
        if scored is None:
            continue
        for (url, _), (score, meta) in zip(links, scored, strict=True):
            seen.add(Graph.key(url))
            heapq.heappush(heap, (-score, serial, Graph.key(url), meta))
            serial += 1
    return out


def curve(labels: Sequence[bool], budget: int) -> list[float]:
    """The harvest rate after each share of the budget in ``CURVE_POINTS``."""
    return [sum(labels[:max(1, int(budget * p))]) / max(1, int(budget * p))
            for p in CURVE_POINTS]
