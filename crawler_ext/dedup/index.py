"""The content index: which earlier page, if any, a fetched page duplicates.

A page is fingerprinted by its main text, or its full visible text where the main text is
too short to be evidence, or -- below ``min_words`` words of either -- its raw body
(``crawler_ext.dedup.extract``).  Exact duplicates share the hash of that text (or the body's
exact hash); near-duplicates have SimHashes within ``distance`` bits
(``crawler_ext.dedup.simhash``), and a page fingerprinted by its raw body is never a near
duplicate: a trivial text is no evidence.  Each URL is remembered by its latest unique
version only (a changing page's new version replaces its older one), so that in a continuous
crawl the index grows with URLs, not with fetches.  With a path (``JOBDIR/content.sqlite3``)
the index is persisted in batches and rebuilt on open, so a resumed crawl remembers it.
"""

from __future__ import annotations

import sqlite3
from array import array
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

import numpy as np

from crawler_ext.dedup.extract import fingerprint_text
from crawler_ext.dedup.simhash import SimHashIndex, exact_hash, near_hash
from crawler_ext.int64 import to_signed as _signed
from crawler_ext.int64 import to_unsigned as _unsigned
from crawler_ext.meta import FINGERPRINT_META  # (its home; re-exported here)

__all__ = ["FINGERPRINT_META", "ContentIndex", "PageFingerprint", "Verdict", "page_fingerprint"]


@dataclass(frozen=True)
class Verdict:
    kind: str  # "unique", "exact" or "near"
    original: str | None
    distance: int
    simhash: int
    exact: int
    basis: str = "main"  # what was hashed: main text, full visible text, or the raw body

    def as_meta(self) -> dict:
        return {"verdict": self.kind, "original": self.original, "distance": self.distance,
                "simhash": f"{self.simhash:016x}", "exact_hash": f"{self.exact:016x}",
                "basis": self.basis}


class ContentIndex:
    def __init__(self, distance: int = 3, path: str | Path | None = None,
                 min_words: int = 20) -> None:
        self.index = SimHashIndex(k=distance)
        self.distance = distance
        self.min_words = min_words
        self.urls: list[str] = []
        self.by_exact: dict[int, int] = {}
        self._doc_of: dict[str, int] = {}  # url -> its doc id
        self._exacts = array("Q")  # doc id -> the exact hash of the version remembered
        self.path = Path(path) if path else None
        self._db: sqlite3.Connection | None = None
        self._pending: list[tuple[int, str, int, int]] = []
        self.on_new: Callable[[str, int, int], None] | None = None  # shares unique pages

    def open(self) -> None:
        if self.path is None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(self.path, isolation_level=None)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("CREATE TABLE IF NOT EXISTS docs (id INTEGER PRIMARY KEY, url TEXT, "
                         "exact INTEGER, simhash INTEGER)")
        rows = self._db.execute("SELECT id, url, exact, simhash FROM docs ORDER BY id").fetchall()
        for doc_id, url, ex, sh in rows:
            self.urls.append(url)
            self._exacts.append(_unsigned(ex))
            self._doc_of[url] = doc_id
            self.by_exact.setdefault(_unsigned(ex), doc_id)
        rows = [r for r in rows if r[3] != 0]  # 0: a body-hashed page, not in the SimHash index
        if rows:
            self.index.bulk_load(np.array([_unsigned(r[3]) for r in rows], dtype=np.uint64),
                                 np.array([r[0] for r in rows], dtype=np.uint32))

    def flush(self, **_: object) -> None:
        if self._db is not None and self._pending:
            self._db.execute("BEGIN")
            self._db.executemany("INSERT OR REPLACE INTO docs VALUES (?, ?, ?, ?)", self._pending)
            self._db.execute("COMMIT")
            self._pending.clear()

    def close(self) -> None:
        try:
            self.flush()
        finally:
            if self._db is not None:
                self._db.close()
                self._db = None

    def add_remote(self, url: str, ex: int, sh: int) -> None:
        """A unique page another worker fetched (distributed crawl): remember, not share."""
        if ex not in self.by_exact:
            self._remember(url, ex, sh, share=False)

    def _remember(self, url: str, ex: int, sh: int, share: bool = True) -> None:
        doc_id = self._doc_of.get(url)
        if doc_id is None:
            doc_id = self._doc_of[url] = len(self.urls)
            self.urls.append(url)
            self._exacts.append(ex)
        else:  # a new version of the page: it replaces the older one (in the SimHash index
            # too: an id has one fingerprint there)
            if self.by_exact.get(self._exacts[doc_id]) == doc_id:
                del self.by_exact[self._exacts[doc_id]]
            self._exacts[doc_id] = ex
            if not sh:
                self.index.discard(doc_id)
        self.by_exact.setdefault(ex, doc_id)
        if sh:
            self.index.add(sh, doc_id)
        if share and self.on_new is not None:
            self.on_new(url, ex, sh)
        if self._db is not None:
            self._pending.append((doc_id, url, _signed(ex), _signed(sh)))
            if len(self._pending) >= 1000:
                self.flush()

    def check(self, url: str, html: str | bytes) -> Verdict:
        """Classify a page and, if it is unique, remember it."""
        return self.classify(url, page_fingerprint(html, self.min_words))

    def classify(self, url: str, page: PageFingerprint) -> Verdict:
        """Classify a page by its fingerprint (computed here or in a worker process) and, if
        it is unique, remember it."""
        ex, sh, basis = page
        if ex in self.by_exact:
            original = self.urls[self.by_exact[ex]]
            if original == url:  # the same URL fetched again (a resumed crawl): not a copy
                return Verdict("unique", None, 0, sh, ex, basis)
            return Verdict("exact", original, 0, sh, ex, basis)
        near = self.index.nearest(sh) if sh else None
        if near is not None and self.urls[near[0]] == url:
            return Verdict("unique", None, 0, sh, ex, basis)
        if near is not None:
            self.by_exact[ex] = near[0]  # the same text again is this near-duplicate's too
            return Verdict("near", self.urls[near[0]], near[1], sh, ex, basis)
        self._remember(url, ex, sh)
        return Verdict("unique", None, 0, sh, ex, basis)


class PageFingerprint(NamedTuple):
    """What the index needs of a page: the exact hash, the SimHash (0 for a page judged by
    its raw body) and the basis (``main``, ``full`` or ``body``)."""

    exact: int
    simhash: int
    basis: str


def page_fingerprint(html: str | bytes, min_words: int = 20) -> PageFingerprint:
    """A page's fingerprint: pure CPU work, the same in any process (the dedup workers run
    it off the reactor thread)."""
    text, basis = fingerprint_text(html, min_words)
    if basis == "body":  # too little text to judge by: the exact body only, no SimHash
        body = html.encode("utf-8", "surrogatepass") if isinstance(html, str) else html
        return PageFingerprint(exact_hash(b"body\x00" + body), 0, basis)
    return PageFingerprint(exact_hash(text), near_hash(text), basis)
