"""Any Scrapy dupefilter as a seen set, adapted explicitly and said so in the log."""

from __future__ import annotations

import logging
from typing import Any

from scrapy import Request

from crawler_ext.errors import ConfigError
from crawler_ext.seen.contract import SeenSet

__all__ = ["DupeFilterSeenSet", "as_seen_set", "check_dupefilter_class"]

logger = logging.getLogger(__name__)


def check_dupefilter_class(cls: type) -> None:
    """Refuse, in one line, a DUPEFILTER_CLASS that is neither a seen set nor a dupefilter."""
    if not getattr(cls, "is_seen_set", False) and not callable(
            getattr(cls, "request_seen", None)):
        raise ConfigError(f"DUPEFILTER_CLASS {cls.__module__}.{cls.__qualname__} has no "
                          f"request_seen(): it is not a Scrapy dupefilter")


def as_seen_set(dupefilter: Any) -> SeenSet:
    """The pack's seen sets declare ``is_seen_set``; any other dupefilter is adapted."""
    check_dupefilter_class(type(dupefilter))
    if getattr(dupefilter, "is_seen_set", False):
        return dupefilter
    logger.info("Seen set: DUPEFILTER_CLASS %s.%s is not one of crawler_ext's; the frontier "
                "asks its request_seen() for every request (no snapshot or journal replay: "
                "what it persists itself, it keeps)", type(dupefilter).__module__,
                type(dupefilter).__qualname__)
    return DupeFilterSeenSet(dupefilter)


class DupeFilterSeenSet:
    """A Scrapy dupefilter (``RFPDupeFilter`` or a user's) behind the seen-set contract."""

    is_seen_set = True
    mark = 0

    def __init__(self, dupefilter: Any) -> None:
        self.dupefilter = dupefilter

    def open(self) -> Any:
        return self.dupefilter.open()

    def close(self, reason: str) -> Any:
        return self.dupefilter.close(reason)

    def check(self, request: Request, fp: int) -> bool:
        return bool(self.dupefilter.request_seen(request))

    def confirm(self, fps: list[int]) -> list[bool]:
        return [True] * len(fps)  # never asked: check never answers MAYBE

    def log(self, request: Request, spider: Any) -> None:
        self.dupefilter.log(request, spider)

    def forget(self) -> None:
        pass  # a dupefilter of Scrapy's interface cannot

    def flush(self) -> None:
        pass

    def snapshot(self, mark: int) -> None:
        pass

    def replay(self, fingerprints: list[int], mark: int) -> None:
        pass
