"""Content fingerprints: the text of a page, its exact hash, its 64-bit SimHash, and an index
that finds stored SimHashes within Hamming distance k without scanning them all.

* The text comes from ``crawler_ext.dedup.extract`` (a maintained main-content extractor).
* ``exact_hash(text)``: 64 bits of BLAKE2b over the normalised text.
* ``simhash(text)``: Charikar's SimHash over 3-word shingles weighted by term frequency,
  vectorised with numpy.  It replaces the ``simhash`` package, whose 2.1.2 release raises
  OverflowError under numpy 2 once a feature's weight exceeds 50 (it keeps weights in
  uint8) and which is slower on real pages (see ``benchmarks/run.py dedup``).
* ``SimHashIndex``: permuted-block tables after Manku, Jain & Das Sarma (2007).  For k = 3 the
  64 bits are cut into 4 blocks of 16; two fingerprints within distance 3 agree exactly on at
  least one block (pigeonhole), so each table, sorted by one block first, yields candidates
  by binary search, which are then verified.  48 bytes per fingerprint: 4 sorted tables of
  8-byte keys and 4-byte document ids.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable
from typing import overload

import numpy as np

__all__ = ["exact_hash", "simhash", "hamming", "SimHashIndex"]



def exact_hash(text: str | bytes) -> int:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


def simhash(text: str | Iterable[str], n: int = 3) -> int:
    """64-bit SimHash of ``text`` over n-word shingles weighted by their frequency: bit k is
    set where the weights of the features whose hash has bit k outweigh the others."""
    blake = hashlib.blake2b
    if isinstance(text, str):
        # every occurrence hashed, uncounted: the sum over occurrences is the sum over
        # shingles of +-weight (10 % faster than a Counter on text where most shingles occur
        # once: 92 % on the broad test web's pages)
        words = [w.encode("utf-8") for w in text.split()]
        shingles = list(map(b" ".join, zip(*(words[i:] for i in range(n))))) \
            if len(words) >= n else [b" ".join(words)] if words else []
        if not shingles:
            return 0
        digests = b"".join([blake(f, digest_size=8).digest() for f in shingles])
        # unpacked, column j holds bit 63 - j of each big-endian hash (no Python loop)
        bits = np.unpackbits(np.frombuffer(digests, dtype=np.uint8).reshape(-1, 8), axis=1)
        ones = bits.sum(axis=0, dtype=np.int64)
        return int.from_bytes(np.packbits(2 * ones > len(shingles)).tobytes(), "big")
    features = Counter(text)
    if not features:
        return 0
    # each feature's 8-byte BLAKE2b digest, all in one buffer; unpacked, column j holds bit
    # 63 - j of the big-endian hash (a (features, 64) matrix of 0/1, no Python loop)
    digests = b"".join([blake(f.encode("utf-8"), digest_size=8).digest() for f in features])
    bits = np.unpackbits(np.frombuffer(digests, dtype=np.uint8).reshape(-1, 8), axis=1)
    weights = np.fromiter(features.values(), dtype=np.float64, count=len(features))
    # sum of +w (bit set) and -w (bit clear) per bit; exact in float64 for any page
    totals = 2.0 * (weights @ bits) - weights.sum()
    return int.from_bytes(np.packbits(totals > 0).tobytes(), "big")


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


def _popcount64(x: np.ndarray) -> np.ndarray:
    """Bit counts of a uint64 array (SWAR, no Python loop)."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return ((x * np.uint64(0x0101010101010101)) >> np.uint64(56)).astype(np.int64)


class SimHashIndex:
    """Fingerprints with document ids; ``nearest(fp)`` finds one within ``k`` bits.

    An id has one fingerprint at a time: adding another for it (a page's new version)
    replaces the older, and ``discard`` forgets it.  The older entry stays in the tables,
    skipped by ``nearest`` (it is not its id's current fingerprint), until such entries make
    a quarter of the tables, which are then rebuilt without them (measured at 1 M entries:
    14 us a replacement, its add included; a rebuild 0.5 s, once every 250,000 or more
    replacements)."""

    def __init__(self, k: int = 3, buffer: int = 4096) -> None:
        if not 0 <= k <= 3:
            raise ValueError("the 4-block index answers distances 0 to 3")
        self.k = k
        self.blocks = 4
        # table t is sorted by block t (rotated to the top 16 bits); ids travel along
        self._keys = [np.empty(0, dtype=np.uint64) for _ in range(self.blocks)]
        self._ids = [np.empty(0, dtype=np.uint32) for _ in range(self.blocks)]
        # the newest fingerprints, not merged into the tables yet: arrays filled in order
        self._pending_fps = np.empty(buffer, dtype=np.uint64)
        self._pending_ids = np.empty(buffer, dtype=np.uint32)
        self._n_pending = 0
        self._buffer = buffer
        # each id's current fingerprint (0: none); an entry whose fingerprint is not its id's
        # current one is dead, and ``_dead`` counts them
        self._current = np.zeros(0, dtype=np.uint64)
        self._dead = 0

    def __len__(self) -> int:
        """The live entries."""
        return len(self._keys[0]) + self._n_pending - self._dead

    @overload
    def _rotate(self, fp: np.ndarray, t: int) -> np.ndarray: ...
    @overload
    def _rotate(self, fp: np.uint64, t: int) -> np.uint64: ...
    def _rotate(self, fp: np.ndarray | np.uint64, t: int) -> np.ndarray | np.uint64:
        """Bring block t to the top 16 bits, so sorting by the key sorts by that block."""
        s = np.uint64(16 * (3 - t))
        if s == 0:
            return fp
        return (fp << s) | (fp >> (np.uint64(64) - s))

    def _unrotate(self, key: np.ndarray, t: int) -> np.ndarray:
        s = np.uint64(16 * (3 - t))
        if s == 0:
            return key
        return (key >> s) | (key << (np.uint64(64) - s))

    def add(self, fp: int, doc_id: int) -> None:
        """``fp`` (not 0) becomes ``doc_id``'s fingerprint, in place of any earlier one."""
        self._replace(doc_id, fp)
        self._pending_fps[self._n_pending] = fp
        self._pending_ids[self._n_pending] = doc_id
        self._n_pending += 1
        if self._n_pending >= self._buffer:
            self.merge()

    def discard(self, doc_id: int) -> None:
        """Forget ``doc_id``'s fingerprint."""
        self._replace(doc_id, 0)

    def _replace(self, doc_id: int, fp: int) -> None:
        if doc_id >= len(self._current):
            grown = np.zeros(max(1024, 2 * len(self._current), doc_id + 1), dtype=np.uint64)
            grown[:len(self._current)] = self._current
            self._current = grown
        old = int(self._current[doc_id])
        self._current[doc_id] = fp
        if old and old != fp:
            self._dead += 1
            if self._dead >= max(1024, (len(self._keys[0]) + self._n_pending) // 4):
                self._compact()

    def _live(self, fps: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Which of these entries are their ids' current fingerprints."""
        return self._current[ids] == fps

    def _compact(self) -> None:
        fps, ids = self.fingerprints()
        live = self._live(fps, ids)
        self._keys = [np.empty(0, dtype=np.uint64) for _ in range(self.blocks)]
        self._ids = [np.empty(0, dtype=np.uint32) for _ in range(self.blocks)]
        self._dead = 0
        self.bulk_load(fps[live], ids[live])

    def bulk_load(self, fps: np.ndarray, ids: np.ndarray) -> None:
        """Add many fingerprints at once (one sort per table instead of incremental inserts)."""
        self.merge()
        fps = np.asarray(fps, dtype=np.uint64)
        ids = np.asarray(ids, dtype=np.uint32)
        if len(ids) and int(ids.max()) >= len(self._current):
            self._replace(int(ids.max()), 0)  # (grows the array)
        self._current[ids] = fps
        for t in range(self.blocks):
            keys = np.concatenate([self._keys[t], self._rotate(fps, t)])
            tids = np.concatenate([self._ids[t], ids])
            order = np.argsort(keys, kind="stable")
            self._keys[t], self._ids[t] = keys[order], tids[order]

    def merge(self) -> None:
        if not self._n_pending:
            return
        fps = self._pending_fps[:self._n_pending].copy()
        ids = self._pending_ids[:self._n_pending].copy()
        self._n_pending = 0
        for t in range(self.blocks):
            keys = self._rotate(fps, t)
            order = np.argsort(keys, kind="stable")
            keys, tids = keys[order], ids[order]
            pos = np.searchsorted(self._keys[t], keys)
            self._keys[t] = np.insert(self._keys[t], pos, keys)
            self._ids[t] = np.insert(self._ids[t], pos, tids)

    def nearest(self, fp: int) -> tuple[int, int] | None:
        """(doc id, distance) of a stored fingerprint within k bits of ``fp``, closest first."""
        best: tuple[int, int] | None = None
        q = np.uint64(fp)
        if self._n_pending:  # the newest, scanned whole (at most ``buffer``), first closest
            dist = _popcount64(self._pending_fps[:self._n_pending] ^ q)
            found = self._closest_live(dist, self._pending_fps[:self._n_pending],
                                       self._pending_ids[:self._n_pending], 3, None)
            if found is not None:
                best = found
        if len(self._keys[0]):
            for t in range(self.blocks):
                key = self._rotate(q, t)
                lo_key = key & np.uint64(0xFFFF000000000000)
                hi_key = lo_key | np.uint64(0x0000FFFFFFFFFFFF)
                keys = self._keys[t]
                lo = int(np.searchsorted(keys, lo_key, side="left"))
                hi = int(np.searchsorted(keys, hi_key, side="right"))
                if lo == hi:
                    continue
                dist = _popcount64(keys[lo:hi] ^ key)
                found = self._closest_live(dist, keys[lo:hi], self._ids[t][lo:hi], t, best)
                if found is not None:
                    best = found
                    if best[1] == 0:
                        break
        return best

    def _closest_live(self, dist: np.ndarray, keys: np.ndarray, ids: np.ndarray, t: int,
                      best: tuple[int, int] | None) -> tuple[int, int] | None:
        """The closest live candidate within k bits closer than ``best``, or None (``keys``:
        table ``t``'s, rotated)."""
        if self._dead:
            near = np.flatnonzero(dist <= self.k)
            near = near[self._live(self._unrotate(keys[near], t), ids[near])]
            if not len(near):
                return None
            i = int(near[np.argmin(dist[near])])
        else:
            i = int(np.argmin(dist))
        if dist[i] <= self.k and (best is None or dist[i] < best[1]):
            return int(ids[i]), int(dist[i])
        return None

    def fingerprints(self) -> tuple[np.ndarray, np.ndarray]:
        """All (fingerprints, ids), for persistence."""
        self.merge()
        return self._unrotate(self._keys[3], 3), self._ids[3]

    def nbytes(self) -> int:
        return sum(k.nbytes + i.nbytes for k, i in zip(self._keys, self._ids))
