"""Continuous crawling: how often each page changes (``estimate``) and how often to revisit it
within a host's fetch budget (``allocate``), after Cho & Garcia-Molina."""

from crawler_ext.recrawl.allocate import expected_freshness, optimal_frequencies
from crawler_ext.recrawl.estimate import ChangeHistory, change_rate, change_rate_irregular

__all__ = ["ChangeHistory", "change_rate", "change_rate_irregular", "expected_freshness",
           "optimal_frequencies"]
