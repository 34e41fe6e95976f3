"""A focused crawl's dispatch waits for the scores of the pages it fetched
(``CRAWLER_EXT_FOCUS_MAX_UNSCORED``).

While more than ``limit`` fetched pages wait in Scrapy's scraper for their relevance and
their links' scores, the next link is not chosen: the scores about to arrive may name a
better one.  The end of each page's processing wakes the engine.  A hold never lasts more
than ``patience`` seconds in a row: a page whose processing hangs lets one dispatch go each
time (``focus/dispatch_hold_expired``), so it slows a crawl, never stops it.
"""

from __future__ import annotations

import logging

__all__ = ["DispatchHold"]

logger = logging.getLogger(__name__)


class DispatchHold:
    PATIENCE = 10.0  # seconds a hold may last in a row

    def __init__(self, limit: int, patience: float = PATIENCE) -> None:
        self.limit = limit
        self.patience = patience
        self._since: float | None = None  # when the current hold began
        self.expired = 0

    def verdict(self, waiting: int, now: float) -> str:
        """``"go"``, ``"hold"`` or ``"expired"`` (held too long: go, and start again) for a
        dispatch asked for at ``now`` with ``waiting`` pages unscored."""
        if waiting <= self.limit:
            self._since = None
            return "go"
        if self._since is None:
            self._since = now
        if now - self._since < self.patience:
            return "hold"
        if not self.expired:
            logger.warning("Focused crawl: fetched pages have waited %.0f s for their scores; "
                           "dispatching anyway (focus/dispatch_hold_expired counts these)",
                           now - self._since)
        self.expired += 1
        self._since = now
        return "expired"
