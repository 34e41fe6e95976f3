"""The seen-set contract: what the frontier scheduler asks of the set of URLs admitted.

Implemented by :class:`~crawler_ext.seen.bloom.BloomDupeFilter` (Bloom filter, and with
``CRAWLER_EXT_SEEN_MODE = "bloom+exact"`` an exact table behind it).  Any other Scrapy
dupefilter (``RFPDupeFilter``, your own) is adapted explicitly by
:func:`~crawler_ext.seen.adapter.as_seen_set`; the scheduler never probes what it was given.

Durability works with the frontier's admission journal: the set is snapshotted together with
the journal position it covers (``snapshot(mark)``, right after a journal commit), and on
open the admissions journalled after that position are replayed into it (``replay``).
"""

from __future__ import annotations

from typing import Any, Protocol

from scrapy import Request

__all__ = ["MAYBE", "SeenSet"]

#: ``check``'s answer when the Bloom filter says "seen" and an exact check must confirm it
MAYBE = None


class SeenSet(Protocol):
    #: the journal position the loaded snapshot covers
    mark: int

    def open(self) -> Any: ...
    def close(self, reason: str) -> Any: ...

    def check(self, request: Request, fp: int) -> bool | None:
        """Test and set: True if seen before, False if new (now added), or :data:`MAYBE`."""
    def confirm(self, fps: list[int]) -> list[bool]:
        """For each :data:`MAYBE` fingerprint, whether it really was seen (one batch)."""
    def log(self, request: Request, spider: Any) -> None:
        """A request was filtered as a duplicate (Scrapy's dupefilter ``log``)."""
    def forget(self) -> None:
        """Forget the fingerprints seen so far, where the set can (a shared frontier's store
        lost writes; its own seen set decides)."""

    def flush(self) -> None:
        """Commit additions (called after the frontier journal's commit, never before)."""
    def snapshot(self, mark: int) -> None: ...
    def replay(self, fingerprints: list[int], mark: int) -> None: ...
