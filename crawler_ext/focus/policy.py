"""The focused crawl's rules, apart from Scrapy: a fetched page's verdict (on topic or not,
by the threshold), which is an outcome for the link that led to it and a page of its
directory's harvest; and the links found on a page, scored -- or dropped, when the page
ends an off-topic branch deeper than the tunnel.

The focus middleware (``crawler_ext.focus.middleware``) is this policy's Scrapy adapter, and
the focus benchmark's simulator runs the same object on a web's graph, so that what a real
crawl loses against the simulated one it loses to concurrency and politeness, never to a
rule written twice.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from crawler_ext.focus.classifier import PageClassifier
from crawler_ext.focus.harvest import Harvest, directory_of
from crawler_ext.focus.links import FEATURES, LinkFeatures, LinkScorer

__all__ = ["FocusPolicy", "Found"]


@dataclass(frozen=True)
class Found:
    """A link found on a page: its URL, anchor text and the words around it."""

    url: str
    anchor: str = ""
    context: str = ""


class FocusPolicy:
    def __init__(self, classifier: PageClassifier, threshold: float = 0.5, tunnel: int = 4,
                 learn: bool = True, features: frozenset[str] = FEATURES) -> None:
        self.scorer = LinkScorer(classifier, learn, features)
        self.harvest = Harvest()
        self.threshold = threshold
        self.tunnel = tunnel

    def judged(self, url: str, relevance: float, link: LinkFeatures | None) -> bool:
        """The page at ``url`` was fetched and scored ``relevance``; ``link``: the features of
        the link that led to it (None for a start URL).  Whether it counts as on topic."""
        relevant = relevance >= self.threshold
        self.harvest.add(url, relevant)
        if link is not None:
            self.scorer.outcome(link, relevant)
        return relevant

    def distance(self, relevance: float, behind: int | None) -> int:
        """Off-topic pages in a row down to a page of ``relevance`` (0 when it is on topic;
        ``behind``: the distance of the page whose link led to it, None for a start URL)."""
        return 0 if relevance >= self.threshold else (behind or 0) + 1

    def scored(self, relevance: float, distance: int, found: Sequence[Found]
               ) -> list[tuple[LinkFeatures, float]] | None:
        """The links ``found`` on a page of ``relevance`` at ``distance``, each with its
        features (carried to its outcome) and its score, 0 to 1; None when the branch is
        deeper than the tunnel (its links are dropped)."""
        if distance > self.tunnel:
            return None
        features = []
        for link in found:
            directory = directory_of(link.url)  # (the host, and where on it)
            features.append(LinkFeatures(link.url, link.anchor, relevance, directory[0],
                                         self.harvest.at(directory), link.context,
                                         distance=distance))
        features = self.scorer.described(features)
        return list(zip(features, self.scorer.scores(features), strict=True))
