"""A full disk stops the crawl cleanly: nothing is called done that was not stored.

When the WARC directory or JOBDIR fills up, the component that hit it calls
``report_disk_full``: one clear error line, the ``crawler_ext.signals.storage_failed`` signal
(the frontier stops committing its journal, so every page not archived is fetched again on
resume), ``disk_full/<where>`` in the stats, and the spider is closed with reason
``disk_full``.  Free space and run the same command again: the crawl resumes.
"""

from __future__ import annotations

import errno
import logging
import sqlite3
from typing import Any

from crawler_ext.signals import storage_failed

__all__ = ["is_disk_full", "report_disk_full"]

logger = logging.getLogger(__name__)

_FULL = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EFBIG})


def is_disk_full(exc: BaseException) -> bool:
    if isinstance(exc, OSError) and exc.errno in _FULL:
        return True
    return isinstance(exc, sqlite3.OperationalError) and "full" in str(exc).lower()


def report_disk_full(crawler: Any, where: str, path: object, exc: BaseException) -> None:
    """Stop the crawl (once per crawl) because ``where`` (``warc``, ``jobdir``) is full."""
    if crawler is None or getattr(crawler, "_crawler_ext_disk_full", False):
        return
    crawler._crawler_ext_disk_full = True
    logger.error("The disk of the %s (%s) is full: %s. The crawl stops; what was not stored is "
                 "fetched again when the same command is run after space is freed.",
                 "WARC directory" if where == "warc" else "job directory", path, exc)
    crawler.stats.set_value(f"disk_full/{where}", 1)
    crawler.signals.send_catch_log(storage_failed, where=where)
    try:
        engine = getattr(crawler, "engine", None)
    except RuntimeError:  # Scrapy 2.19 raises when there is no engine
        engine = None
    if engine is not None and getattr(engine, "spider", None) is not None:
        from scrapy.utils.defer import deferred_from_coro

        deferred_from_coro(engine.close_spider_async(reason="disk_full"))
