"""A URL's score and priority band.

score = 0.2 x domain_rank + 0.7 x importance + 0.1 / (1 + depth)

domain_rank comes from an optional CSV host-rank file (host,rank in 0..1; unknown hosts get
the median 0.5); importance (0..1) is the URL's online page importance (OPIC cash, see
:mod:`crawler_ext.frontier.importance`), which grows with every page that links to it and
with those pages' own importance.  Band 0 is the highest; a request's ``priority`` moves it up
(positive) or down (negative) by that many bands.
"""

from __future__ import annotations

import csv
from collections.abc import Mapping

from crawler_ext.errors import ConfigError

__all__ = ["Scorer", "load_host_ranks"]

UNKNOWN_DOMAIN_RANK = 0.5


def load_host_ranks(path: str) -> dict[str, float]:
    ranks: dict[str, float] = {}
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            for lineno, row in enumerate(csv.reader(fh), 1):
                if not row or row[0].startswith("#") or row[0].strip().lower() == "host":
                    continue
                try:
                    rank = float(row[1])
                except (IndexError, ValueError):
                    raise ConfigError(
                        f"CRAWLER_EXT_FRONTIER_HOST_RANK_FILE: line {lineno} of {path} is not "
                        f"'host,rank'") from None
                ranks[row[0].strip().lower()] = min(max(rank, 0.0), 1.0)
    except OSError as exc:
        raise ConfigError(f"CRAWLER_EXT_FRONTIER_HOST_RANK_FILE: cannot read {path}: "
                          f"{exc.strerror}") from None
    return ranks


class Scorer:
    def __init__(self, bands: int, host_ranks: Mapping[str, float] | None = None) -> None:
        self.bands = bands
        self.host_ranks = dict(host_ranks or {})

    def score(self, host: str, depth: int, importance: float = 0.0) -> float:
        rank = self.host_ranks.get(host, UNKNOWN_DOMAIN_RANK)
        return 0.2 * rank + 0.7 * importance + 0.1 / (1 + depth)

    def band(self, score: float, priority: int = 0) -> int:
        band = int((1.0 - score) * self.bands)
        return min(max(band - priority, 0), self.bands - 1)
