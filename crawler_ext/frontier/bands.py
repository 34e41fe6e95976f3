"""How the Mercator router picks: the front-queue band an entry is routed from (a weighted
round-robin for a general crawl, best first for a focused one) and, in a key's back queue,
the lane (discovery or refresh) that goes next.  Pure: no store, no clock."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

__all__ = ["BestFirst", "RefreshShare", "WeightedBands"]


class WeightedBands:
    """Smooth weighted round-robin over bands: with weights 5,2,1 band 0 is chosen five times
    for every one of band 2, and every non-empty band is chosen within one cycle (no starvation)."""

    def __init__(self, weights: Sequence[float]) -> None:
        self.weights = list(weights)
        self._credit = [0.0] * len(self.weights)

    def pick(self, sizes: Sequence[int]) -> int:
        """The band to dequeue from (-1: all empty); updates the round-robin state.  (One pass,
        no list: the router asks once per entry it routes.)"""
        credit, weights = self._credit, self.weights
        best, top, total = -1, 0.0, 0.0
        for b, size in enumerate(sizes):
            if size > 0:
                c = credit[b] = credit[b] + weights[b]
                total += weights[b]
                if best < 0 or c > top:  # the first of equal credits, as max() picks
                    best, top = b, c
        if best >= 0:
            credit[best] -= total
        return best


class BestFirst:
    """The router of a focused crawl: the best non-empty band, always, but for an explicit
    share of picks (``exploration``) that go by the weighted round-robin, spread evenly; and
    at most ``max_active`` keys active, so that an entry is committed to its key's back queue
    just before a fetch slot can take it (entries wait in the front queues, in band order,
    where a better one found later goes first)."""

    def __init__(self, weights: Sequence[float], exploration: float, max_active: int) -> None:
        self.weighted = WeightedBands(weights)
        self.exploration = exploration
        self.max_active = max_active
        self._credit = 0.0
        self._dispatch_credit = 0.0
        self.explored = 0  # picks that went by the round-robin
        self._reported = 0
        #: bands an entry may be worse than the best one held and still go first
        self.slack = 1

    def floor(self, held: Iterable[int]) -> int | None:
        """The worst band a dispatch may take, given the bands of the entries the active keys
        hold: the best of them plus the slack (None: they hold none)."""
        best = min(held, default=None)
        return None if best is None else best + self.slack

    def take_explored(self) -> int:
        """Picks that went by the round-robin since the last call (for the stats)."""
        count, self._reported = self.explored - self._reported, self.explored
        return count

    def explores(self) -> bool:
        """Whether this dispatch may take a worse entry than the best held (the exploration
        share of dispatches, spread evenly)."""
        self._dispatch_credit += self.exploration
        if self._dispatch_credit >= 1.0:
            self._dispatch_credit -= 1.0
            return True
        return False

    def pick(self, sizes: Sequence[int]) -> int:
        self._credit += self.exploration
        if self._credit >= 1.0:
            self._credit -= 1.0
            band = self.weighted.pick(sizes)
            if band >= 0 and any(sizes[:band]):
                self.explored += 1
            return band
        for band, size in enumerate(sizes):
            if size > 0:
                return band
        return -1


class RefreshShare:
    """Which lane of a key's back queue goes next: when both discovery and refresh entries
    wait, refreshes get ``share`` of the turns, spread evenly (each key's credit grows by the
    share at every turn both lanes wait, and a refresh spends one unit); when one lane waits
    alone it takes the turn and the credit stands, so either side uses the other's unused
    share.  Credits are kept for keys with a back queue only."""

    def __init__(self, share: float) -> None:
        self.share = min(max(share, 0.0), 1.0)
        self._credit: dict[str, float] = {}

    def refresh_next(self, key: str, discovery: int, refresh: int) -> bool:
        if not (discovery and refresh):
            return refresh > 0
        credit = self._credit.get(key, 0.0) + self.share
        go = credit >= 1.0 - 1e-9
        self._credit[key] = credit - 1.0 if go else credit
        return go

    def forget(self, key: str) -> None:
        self._credit.pop(key, None)


# The frontier tracks the latest entries still queued, for promotion: fp -> the entry's
# fields packed in bytes (bounded: the oldest are not tracked any more).  Bytes, not the
# Entry nor a tuple: the garbage collector leaves a map of plain values out of its walks
# (100,000 entries kept alive for this alone made every full collection, one every few ten
# thousand dispatches, visit them).
