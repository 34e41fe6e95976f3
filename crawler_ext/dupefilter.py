"""``BloomDupeFilter``: the seen set, a scalable Bloom filter over 64-bit URL fingerprints.

    DUPEFILTER_CLASS = "crawler_ext.dupefilter.BloomDupeFilter"

Where Scrapy's ``RFPDupeFilter`` asks "was this *request* made?" (method, canonical URL, body,
as hex SHA-1 strings in a Python set, about 150 bytes each), this asks "was this *URL*
admitted?" with 8-byte fingerprints of the canonical URL (``crawler_ext.urls``) in a Bloom
filter of about 10 bits per URL at 1 % false positives.  A false positive skips a new URL;
the rate is configurable and reported in stats.

With ``JOBDIR`` the filter is snapshotted there periodically and at close; the frontier
scheduler replays the admissions its durable store journalled after the snapshot, so a
kill -9 loses nothing.
"""

from __future__ import annotations

import logging
import math
import os
import struct
from pathlib import Path
from typing import Any

from pybloom_live import ScalableBloomFilter
from scrapy import Request
from scrapy.utils.job import job_dir

from crawler_ext import config
from crawler_ext.urls import InvalidURL, canonicalize, fingerprint

__all__ = ["BloomDupeFilter"]

logger = logging.getLogger(__name__)
_HEADER = struct.Struct(">8sQ")
_MAGIC = b"CXBLOOM1"


class BloomDupeFilter:
    """Seen set of URL fingerprints; ``dont_filter`` requests are never checked."""

    def __init__(self, capacity: int = 1_000_000, error_rate: float = 0.01,
                 path: str | Path | None = None, stats: Any = None, debug: bool = False) -> None:
        self.capacity, self.error_rate = capacity, error_rate
        self.path = Path(path) if path else None
        self.stats = stats
        self.debug = debug
        self.mark = 0  # journal position the loaded snapshot covers (see the scheduler)
        self.bloom = self._new()
        self._logged_dupe = False

    @classmethod
    def from_crawler(cls, crawler: Any) -> BloomDupeFilter:
        s = crawler.settings
        jobdir = job_dir(s)
        return cls(
            capacity=config.get(s, "CRAWLER_EXT_BLOOM_CAPACITY"),
            error_rate=config.get(s, "CRAWLER_EXT_BLOOM_ERROR_RATE"),
            path=Path(jobdir) / "seen.bloom" if jobdir else None,
            stats=crawler.stats, debug=s.getbool("DUPEFILTER_DEBUG"),
        )

    def _new(self) -> ScalableBloomFilter:
        return ScalableBloomFilter(initial_capacity=self.capacity, error_rate=self.error_rate,
                                   mode=ScalableBloomFilter.LARGE_SET_GROWTH)

    # -- the BaseDupeFilter interface -------------------------------------------------------
    def open(self) -> None:
        if self.path is not None and self.path.exists():
            with open(self.path, "rb") as fh:
                magic, mark = _HEADER.unpack(fh.read(_HEADER.size))
                if magic != _MAGIC:
                    raise ValueError(f"{self.path} is not a crawler_ext seen-set snapshot")
                self.bloom = ScalableBloomFilter.fromfile(fh)
                self.mark = mark
            logger.info("Seen set: loaded %d URLs from %s", len(self.bloom), self.path)

    def close(self, reason: str = "") -> None:
        if self.path is not None:
            self.snapshot(self.mark)
        self._report()

    def request_seen(self, request: Request) -> bool:
        try:
            fp = fingerprint(canonicalize(request.url))
        except InvalidURL:
            fp = fingerprint(request.url)
        return self.seen_fingerprint(fp)

    def log(self, request: Request, spider: Any = None) -> None:
        if self.debug:
            logger.debug("Filtered duplicate URL: %(request)s", {"request": request})
        elif not self._logged_dupe:
            logger.debug("Filtered duplicate URL: %(request)s - no more duplicates will be "
                         "shown (see DUPEFILTER_DEBUG to show all duplicates)", {"request": request})
            self._logged_dupe = True

    # -- fingerprints ----------------------------------------------------------------------
    def seen_fingerprint(self, fp: int) -> bool:
        """Test and set: True if ``fp`` was (probably) seen before."""
        seen = self.bloom.add(fp.to_bytes(8, "big"))
        if self.stats is not None:
            self.stats.inc_value("dupefilter/checks")
            if seen:
                self.stats.inc_value("dupefilter/filtered")
        return seen

    def replay(self, fingerprints: list[int], mark: int) -> None:
        """Add admissions journalled after the loaded snapshot."""
        for fp in fingerprints:
            self.bloom.add(fp.to_bytes(8, "big"))
        self.mark = mark

    def snapshot(self, mark: int) -> None:
        """Write the filter (covering journal position ``mark``) atomically to ``path``."""
        if self.path is None:
            return
        self.mark = mark
        self.path.parent.mkdir(parents=True, exist_ok=True)
        tmp = self.path.with_suffix(".tmp")
        with open(tmp, "wb") as fh:
            fh.write(_HEADER.pack(_MAGIC, mark))
            self.bloom.tofile(fh)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)
        if self.stats is not None:
            self.stats.inc_value("dupefilter/snapshots")

    # -- measurements ----------------------------------------------------------------------
    def size_bytes(self) -> int:
        return sum(len(f.bitarray) // 8 for f in self.bloom.filters)

    def estimated_fp_rate(self) -> float:
        """1 - prod(1 - fill^k) over the filter's stages, from the bits actually set."""
        ok = 1.0
        for f in self.bloom.filters:
            fill = f.bitarray.count() / max(1, len(f.bitarray))
            ok *= 1.0 - math.pow(fill, f.num_slices)
        return 1.0 - ok

    def _report(self) -> None:
        if self.stats is None:
            return
        count = len(self.bloom)
        self.stats.set_value("dupefilter/urls", count)
        if count:
            self.stats.set_value("dupefilter/bits_per_url", round(self.size_bytes() * 8 / count, 2))
        self.stats.set_value("dupefilter/estimated_fp_rate", round(self.estimated_fp_rate(), 6))
