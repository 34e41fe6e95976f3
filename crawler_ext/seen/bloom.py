"""``BloomDupeFilter``: the seen set, a scalable Bloom filter over 64-bit URL fingerprints.

    DUPEFILTER_CLASS = "crawler_ext.dupefilter.BloomDupeFilter"  # (this module's public path)

Where Scrapy's ``RFPDupeFilter`` asks "was this *request* made?" (method, canonical URL, body,
as hex SHA-1 strings in a Python set, about 150 bytes each), this asks "was this *URL*
admitted?" with 8-byte fingerprints of the canonical URL (``crawler_ext.admission.urls``) in a Bloom
filter of about 10 bits per URL at 1 % false positives.  A false positive skips a new URL;
the rate is configurable and reported in stats.

With ``JOBDIR`` the filter is snapshotted there periodically and at close; the frontier
scheduler replays the admissions its durable store journalled after the snapshot, so a
kill -9 loses nothing.

``CRAWLER_EXT_SEEN_MODE = "bloom+exact"`` confirms every "maybe seen" against an exact
fingerprint table on disk (SQLite), so no new URL is ever skipped: the frontier scheduler
holds such URLs back and confirms them in one batched query per flush interval.
"""

from __future__ import annotations

import logging
import math
import os
import sqlite3
import struct
import tempfile
from pathlib import Path
from typing import Any

from mypy_extensions import mypyc_attr
from pybloom_live import ScalableBloomFilter
from scrapy import Request
from scrapy.utils.job import job_dir
from scrapy.utils.request import referer_str

from crawler_ext import config
from crawler_ext.admission.urls import InvalidURL, canonicalize, fingerprint
from crawler_ext.int64 import to_signed as _signed
from crawler_ext.seen.contract import MAYBE
from crawler_ext.stats import Counts

__all__ = ["BloomDupeFilter", "ExactSeenStore", "MAYBE", "seen_or_add"]

logger = logging.getLogger(__name__)
_HEADER = struct.Struct(">8sQ")
_MAGIC = b"CXBLOOM1"


def seen_or_add(bloom: ScalableBloomFilter, key: bytes) -> bool:
    """``bloom.add(key)`` -- True if ``key`` was (probably) there -- hashing the newest filter
    once, not twice: the library checks every filter, then hashes the newest again to insert;
    ``BloomFilter.add`` checks and inserts in one pass.  The same bits, counts and answers
    (tested against the library's own ``add``)."""
    filters = bloom.filters
    if not filters or filters[-1].count >= filters[-1].capacity:
        return bloom.add(key)  # a new filter is due: the library's own path
    newest = filters[-1]
    for older in filters:
        if older is not newest and key in older:
            return True
    return newest.add(key)


class ExactSeenStore:
    """Every admitted fingerprint in a SQLite table; additions are batched until ``flush``."""

    def __init__(self, path: str | Path | None) -> None:
        self._temporary = path is None
        self.path = Path(path) if path else Path(tempfile.mkstemp(suffix=".seen.sqlite3")[1])
        self._db = sqlite3.connect(self.path, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS seen (fp INTEGER PRIMARY KEY) WITHOUT ROWID")
        self._pending: set[int] = set()

    def add(self, fp: int) -> None:
        self._pending.add(_signed(fp))

    def confirm(self, fps: list[int]) -> list[bool]:
        """For each of ``fps`` in order, whether it was seen; the others are recorded as seen
        from now on (so a second copy in the same batch is seen)."""
        signed = [_signed(fp) for fp in fps]
        found: set[int] = set()
        for i in range(0, len(signed), 500):
            chunk = signed[i:i + 500]
            marks = ",".join("?" * len(chunk))
            found.update(row[0] for row in self._db.execute(
                f"SELECT fp FROM seen WHERE fp IN ({marks})", chunk))
        seen: list[bool] = []
        for s in signed:
            if s in found or s in self._pending:
                seen.append(True)
            else:
                seen.append(False)
                self._pending.add(s)
        return seen

    def flush(self) -> None:
        if self._pending:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR IGNORE INTO seen VALUES (?)",
                                 [(fp,) for fp in self._pending])
            self._db.execute("COMMIT")
            self._pending.clear()

    def close(self) -> None:
        self.flush()
        self._db.close()
        if self._temporary:
            for suffix in ("", "-wal", "-shm"):
                Path(str(self.path) + suffix).unlink(missing_ok=True)


@mypyc_attr(allow_interpreted_subclasses=True)  # compiled (setup.py), subclassed by Python
class BloomDupeFilter:
    """Seen set of URL fingerprints (:class:`~crawler_ext.seen.contract.SeenSet`, and Scrapy's
    dupefilter interface); ``dont_filter`` requests are never checked."""

    is_seen_set = True

    def __init__(self, capacity: int = 1_000_000, error_rate: float = 0.01,
                 path: str | Path | None = None, stats: Any = None, debug: bool = False,
                 exact: bool = False) -> None:
        self.capacity, self.error_rate = capacity, error_rate
        self.path = Path(path) if path else None
        self.exact: ExactSeenStore | None = None
        self._exact_wanted = exact
        self.stats = stats
        self._counts = Counts()  # per-check counts, added to the stats at each flush
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
            exact=config.get(s, "CRAWLER_EXT_SEEN_MODE") == "bloom+exact",
        )

    def _new(self) -> ScalableBloomFilter:
        return ScalableBloomFilter(initial_capacity=self.capacity, error_rate=self.error_rate,
                                   mode=ScalableBloomFilter.LARGE_SET_GROWTH)

    # -- the BaseDupeFilter interface -------------------------------------------------------
    def open(self) -> None:
        if self._exact_wanted and self.exact is None:
            self.exact = ExactSeenStore(self.path.with_suffix(".sqlite3") if self.path else None)
        if self.path is not None and self.path.exists():
            with open(self.path, "rb") as fh:
                magic, mark = _HEADER.unpack(fh.read(_HEADER.size))
                if magic != _MAGIC:
                    raise ValueError(f"{self.path} is not a crawler_ext seen-set snapshot")
                self.bloom = ScalableBloomFilter.fromfile(fh)
                self.mark = mark
            logger.info("Seen set: loaded %d URLs from %s", len(self.bloom), self.path)

    def close(self, reason: str = "") -> None:
        # a full disk stopped the journal: a snapshot now would run ahead of it (URLs admitted
        # but never journalled would count as seen on resume, and be lost)
        if self.path is not None and reason != "disk_full":
            self.snapshot(self.mark)
        if self.exact is not None:
            self.exact.close()
            self.exact = None
        self._report()

    def request_seen(self, request: Request) -> bool:
        try:
            fp = fingerprint(canonicalize(request.url))
        except InvalidURL:
            fp = fingerprint(request.url)
        seen = self.seen_fingerprint(fp)
        if seen is MAYBE:  # no batching possible here: confirm at once
            seen = self.confirm([fp])[0]
        return seen

    def log(self, request: Request, spider: Any = None) -> None:
        # Scrapy's wording, so that log searches written for stock Scrapy still match
        if self.debug:
            logger.debug("Filtered duplicate request: %(request)s (referer: %(referer)s)",
                         {"request": request, "referer": referer_str(request)})
        elif not self._logged_dupe:
            logger.debug("Filtered duplicate request: %(request)s - no more duplicates will be "
                         "shown (see DUPEFILTER_DEBUG to show all duplicates)",
                         {"request": request})
            self._logged_dupe = True

    # -- fingerprints ----------------------------------------------------------------------
    def check(self, request: Request, fp: int) -> bool | None:
        return self.seen_fingerprint(fp)

    def seen_fingerprint(self, fp: int) -> bool | None:
        """Test and set: True if ``fp`` was (probably) seen before; in exact mode
        :data:`MAYBE` when the Bloom filter says seen and :meth:`confirm` must decide."""
        seen = seen_or_add(self.bloom, fp.to_bytes(8, "big"))
        counts = self._counts
        counts.inc("dupefilter/checks")
        if self.exact is not None:
            if not seen:
                self.exact.add(fp)
                return False
            return MAYBE
        if seen:
            counts.inc("dupefilter/filtered")
        return seen

    def forget(self) -> None:
        """An empty filter (the exact store, the truth on disk, is kept)."""
        self.bloom = self._new()

    def confirm(self, fps: list[int]) -> list[bool]:
        """Exact mode: for each "maybe seen" fingerprint, whether it really was (one batched
        query for all)."""
        assert self.exact is not None
        seen = self.exact.confirm(fps)
        if self.stats is not None:
            hits = sum(seen)
            self.stats.inc_value("dupefilter/filtered", hits)
            self.stats.inc_value("dupefilter/false_positives_caught", len(fps) - hits)
        return seen

    def flush(self) -> None:
        """Commit the exact store's additions (after the frontier journal's commit)."""
        self._counts.flush(self.stats)
        if self.exact is not None:
            self.exact.flush()

    def replay(self, fingerprints: list[int], mark: int) -> None:
        """Add admissions journalled after the loaded snapshot."""
        for fp in fingerprints:
            self.bloom.add(fp.to_bytes(8, "big"))
            if self.exact is not None:
                self.exact.add(fp)
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
        self.flush()
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
        self._counts.flush(self.stats)
        if self.stats is None:
            return
        count = len(self.bloom)
        self.stats.set_value("dupefilter/urls", count)
        if count:
            self.stats.set_value("dupefilter/bits_per_url", round(self.size_bytes() * 8 / count, 2))
        self.stats.set_value("dupefilter/estimated_fp_rate", round(self.estimated_fp_rate(), 6))
