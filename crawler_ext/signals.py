"""Signals crawler_ext components send each other (connect with ``crawler.signals.connect``)."""

from __future__ import annotations

__all__ = ["content_duplicate"]

#: A fetched page duplicates an earlier one.  Arguments: ``url``, ``original`` (URL),
#: ``kind`` ("exact" or "near"), ``distance`` (SimHash bits).  The frontier scheduler learns
#: per-host canonicalisation rules and lowers the priority of duplicate-prone URL patterns.
content_duplicate = object()
