"""The two-level (Mercator) frontier: priority front queues, per-host back queues, politeness.

The modules of this package are pure (neither Scrapy nor Twisted; time is passed in); the
Scrapy adapter that drives them is ``crawler_ext.frontier.adapter``.
"""

from __future__ import annotations

from typing import Any

from crawler_ext.frontier.contract import FrontierStore
from crawler_ext.frontier.core import Frontier, WeightedBands
from crawler_ext.frontier.keys import politeness_key
from crawler_ext.frontier.politeness import Outcome, PolitenessPolicy, parse_retry_after
from crawler_ext.frontier.sqlite import SqliteStore
from crawler_ext.frontier.storage import Entry, HostState, MemoryStore

__all__ = [
    "Entry", "Frontier", "FrontierScheduler", "FrontierStore", "HostState", "MemoryStore",
    "Outcome", "PolitenessPolicy", "SqliteStore", "WeightedBands", "parse_retry_after",
    "politeness_key",
]


def __getattr__(name: str) -> Any:
    # the scheduler (``SCHEDULER = "crawler_ext.frontier.FrontierScheduler"``) is the Scrapy
    # adapter's: imported on first use, so that the pure frontier imports no Scrapy
    if name == "FrontierScheduler":
        from crawler_ext.frontier.adapter.scheduler import FrontierScheduler

        return FrontierScheduler
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
