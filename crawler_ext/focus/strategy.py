"""The focus strategy: a link's score (0 to 100 in ``Request.priority``, given by the focus
middleware's link scorer) decides its front-queue band, so the frontier's politeness,
robots.txt, traps, dedup and archive stay exactly as in a general crawl.  In the default 16
bands links up to 1/16 apart tie and go first come, first served; with
``CRAWLER_EXT_FRONTIER_BANDS`` 101 (a local frontier) they leave in their scores' order
(docs/focus.md has both measured).

``CRAWLER_EXT_STRATEGY = "focus"`` (or ``CRAWLER_EXT_FOCUS_ENABLED``) chooses it.  It keeps
no state of its own: the learned model lives in each worker's focus middleware (in a Redis
crawl, one model per worker, each learning from the pages it fetches).
"""

from __future__ import annotations

__all__ = ["SCORE_SCALE", "FocusStrategy", "band_of"]

SCORE_SCALE = 100  # Request.priority of a link scored 1.0


def band_of(priority: int, bands: int) -> int:
    """Band 0 for a score of 1 (priority 100), the last band for 0 and below."""
    clamped = min(max(priority, 0), SCORE_SCALE)
    return min(bands - 1, (SCORE_SCALE - clamped) * bands // (SCORE_SCALE + 1))


class FocusStrategy:
    #: the frontier routes best-first: a key's back queue is filled one entry at a time
    best_first = True

    def __init__(self, bands: int, refresh_share: float = 0.5) -> None:
        self.bands = bands
        self.refresh_share = refresh_share

    def link(self, fp: int, key: str, depth: int, priority: int, page: int | None,
             demoted: bool) -> int:
        band = band_of(priority if page is not None or depth else SCORE_SCALE, self.bands)
        # a URL pattern that keeps duplicating: 1/16 of the scores lower, as one band of 16
        return min(band + max(1, self.bands // 16), self.bands - 1) if demoted else band

    def rediscovered(self, page: int, fp: int, url: str, depth: int, priority: int) -> None:
        return None

    def page_crawled(self, fp: int) -> list[tuple[int, int]]:
        return []

    def band(self, key: str, depth: int, priority: int) -> int:
        return band_of(priority, self.bands)

    def weight(self, fp: int) -> float | None:
        return None
