"""Online page importance: OPIC (Abiteboul, Preda & Cobena, *Adaptive on-line page importance
computation*, WWW 2003).

Every start URL holds one unit of cash.  When a page has been fetched and its links admitted,
its cash is split over the links it had and added to theirs; the page's own cash goes back to
zero.  A queued URL's cash is then its estimate of importance: the more (and the more
important) pages link to it, the more it holds.  Links to another host weigh ``external`` times
a link within the page's own host when the cash is split: a site's own navigation says less
about a page than other sites do (Nutch's OPIC scoring has the same knob,
``db.score.link.internal`` and ``db.score.link.external``, and its ``db.ignore.internal.links``
drops a host's own links altogether; HITS drops them too).

Cash is kept for the URLs still queued (at most ``max_tracked``, the oldest forgotten first)
and the links of pages in process (at most ``max_links`` a page, of ``max_pages`` pages).
``importance`` maps a URL's cash to 0..1 on a log scale around the mean cash of the queued
URLs: 0.5 is the mean, 1 is 4 times it or more, 0 a URL no fetched page has credited yet.
Nothing is stored: a restart, or a URL forgotten, starts again from zero (its order only,
never whether it is fetched).
"""

from __future__ import annotations

import math
from collections import OrderedDict

from crawler_ext.admission.urls import REST_BITS
from crawler_ext.recent import RecentMap
from crawler_ext.meta import IMPORTANCE_META  # (its home; re-exported here)

__all__ = ["IMPORTANCE_META", "MEAN_IMPORTANCE", "Opic"]

#: cash at which ``importance`` reaches 1, as a multiple of the queued URLs' mean
SPAN = 4.0
_LOG_SPAN = math.log(SPAN)
#: the importance of a URL at the mean cash (a refresh, a URL of another scheme)
MEAN_IMPORTANCE = 0.5
WEIGHT_RANGE = (0.25, 4.0)


class Opic:
    def __init__(self, external: float = 3.0, max_tracked: int = 100_000,
                 max_links: int = 500, max_pages: int = 1_000) -> None:
        if external <= 0:
            raise ValueError("the weight of external links must be > 0")
        self.external = external
        self.max_tracked = max_tracked
        self.max_links = max_links
        self.max_pages = max_pages
        # queued URL -> cash: the latest max_tracked at most (at least half of them)
        self._cash = RecentMap(max_tracked, self._forget)
        self._total = 0.0  # sum of self._cash's values
        # page in process -> its links: fingerprint -> (key, depth, priority), or None for a
        # URL not queued (it takes its share of the cash, which then goes nowhere)
        self._links: OrderedDict[int, dict[int, tuple[str, int, int] | None]] = OrderedDict()

    def __len__(self) -> int:
        return len(self._cash)

    def __contains__(self, fp: int) -> bool:
        """Whether ``fp`` is a queued URL tracked here (only those can be credited)."""
        return fp in self._cash

    # -- what the intake tells ---------------------------------------------------------------
    def seed(self, fp: int) -> None:
        """A start URL (no page links to it): one unit of cash."""
        self._add(fp, 1.0)

    def queued(self, fp: int) -> None:
        """A URL admitted from a link: tracked from now on, with no cash yet."""
        self._add(fp, 0.0)

    def link(self, page: int, target: int, host: str = "", depth: int = 0,
             priority: int = 0) -> None:
        """``page`` (being processed) links to ``target`` (a queued URL's host, depth and
        request priority, to score it again): credited when the page completes.  Each
        distinct link counts once."""
        links = self._links.get(page)
        if links is None:
            links = self._links[page] = {}
            while len(self._links) > self.max_pages:
                self._links.popitem(last=False)
        if target not in links and target != page and len(links) < self.max_links:
            links[target] = (host, depth, priority) if target in self._cash else None

    def fetched(self, page: int) -> list[tuple[int, str, int, int]]:
        """``page`` was fetched and its links admitted: its cash is split over its links
        (and is zero again); the queued targets whose cash grew, to be scored again, as
        (fingerprint, key, depth, priority)."""
        cash = self._cash.pop(page, 0.0)
        self._total -= cash
        if not self._cash:
            self._total = 0.0  # (no drift from float rounding once the queue empties)
        links = self._links.pop(page, None)
        if not links or cash <= 0.0:
            return []
        site = page >> REST_BITS  # a fingerprint's high bits hash its scheme, host and port
        weights = [1.0 if fp >> REST_BITS == site else self.external for fp in links]
        unit = cash / sum(weights)
        grown = []
        tracked = self._cash
        for (fp, record), weight in zip(links.items(), weights):
            if record is not None and fp in tracked:
                tracked[fp] += unit * weight
                self._total += unit * weight
                grown.append((fp, *record))
        return grown

    # -- what the scorer and the recrawl policy ask ----------------------------------------
    def ratio(self, fp: int) -> float | None:
        """``fp``'s cash as a multiple of the queued URLs' mean; None when no page credited it
        (nothing known)."""
        if self._total <= 0.0:  # (no look-up before any page credited anything)
            return None
        cash = self._cash.get(fp, 0.0)
        if cash <= 0.0:
            return None
        return cash * len(self._cash) / self._total

    def importance(self, fp: int) -> float:
        """0..1: the ratio on a log scale, 0.5 at the mean, 1 at ``SPAN`` times it."""
        ratio = self.ratio(fp)
        if ratio is None:
            return 0.0
        return min(1.0, max(0.0, 0.5 + 0.5 * math.log(ratio) / _LOG_SPAN))

    def weight(self, fp: int) -> float | None:
        """The ratio within ``WEIGHT_RANGE`` (the page's weight in its host's revisits)."""
        ratio = self.ratio(fp)
        if ratio is None:
            return None
        low, high = WEIGHT_RANGE
        return min(high, max(low, ratio))

    def _add(self, fp: int, cash: float) -> None:
        old = self._cash.get(fp)
        if old is not None:
            if cash > old:
                self._cash[fp] = cash
                self._total += cash - old
            return
        self._cash[fp] = cash
        self._total += cash

    def _forget(self, cash: dict[int, float]) -> None:
        self._total -= sum(cash.values())
