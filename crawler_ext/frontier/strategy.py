"""The crawling strategy: what to crawl next, apart from where a URL waits (the queues).

Frontera's split (``CrawlingStrategy``: a page crawled, the links found on it, a score per
link) in the frontier's terms: the strategy gives every URL entering the frontier its band,
hears of every link found again and of every page crawled, and may move queued URLs to a
better band then (a promotion).  Per-host politeness, robots.txt, traps, the seen set and the
archive are the frontier's and the adapter's, whatever the strategy, so a strategy changes the
order of a crawl, never its manners.  ``CRAWLER_EXT_STRATEGY`` chooses it: a short name
(``default``) or the dotted path of a user's class.

:class:`DefaultStrategy` is the pack's order: a score from the host's rank, the URL's online
page importance (OPIC, :mod:`crawler_ext.frontier.importance`) and its depth
(:mod:`crawler_ext.frontier.scoring`), a band lower for a URL pattern that keeps duplicating
(the learned rules), and the refresh lane's share of a key's turns.
"""

from __future__ import annotations

from typing import Protocol

from crawler_ext.frontier.importance import MEAN_IMPORTANCE, Opic
from crawler_ext.frontier.keys import canonical_key
from crawler_ext.frontier.scoring import Scorer

__all__ = ["STRATEGIES", "CrawlingStrategy", "DefaultStrategy"]

#: the strategies known by a short name in ``CRAWLER_EXT_STRATEGY``
STRATEGIES = {"default": "crawler_ext.frontier.strategy.DefaultStrategy",
              "focus": "crawler_ext.focus.strategy.FocusStrategy"}


class CrawlingStrategy(Protocol):
    """What the frontier asks of a crawling strategy.  Band 0 is the best; a band is in
    ``range(bands)``.  Fingerprints are the seen set's 64-bit URL fingerprints."""

    #: the number of front-queue bands the strategy scores into
    bands: int
    #: the refresh lane's share of a key's turns when both lanes wait (0..1)
    refresh_share: float

    def link(self, fp: int, key: str, depth: int, priority: int, page: int | None,
             demoted: bool) -> int:
        """A URL admitted into the frontier (``page``: the fingerprint of the page it was
        found on, None for a start URL or a link without a Referer; ``demoted``: its URL
        pattern keeps duplicating content): its band."""

    def rediscovered(self, page: int, fp: int, url: str, depth: int, priority: int) -> None:
        """A link from ``page`` to a URL admitted before (queued, or fetched already;
        ``url``: its canonical form)."""

    def page_crawled(self, fp: int) -> list[tuple[int, int]]:
        """A page was fetched and its links admitted: the queued URLs to move, as
        (fingerprint, better band) pairs."""

    def band(self, key: str, depth: int, priority: int) -> int:
        """The band of a URL the strategy knows nothing of (a refresh, another scheme)."""

    def weight(self, fp: int) -> float | None:
        """How much a fetched page weighs in its host's revisit allocation (None: as any)."""


class DefaultStrategy:
    """Host rank, OPIC importance and depth, in ``scorer.bands`` bands (see the module)."""

    def __init__(self, scorer: Scorer, importance: Opic | None = None,
                 refresh_share: float = 0.5) -> None:
        self.scorer = scorer
        self.bands = scorer.bands
        self.importance = importance if importance is not None else Opic()
        self.refresh_share = refresh_share

    def link(self, fp: int, key: str, depth: int, priority: int, page: int | None,
             demoted: bool) -> int:
        opic = self.importance
        if page is None and not depth:  # a start URL
            opic.seed(fp)
        else:
            opic.queued(fp)
            if page is not None:
                opic.link(page, fp, key, depth, priority)
        scorer = self.scorer
        band = scorer.band(scorer.score(key, depth, opic.importance(fp)), priority)
        if demoted:  # this pattern keeps duplicating: a band lower
            band = min(band + 1, self.bands - 1)
        return band

    def rediscovered(self, page: int, fp: int, url: str, depth: int, priority: int) -> None:
        opic = self.importance
        if fp in opic:  # still queued: credited when the page completes
            opic.link(page, fp, canonical_key(url), depth, priority)
        else:  # (fetched already: it takes its share of the page's cash all the same)
            opic.link(page, fp)

    def page_crawled(self, fp: int) -> list[tuple[int, int]]:
        opic = self.importance
        scorer = self.scorer
        return [(target, scorer.band(scorer.score(key, depth, opic.importance(target)),
                                     priority))
                for target, key, depth, priority in opic.fetched(fp)]

    def band(self, key: str, depth: int, priority: int) -> int:
        return self.scorer.band(self.scorer.score(key, depth, MEAN_IMPORTANCE), priority)

    def weight(self, fp: int) -> float | None:
        return self.importance.weight(fp)
