"""The pack's stats: every stat it writes in one registry (``registry``: name, kind, one line
of documentation; the docs' table is generated from it), the counts kept on hot paths and
flushed into Scrapy's stats (``Counts``), and the stats file extension (``file``)."""

from __future__ import annotations

from crawler_ext.stats.registry import STATS, Counts, Stat, documented, stats_rows

__all__ = ["STATS", "Counts", "Stat", "StatsFile", "documented", "stats_rows"]


def __getattr__(name: str) -> object:
    # the stats file extension speaks Scrapy: imported when asked for, so that the registry
    # and Counts (used by compiled, Scrapy-free modules) load no Scrapy
    if name == "StatsFile":
        from crawler_ext.stats.file import StatsFile

        return StatsFile
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
