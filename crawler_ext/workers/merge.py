"""The stats of a crawl's workers merged into one: what a user reads of the whole crawl.

Counts add up; a maximum (``*_max``, ``memusage/max``) is the largest, a start the earliest,
a finish the latest, the elapsed time the longest; a finish reason is the workers' reasons,
one each when they differ (``"finished"`` when every worker finished).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

__all__ = ["merge_stats"]

_FIRST = ("start_time",)
_LAST = ("finish_time",)


def _is_max(key: str) -> bool:
    return key.endswith(("_max", "/max")) or key in ("elapsed_time_seconds",)


def _number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def merge_stats(workers: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """One stats dict for the crawl, and ``workers/count``: how many were merged."""
    merged: dict[str, Any] = {}
    reasons: list[str] = []
    count = 0
    for stats in workers:
        count += 1
        for key, value in stats.items():
            if key == "finish_reason":
                reasons.append(str(value))
            elif not _number(value):
                if key in _LAST:
                    merged[key] = max(merged.get(key, value), value)
                elif key in _FIRST:
                    merged[key] = min(merged.get(key, value), value)
                else:
                    merged.setdefault(key, value)
            elif not _number(merged.get(key, 0)):  # a worker said None (not measured)
                merged[key] = value
            elif key in merged and _is_max(key):
                merged[key] = max(merged[key], value)
            else:
                merged[key] = merged.get(key, 0) + value
    if reasons:
        merged["finish_reason"] = reasons[0] if len(set(reasons)) == 1 else \
            ",".join(sorted(reasons))
    merged["workers/count"] = count
    return merged
