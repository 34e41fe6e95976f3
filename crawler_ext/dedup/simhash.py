"""Content fingerprints: the text of a page, its exact hash, its 64-bit SimHash, and an index
that finds stored SimHashes within Hamming distance k without scanning them all.

* The text comes from ``crawler_ext.dedup.extract`` (a maintained main-content extractor).
* ``exact_hash(text)``: 64 bits of BLAKE2b over the normalised text.
* ``simhash(text)``: Charikar's SimHash over 3-word shingles weighted by term frequency,
  with no Python loop: each word hashed by a polynomial over its bytes, each shingle by a fold
  of its words' hashes, both mixed by MurmurHash3's finaliser, all in numpy (0.1 ms for a page
  of 3,000 words, where a BLAKE2b call per shingle took 2 ms and was a fifth of a broad
  crawl's CPU).  It replaces the ``simhash`` package, whose 2.1.2 release raises
  OverflowError under numpy 2 once a feature's weight exceeds 50 (it keeps weights in
  uint8) and which is slower on real pages (see ``benchmarks/run.py dedup``).  Fingerprints
  stored by a release before this hash (``JOBDIR/content.sqlite3``, the Redis content log)
  never match a new one within 3 bits (the odds are 4e-15 a pair): pages fetched before the
  upgrade are found again as exact duplicates, not as near ones.
* ``SimHashIndex``: permuted-block tables after Manku, Jain & Das Sarma (2007).  For k = 3 the
  64 bits are cut into 4 blocks of 16; two fingerprints within distance 3 agree exactly on at
  least one block (pigeonhole), so each table, sorted by one block first, yields candidates
  by binary search, which are then verified.  48 bytes per fingerprint: 4 sorted tables of
  8-byte keys and 4-byte document ids.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from typing import overload

import numpy as np

__all__ = ["exact_hash", "simhash", "hamming", "SimHashIndex"]



def exact_hash(text: str | bytes) -> int:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


_WHITESPACE = np.zeros(256, dtype=bool)
_WHITESPACE[[9, 10, 11, 12, 13, 32]] = True
_P = np.uint64(0x100000001B3)  # (odd: FNV's prime) the word hash's base
_K = np.uint64(0x9E3779B97F4A7C15)  # (odd) the shingle's fold
_M1, _M2 = np.uint64(0xFF51AFD7ED558CCD), np.uint64(0xC4CEB9FE1A85EC53)
_S33 = np.uint64(33)
_EMPTY = np.empty(0, dtype=np.uint64)


def _fmix64(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 64-bit finaliser over an array (every output bit depends on every
    input bit; uint64 arithmetic wraps)."""
    h = h ^ (h >> _S33)
    h = h * _M1
    h = h ^ (h >> _S33)
    h = h * _M2
    return h ^ (h >> _S33)


def _word_hashes(data: bytes) -> np.ndarray:
    """A 64-bit hash of each word of ``data`` (runs of bytes other than ASCII white space),
    in order, with no Python loop: a polynomial over the word's bytes, mixed."""
    b = np.frombuffer(data, dtype=np.uint8)
    word = ~_WHITESPACE[b]
    edges = np.diff(word.astype(np.int8), prepend=np.int8(0), append=np.int8(0))
    starts = np.flatnonzero(edges == 1)
    if not len(starts):
        return _EMPTY
    lengths = np.flatnonzero(edges == -1) - starts
    inside = np.flatnonzero(word)
    offsets = inside - np.repeat(starts, lengths)  # each byte's place in its word
    powers = np.ones(int(lengths.max()), dtype=np.uint64)  # P^0, P^1, ... (wrapping)
    powers[1:] = np.cumprod(np.full(len(powers) - 1, _P, dtype=np.uint64))
    terms = (b[inside].astype(np.uint64) + np.uint64(1)) * powers[offsets]
    bounds = np.concatenate(([0], np.cumsum(lengths)[:-1]))
    return _fmix64(np.add.reduceat(terms, bounds))


def _shingles(words: np.ndarray, n: int) -> np.ndarray:
    """The hash of each run of ``n`` consecutive words (of all of them, if fewer)."""
    if len(words) < n:
        n = len(words)
    folded = words[:len(words) - n + 1].copy()
    for k in range(1, n):
        folded = folded * _K + words[k:len(words) - n + 1 + k]
    return _fmix64(folded)


def simhash(text: str | Iterable[str], n: int = 3) -> int:
    """64-bit SimHash of ``text`` over its n-word shingles, each occurrence counted (a
    shingle's weight is its frequency): bit k is set where more shingle hashes have bit k
    set than clear.  A text is a string of words (split at ASCII white space), or an
    iterable of features, each hashed as one shingle."""
    if isinstance(text, str):
        features = _shingles(_word_hashes(text.encode("utf-8", "surrogatepass")), n)
    else:
        hashed = [_shingles(_word_hashes(f.encode("utf-8", "surrogatepass")), 1 << 30)
                  for f in text]
        features = np.concatenate(hashed) if hashed else _EMPTY
    if not len(features):
        return 0
    # big-endian bytes unpacked: column j holds bit 63 - j of each feature's hash
    bits = np.unpackbits(features.astype(">u8").view(np.uint8).reshape(-1, 8), axis=1)
    ones = bits.sum(axis=0, dtype=np.int64)
    return int.from_bytes(np.packbits(2 * ones > len(features)).tobytes(), "big")


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
