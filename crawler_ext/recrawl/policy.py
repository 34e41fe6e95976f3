"""When to fetch each page again (``CRAWLER_EXT_RECRAWL_ENABLED``).

Per page, a bounded :class:`~crawler_ext.recrawl.estimate.ChangeHistory` (fetch times,
validators, content fingerprints, changed or not).  Per host, the refresh budget -- the share
``CRAWLER_EXT_RECRAWL_SHARE`` of the fetches per second its politeness delay allows while
newly found URLs of the host wait (the frontier gives refreshes that share of the host's turns
then), all of them when none wait -- is split
over its pages by Cho & Garcia-Molina's optimal allocation of their estimated change rates,
weighted by each page's importance when it was found (its OPIC cash, which the frontier puts
in the request's meta, as a multiple of the mean, 0.25 to 4)
(:func:`~crawler_ext.recrawl.allocate.optimal_frequencies`), recomputed at most every
``reallocate_every`` seconds per host; each page's interval is clamped to
``[CRAWLER_EXT_RECRAWL_MIN_INTERVAL, CRAWLER_EXT_RECRAWL_MAX_INTERVAL]`` (a page given no
visits by the allocation -- it changes far faster than it can be revisited, or never -- gets
the longest), and to ``explore`` (0.5) times the span its history covers, so a page that
looks static is checked at growing intervals (x1.5) before the estimate is trusted; and no
page is checked more than ``checks_per_change`` (10) times per expected change, so pages that
look static do not take a host's whole budget.  Histories are kept
for the ``max_pages`` most recently fetched pages.
"""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass

from crawler_ext.recrawl.allocate import expected_freshness, optimal_frequencies
from crawler_ext.recrawl.estimate import ChangeHistory

__all__ = ["RefreshPolicy", "Verdict"]


@dataclass(frozen=True, slots=True)
class Verdict:
    changed: bool
    interval: float  # seconds until the next fetch
    first: bool  # the page's first fetch


class RefreshPolicy:
    def __init__(self, min_interval: float, max_interval: float, share: float = 0.5,
                 max_pages: int = 1_000_000, reallocate_every: float = 10.0,
                 explore: float = 0.5, checks_per_change: float = 10.0) -> None:
        self.min_interval = min_interval
        self.max_interval = max(max_interval, min_interval)
        self.share = share
        self.max_pages = max_pages
        self.reallocate_every = reallocate_every
        self.explore = explore
        self.checks_per_change = checks_per_change
        self.pages: OrderedDict[str, tuple[str, ChangeHistory]] = OrderedDict()  # url -> host
        self._hosts: dict[str, dict[str, None]] = {}  # host -> its pages (insertion-ordered)
        # host -> (computed at, url -> revisits per second, expected freshness, budget share)
        self._alloc: dict[str, tuple[float, dict[str, float], float, float]] = {}

    def history(self, url: str) -> ChangeHistory | None:
        record = self.pages.get(url)
        return record[1] if record is not None else None

    def restore(self, url: str, host: str, history: ChangeHistory) -> None:
        """Put back a page's history (a resumed crawl)."""
        if url not in self.pages:
            self._hosts.setdefault(host, {})[url] = None
        self.pages[url] = (host, history)
        self.pages.move_to_end(url)
        if len(self.pages) > self.max_pages:
            old_url, (old_host, _) = self.pages.popitem(last=False)
            self._hosts.get(old_host, {}).pop(old_url, None)

    def observe(self, url: str, host: str, when: float, exact: int | None,
                etag: str | None = None, last_modified: float | None = None,
                not_modified: bool = False, delay: float = 1.0,
                weight: float | None = None, discovery: bool | None = True) -> Verdict:
        """Record a fetch of ``url``; whether it changed, and when to fetch it again.
        ``delay``: the host's politeness delay now (its fetch budget is 1/delay per second);
        ``weight``: the page's importance, if the frontier knew it (a discovered page's);
        ``discovery``: whether new URLs of the host wait (refreshes then get the share of the
        budget; False: all of it; None, not known: the share)."""
        record = self.pages.get(url)
        first = record is None
        if record is None:
            record = self.pages[url] = (host, ChangeHistory())
            self._hosts.setdefault(host, {})[url] = None
            if len(self.pages) > self.max_pages:
                old_url, (old_host, _) = self.pages.popitem(last=False)
                self._hosts.get(old_host, {}).pop(old_url, None)
        else:
            self.pages.move_to_end(url)
        if weight is not None:
            record[1].weight = weight
        changed = record[1].observe(when, exact, etag=etag, last_modified=last_modified,
                                    not_modified=not_modified)
        share = self.share if discovery is not False else 1.0
        return Verdict(changed, self._interval(host, url, when, delay, share), first)

    def _interval(self, host: str, url: str, now: float, delay: float, share: float) -> float:
        alloc = self._alloc.get(host)
        if alloc is None or now - alloc[0] >= self.reallocate_every or url not in alloc[1] \
                or alloc[3] != share:
            alloc = self._allocate(host, now, delay, share)
        frequency = alloc[1].get(url, 0.0)
        interval = 1.0 / frequency if frequency > 0 else self.max_interval
        # a young history proves little: wait at most ``explore`` times as long as the page
        # has been watched, so a page that looks static is checked at growing intervals until
        # the evidence (or the maximum) says so
        watched = sum(t for t, _ in self.pages[url][1].recent)
        interval = min(interval, max(self.explore * watched, self.min_interval))
        return min(max(interval, self.min_interval), self.max_interval)

    def _allocate(self, host: str, now: float, delay: float,
                  share: float) -> tuple[float, dict, float, float]:
        urls = list(self._hosts.get(host, {}))
        histories = [self.pages[u][1] for u in urls]
        rates = [h.rate() for h in histories]
        budget = share / max(delay, 1e-3)
        # the allocation spends the whole budget, weighted by the pages' importance; a page
        # is not checked more than ``checks_per_change`` times per expected change (pages
        # that look static would otherwise take a host's whole budget when nothing changes)
        weights = [h.weight for h in histories]
        frequencies = [min(f, self.checks_per_change * r)
                       for f, r in zip(optimal_frequencies(rates, budget, weights), rates)]
        alloc = (now, dict(zip(urls, frequencies)),
                 expected_freshness(rates, frequencies) if urls else 1.0, share)
        self._alloc[host] = alloc
        return alloc

    def estimated_freshness(self) -> float:
        """The expected freshness of the pages, by the latest allocation of each host."""
        total = sum(len(a[1]) for a in self._alloc.values())
        if not total:
            return 1.0
        return sum(a[2] * len(a[1]) for a in self._alloc.values()) / total
