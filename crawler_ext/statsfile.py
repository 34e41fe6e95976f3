"""The stats file extension at its public path, ``crawler_ext.statsfile.StatsFile`` (its
home: :mod:`crawler_ext.stats.file`)."""

from __future__ import annotations

from crawler_ext.stats.file import StatsFile

__all__ = ["StatsFile"]
