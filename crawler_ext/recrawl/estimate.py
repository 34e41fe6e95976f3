"""Estimating a page's change rate from incomplete observation.

A crawler sees a page only when it fetches it: it learns *whether* the page changed since the
last fetch, not how many times.  Counting changes per elapsed time therefore underestimates a
page that changes faster than it is visited.  Cho & Garcia-Molina ("Estimating frequency of
change", ACM TOIT 2003) give estimators that correct for it, for a Poisson process of changes:

* regular checks (``n`` checks ``interval`` apart, ``changed`` of them saw a change)::

      rate = -ln((n - changed + 0.5) / (n + 0.5)) / interval

  (the 0.5 terms keep it finite when every check saw a change, and reduce its bias);
* irregular checks: the maximum-likelihood rate solves
  ``sum over changed checks t / (exp(rate * t) - 1) = sum over unchanged checks t``
  (``t``: the interval before that check).

A page with no history gets a prior rate, worth a few pseudo-checks, so one early check does not
decide its rate.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

__all__ = ["ChangeHistory", "change_rate", "change_rate_irregular"]



def change_rate(checks: int, changed: int, interval: float) -> float:
    """Changes per second from ``checks`` regular checks ``interval`` seconds apart."""
    if checks <= 0 or interval <= 0:
        raise ValueError("need at least one check and a positive interval")
    if not 0 <= changed <= checks:
        raise ValueError(f"changed={changed} outside 0..{checks}")
    return -math.log((checks - changed + 0.5) / (checks + 0.5)) / interval


def change_rate_irregular(changed: Sequence[float], unchanged_time: float,
                          prior_rate: float | None = None, prior_weight: float = 0.0,
                          prior_interval: float | None = None) -> float:
    """Maximum-likelihood changes per second from checks at irregular intervals: ``changed``
    holds the intervals (seconds) before the checks that found a change, ``unchanged_time`` is
    the sum of the intervals before those that did not.  A prior counts as ``prior_weight``
    checks ``prior_interval`` apart (default ``1/prior_rate``) whose outcome is what
    ``prior_rate`` predicts, so alone it gives ``prior_rate``; it decides a young history and
    fades as real checks accumulate."""
    changed = [t for t in changed if t > 0]
    pseudo = prior_weight if prior_rate and prior_rate > 0 else 0.0
    tau = (prior_interval or 1.0 / prior_rate) if pseudo else 0.0  # type: ignore[operator]
    p_change = -math.expm1(-prior_rate * tau) if pseudo else 0.0  # type: ignore[operator]
    pseudo_changed = pseudo * p_change
    quiet = unchanged_time + pseudo * (1.0 - p_change) * tau
    if not changed and not pseudo_changed:
        return 0.0
    if quiet <= 0:  # every check saw a change: the likelihood grows without bound
        return change_rate(len(changed), len(changed), sum(changed) / len(changed))

    def excess(rate: float) -> float:
        """sum of t / (e^(rate t) - 1) over the changed checks, minus the quiet time; it
        decreases with the rate, and the estimate is where it crosses zero."""
        total = 0.0
        for t in changed:
            x = rate * t
            if x < 700:
                total += t / math.expm1(x)
        if pseudo_changed and rate * tau < 700:
            total += pseudo_changed * tau / math.expm1(rate * tau)
        return total - quiet

    low, high = 1e-15, 1.0
    while excess(high) > 0:
        high *= 16.0
    while excess(low) <= 0 and low > 1e-300:
        low /= 16.0
    for _ in range(200):  # bisection on the log scale: rates span many orders of magnitude
        mid = math.sqrt(low * high)
        if excess(mid) > 0:
            low = mid
        else:
            high = mid
        if high / low < 1.0 + 1e-9:
            break
    return math.sqrt(low * high)


@dataclass(slots=True)
class ChangeHistory:
    """What the crawler keeps per URL (bounded): the last fetch, its validators and content
    fingerprints, counters of checks and changes, and the last ``MAX_CHECKS`` checks (interval,
    changed or not) that the estimate is taken from.

    ``observe`` takes one fetch; ``rate`` estimates changes per second.  ``Last-Modified`` is
    used as change evidence when ``trust_last_modified`` (a server whose dates move with its
    content): a date after the previous fetch means a change even if the fingerprint (say, of
    the main text) did not move."""

    last_fetch: float | None = None
    etag: str | None = None
    last_modified: float | None = None
    exact: int | None = None  # the dedup middleware's exact content hash
    simhash: int | None = None
    checks: int = 0
    changes: int = 0
    recent: list[tuple[float, bool]] = field(default_factory=list)  # (interval, changed)
    #: the page's importance when it was found (OPIC cash as a multiple of the mean of the
    #: queued URLs, 0.25 to 4; 1 when not known): its weight in its host's revisit allocation
    weight: float = 1.0
    MAX_CHECKS = 32  # the estimate follows the recent checks: bounded, and it adapts

    def observe(self, when: float, exact: int | None, simhash: int | None = None,
                etag: str | None = None, last_modified: float | None = None,
                not_modified: bool = False, trust_last_modified: bool = False) -> bool:
        """Record a fetch at ``when``; whether the page changed since the previous one."""
        changed = False
        if self.last_fetch is not None:
            interval = max(when - self.last_fetch, 1e-3)
            if not_modified:
                changed = False
            elif trust_last_modified and last_modified is not None and \
                    self.last_modified is not None:
                changed = last_modified > self.last_modified
            else:
                changed = exact is not None and exact != self.exact
            self.checks += 1
            self.changes += changed
            self.recent.append((interval, changed))
            if len(self.recent) > self.MAX_CHECKS:
                del self.recent[0]
        self.last_fetch = when
        if not not_modified:
            self.exact, self.simhash = exact, simhash
            self.etag = etag
            self.last_modified = last_modified if last_modified is not None else \
                self.last_modified
        return changed

    def rate(self, prior_rate: float = 1.0 / 86_400, prior_weight: float = 1.0) -> float:
        """Changes per second: the irregular-interval estimate over the recent changed
        intervals and the time spent unchanged, with the prior (default: once a day, worth
        one check) for young histories."""
        intervals = [t for t, _ in self.recent]
        return change_rate_irregular([t for t, changed in self.recent if changed],
                                     sum(t for t, changed in self.recent if not changed),
                                     prior_rate, prior_weight,
                                     sum(intervals) / len(intervals) if intervals else None)
