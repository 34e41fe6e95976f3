"""How often to revisit each page of a host, within the host's fetch budget.

A page whose changes are a Poisson process of rate ``λ``, revisited every ``1/f`` seconds, is
fresh (the copy equals the live page) a fraction ``F(λ, f) = (f/λ)(1 - exp(-λ/f))`` of the
time.  Cho & Garcia-Molina ("Synchronizing a database to improve freshness", SIGMOD 2000)
maximise the importance-weighted freshness ``Σ wᵢ F(λᵢ, fᵢ)`` under the budget ``Σ fᵢ = B``
(here: the fetches per second the host's politeness allows for refreshes).  At the optimum
every page with ``fᵢ > 0`` has the same marginal gain ``wᵢ ∂F/∂f = μ``; with ``r = λ/f``,
``∂F/∂f = g(r)/λ`` where ``g(r) = 1 - (1 + r) e^(-r)`` rises from 0 to 1.  So a page gets
``fᵢ = λᵢ / g⁻¹(μ λᵢ / wᵢ)`` when ``wᵢ/λᵢ > μ`` and nothing otherwise: pages that change much
faster than they can be revisited are given up, pages that never change need no visits, and
the budget goes to the middle -- *not* in proportion to the change rate, which does worse
than revisiting uniformly.  ``μ`` is found by bisection so that the budget is spent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

__all__ = ["expected_freshness", "optimal_frequencies", "freshness"]


def freshness(rate: float, frequency: float) -> float:
    """Time-averaged freshness of a page changing at ``rate`` revisited at ``frequency``."""
    if rate <= 0:
        return 1.0
    if frequency <= 0:
        return 0.0
    r = rate / frequency
    return -math.expm1(-r) / r


def _g(r: float) -> float:
    return 1.0 - (1.0 + r) * math.exp(-r) if r < 700 else 1.0


def _g_inverse(y: float) -> float:
    """The r with g(r) = y, for 0 < y < 1 (g increases from 0 to 1)."""
    low, high = 0.0, 1.0
    while _g(high) < y:
        high *= 2.0
        if high > 1e6:
            return high
    for _ in range(100):
        mid = (low + high) / 2
        if _g(mid) < y:
            low = mid
        else:
            high = mid
    return (low + high) / 2


def _frequencies(rates: Sequence[float], weights: Sequence[float], mu: float) -> list[float]:
    out = []
    for rate, weight in zip(rates, weights):
        if rate <= 0 or weight <= 0 or weight / rate <= mu:
            out.append(0.0)
        else:
            out.append(rate / _g_inverse(mu * rate / weight))
    return out


def optimal_frequencies(rates: Sequence[float], budget: float,
                        weights: Sequence[float] | None = None) -> list[float]:
    """Revisits per second for each page (``rates``: changes per second) that maximise the
    weighted expected freshness with ``sum(result) == budget`` (to 1e-6)."""
    weights = list(weights) if weights is not None else [1.0] * len(rates)
    if budget <= 0 or not any(r > 0 and w > 0 for r, w in zip(rates, weights)):
        return [0.0] * len(rates)
    # mu ranges over the marginal gains: sum(f) falls from infinity (mu -> 0) to 0
    high = max(w / r for r, w in zip(rates, weights) if r > 0 and w > 0)
    low = high
    while sum(_frequencies(rates, weights, low)) < budget:
        low /= 4.0
        if low < 1e-300:
            break
    for _ in range(200):
        mid = math.sqrt(low * high)
        if sum(_frequencies(rates, weights, mid)) > budget:
            low = mid
        else:
            high = mid
        if high / low < 1.0 + 1e-12:
            break
    return _frequencies(rates, weights, math.sqrt(low * high))


def expected_freshness(rates: Sequence[float], frequencies: Sequence[float],
                       weights: Sequence[float] | None = None) -> float:
    """The weighted mean of each page's time-averaged freshness."""
    weights = list(weights) if weights is not None else [1.0] * len(rates)
    total = sum(weights)
    return sum(w * freshness(r, f) for r, f, w in zip(rates, frequencies, weights)) / total
