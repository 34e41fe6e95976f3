"""Change-rate estimation and revisit allocation (pure logic), against simulated Poisson pages
with known rates."""

from __future__ import annotations

import math
import random

import pytest

from crawler_ext.recrawl import (
    ChangeHistory, change_rate, change_rate_irregular, expected_freshness, optimal_frequencies,
)
from crawler_ext.recrawl.allocate import freshness


def poisson_checks(rng: random.Random, rate: float, intervals: list[float]) -> list[bool]:
    """Whether each check saw at least one change (a Poisson process of ``rate``)."""
    return [rng.random() < -math.expm1(-rate * t) for t in intervals]


@pytest.mark.parametrize("rate_per_interval", [0.1, 0.5, 1.0, 2.0])
def test_regular_estimator_recovers_the_rate_where_counting_does_not(
        rate_per_interval: float) -> None:
    rng = random.Random(1)
    interval = 3600.0
    rate = rate_per_interval / interval
    estimates, naive = [], []
    for _ in range(200):  # 200 pages, 50 checks each
        seen = poisson_checks(rng, rate, [interval] * 50)
        estimates.append(change_rate(50, sum(seen), interval))
        naive.append(sum(seen) / (50 * interval))
    mean = sum(estimates) / len(estimates)
    assert mean == pytest.approx(rate, rel=0.12)
    if rate_per_interval >= 1.0:  # counting changes misses those between checks
        assert sum(naive) / len(naive) < 0.7 * rate


def test_irregular_estimator_recovers_the_rate() -> None:
    rng = random.Random(2)
    rate = 1 / 7200.0
    errors = []
    for _ in range(100):
        intervals = [rng.uniform(600, 20_000) for _ in range(60)]
        seen = poisson_checks(rng, rate, intervals)
        changed = [t for t, s in zip(intervals, seen) if s]
        quiet = sum(t for t, s in zip(intervals, seen) if not s)
        errors.append(change_rate_irregular(changed, quiet) / rate)
    assert sum(errors) / len(errors) == pytest.approx(1.0, rel=0.1)


def test_irregular_form_agrees_with_the_regular_one() -> None:
    interval, n, x = 100.0, 40, 15
    mle = change_rate_irregular([interval] * x, interval * (n - x))
    assert mle == pytest.approx(-math.log((n - x) / n) / interval, rel=1e-6)
    assert change_rate(n, x, interval) == pytest.approx(mle, rel=0.05)


def test_the_prior_decides_a_young_history_and_fades() -> None:
    prior = 1 / 86_400
    assert change_rate_irregular([], 0.0, prior, 1.0) == pytest.approx(prior, rel=1e-6)
    rng = random.Random(3)
    rate, estimates = 1 / 600.0, []
    for _ in range(50):  # 50 pages, checked every 300 s
        h, now, content = ChangeHistory(), 0.0, 0
        for _ in range(100):
            now += 300.0
            if rng.random() < -math.expm1(-rate * 300.0):
                content += 1
            h.observe(now, exact=content)
        estimates.append(h.rate(prior))  # a prior 144 times too slow
    assert h.checks == 99
    assert sum(estimates) / len(estimates) == pytest.approx(rate, rel=0.15)  # the data won


def test_history_uses_validators_and_trusted_dates() -> None:
    h = ChangeHistory()
    assert not h.observe(0.0, exact=1, etag='"a"', last_modified=100.0)
    assert not h.observe(60.0, exact=None, not_modified=True)  # a 304: unchanged
    assert h.exact == 1 and h.etag == '"a"'
    assert h.observe(120.0, exact=2, last_modified=110.0)  # new content
    # a page whose text is stable but whose trusted date moved counts as changed
    assert h.observe(180.0, exact=2, last_modified=170.0, trust_last_modified=True)
    assert (h.checks, h.changes) == (3, 2)
    for i in range(40):  # the kept checks are bounded
        h.observe(240.0 + 60 * i, exact=100 + i)
    assert len(h.recent) == ChangeHistory.MAX_CHECKS and h.checks == 43


def test_freshness_formula_limits() -> None:
    assert freshness(0.0, 1.0) == 1.0 and freshness(1.0, 0.0) == 0.0
    assert freshness(1.0, 1e6) == pytest.approx(1.0, abs=1e-5)
    assert freshness(1.0, 1.0) == pytest.approx(1 - math.exp(-1))


def test_optimal_allocation_beats_uniform_and_proportional() -> None:
    rng = random.Random(4)
    rates = [10 ** rng.uniform(-5, -1) for _ in range(300)]  # from days to seconds
    budget = 0.05  # fetches per second
    optimal = optimal_frequencies(rates, budget)
    uniform = [budget / len(rates)] * len(rates)
    proportional = [budget * r / sum(rates) for r in rates]
    assert sum(optimal) == pytest.approx(budget, rel=1e-6)
    f_opt, f_uni, f_pro = (expected_freshness(rates, f) for f in (optimal, uniform, proportional))
    assert f_opt > f_uni > f_pro
    # pages changing far faster than the budget allows are given up, not chased
    fastest = max(range(len(rates)), key=rates.__getitem__)
    assert optimal[fastest] == 0.0
    # and a random perturbation that keeps the budget never does better (a maximum)
    for _ in range(20):
        i, j = rng.sample(range(len(rates)), 2)
        moved = min(optimal[i], budget / 1000)
        other = list(optimal)
        other[i] -= moved
        other[j] += moved
        assert expected_freshness(rates, other) <= f_opt + 1e-12


def test_importance_weights_shift_visits() -> None:
    rates = [1e-3, 1e-3]
    plain = optimal_frequencies(rates, 1e-3)
    weighted = optimal_frequencies(rates, 1e-3, weights=[4.0, 1.0])
    assert plain[0] == pytest.approx(plain[1])
    assert weighted[0] > weighted[1]
