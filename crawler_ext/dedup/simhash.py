"""Content fingerprints: the text of a page, its exact hash, its 64-bit SimHash, and an index
that finds stored SimHashes within Hamming distance k without scanning them all.

* The text comes from ``crawler_ext.dedup.extract`` (a maintained main-content extractor).
* ``exact_hash(text)``: 64 bits of BLAKE2b over the normalised text.
* ``simhash(text)``: Charikar's SimHash over 3-word shingles weighted by term frequency,
  vectorised with numpy: the shingles' 64-bit hashes come from prefix sums over the text's
  bytes (a polynomial hash, mixed), not one BLAKE2b call a shingle, which took 80 % of the
  fingerprint's time (0.25 against 0.93 ms for a 10 KB text).  It replaces the ``simhash``
  package, whose 2.1.2 release raises OverflowError under numpy 2 once a feature's weight
  exceeds 50 (it keeps weights in uint8) and which is slower on real pages (see
  ``benchmarks/run.py dedup``).
* ``near_hash(text)``: the SimHash pages are compared by, 0 for texts under
  ``NEAR_MIN_WORDS`` words (exact matches only: SimHash over a few dozen shingles is noise).
* ``SimHashIndex``: permuted-block tables after Manku, Jain & Das Sarma (2007).  For k = 3 the
  64 bits are cut into 4 blocks of 16; two fingerprints within distance 3 agree exactly on at
  least one block (pigeonhole), so each table, sorted by one block first, yields candidates
  by binary search, which are then verified.  48 bytes per fingerprint: 4 sorted tables of
  8-byte keys and 4-byte document ids.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from typing import overload

import numpy as np

__all__ = ["NEAR_MIN_WORDS", "SimHashIndex", "exact_hash", "hamming", "near_hash", "simhash"]



def exact_hash(text: str | bytes) -> int:
    data = text.encode("utf-8") if isinstance(text, str) else text
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "big")


#: the shingle hash: a polynomial over the shingle's UTF-8 bytes (each byte + 1) modulo 2^64
#: in an odd base, plus its length, through splitmix64's finaliser (every output bit depends
#: on every input bit).  Over a whole page it is computed at once from prefix sums with numpy;
#: ``_shingle_hash`` below is the same function for one shingle, the definition.
_BASE = 0x100000001B3
_BASE_INVERSE = pow(_BASE, -1, 1 << 64)
_MIX1, _MIX2 = 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_MASK = (1 << 64) - 1
#: texts up to this many bytes use the cached tables of powers (2 x 8 bytes a byte, 4 MiB)
_POWERS_CACHED = 1 << 18


def _shingle_hash(shingle: bytes) -> int:
    h = 0
    for byte in shingle:
        h = (h * _BASE + byte + 1) & _MASK
    h = (h + len(shingle)) & _MASK
    h = ((h ^ h >> 30) * _MIX1) & _MASK
    h = ((h ^ h >> 27) * _MIX2) & _MASK
    return h ^ h >> 31


def _powers(base: int, length: int) -> np.ndarray:
    """base**i modulo 2^64 for i < length (uint64 arithmetic wraps)."""
    powers = np.full(length, base, dtype=np.uint64)
    powers[0] = 1
    with np.errstate(over="ignore"):
        return np.cumprod(powers, dtype=np.uint64)


_POWERS: list[np.ndarray] = []


def _power_tables(length: int) -> tuple[np.ndarray, np.ndarray]:
    if length > _POWERS_CACHED:
        return _powers(_BASE, length), _powers(_BASE_INVERSE, length)
    if not _POWERS:
        _POWERS.extend((_powers(_BASE, _POWERS_CACHED), _powers(_BASE_INVERSE, _POWERS_CACHED)))
    return _POWERS[0][:length], _POWERS[1][:length]


def _shingle_hashes(text: str, n: int) -> np.ndarray:
    """``_shingle_hash`` of every n-word shingle of ``text`` (the whole text if it has fewer
    words), without a Python loop: the polynomial of bytes a..b is
    (prefix[b] - prefix[a]) * base**(b - 1), where prefix sums byte * base**-i."""
    data = text.encode("utf-8", "surrogatepass")
    chars = np.frombuffer(data, dtype=np.uint8)
    # words one space apart: str.split's white space is never printable (an ASCII text's
    # bytes are checked with numpy, 6x faster than str.isprintable)
    printable = not ((chars < 32).any() or (chars == 127).any()) if text.isascii() \
        else text.isprintable()
    if not printable or b"  " in data or data[:1] == b" " or data[-1:] == b" ":
        data = " ".join(text.split()).encode("utf-8", "surrogatepass")
        chars = np.frombuffer(data, dtype=np.uint8)
    if not data:
        return np.empty(0, dtype=np.uint64)
    spaces = np.flatnonzero(chars == 32)
    starts = np.concatenate(([0], spaces + 1))
    ends = np.concatenate((spaces, [len(chars)]))
    if len(starts) >= n:
        first, last = starts[:len(starts) - n + 1], ends[n - 1:]
    else:
        first, last = starts[:1], ends[-1:]
    powers, inverse = _power_tables(len(chars))
    prefix = np.zeros(len(chars) + 1, dtype=np.uint64)
    with np.errstate(over="ignore"):
        np.cumsum((chars.astype(np.uint64) + np.uint64(1)) * inverse, out=prefix[1:])
        h = (prefix[last] - prefix[first]) * powers[last - 1] + (last - first).astype(np.uint64)
        h = (h ^ (h >> np.uint64(30))) * np.uint64(_MIX1)
        h = (h ^ (h >> np.uint64(27))) * np.uint64(_MIX2)
        return h ^ (h >> np.uint64(31))


def simhash(text: str, n: int = 3) -> int:
    """64-bit SimHash of ``text`` over n-word shingles weighted by their frequency: bit k is
    set where the weights of the features whose hash has bit k outweigh the others."""
    # every occurrence hashed, uncounted: the sum over occurrences is the sum over shingles
    # of +-weight
    hashes = _shingle_hashes(text, n)
    if not len(hashes):
        return 0
    # unpacked, column j holds bit 63 - j of each hash (no Python loop); the columns are
    # counted by a product with ones (3x faster than a sum over axis 0; exact below 2^24)
    bits = np.unpackbits(hashes.astype(">u8").view(np.uint8).reshape(-1, 8), axis=1)
    if len(hashes) < 1 << 24:
        ones = np.ones(len(hashes), dtype=np.float32) @ bits.astype(np.float32)
    else:
        ones = bits.sum(axis=0, dtype=np.int64)
    return int.from_bytes(np.packbits(2 * ones > len(hashes)).tobytes(), "big")


#: texts of fewer words are matched exactly only, never as near duplicates: over a few dozen
#: shingles SimHash is too noisy for k = 3 (on the real-site corpus, pairs of 45-word Javadoc
#: "class-use" pages, 0.7 alike by shingles, came within 3 bits by chance: 3 pairs with one
#: hash function, 0 with another; none at 100 words or more with either)
NEAR_MIN_WORDS = 100


def near_hash(text: str) -> int:
    """The SimHash a text is compared by for near duplicates, or 0 (exact matches only) for
    a text of fewer than ``NEAR_MIN_WORDS`` words."""
    if text.count(" ") + 1 < NEAR_MIN_WORDS:
        return 0
    return simhash(text)


def hamming(a: int, b: int) -> int:
    return (a ^ b).bit_count()


def _popcount64_swar(x: np.ndarray) -> np.ndarray:
    """Bit counts of a uint64 array (SWAR, no Python loop): NumPy before 2.0."""
    x = x - ((x >> np.uint64(1)) & np.uint64(0x5555555555555555))
    x = (x & np.uint64(0x3333333333333333)) + ((x >> np.uint64(2)) & np.uint64(0x3333333333333333))
    x = (x + (x >> np.uint64(4))) & np.uint64(0x0F0F0F0F0F0F0F0F)
    return ((x * np.uint64(0x0101010101010101)) >> np.uint64(56)).astype(np.int64)


#: bit counts of a uint64 array: NumPy 2's ``bitwise_count`` (one pass over the array) where
#: there is one; a nearest-neighbour look-up in a broad crawl (a 4,096-entry buffer and the
#: tables' block ranges) took 2.1x the time with the SWAR version (docs/broad.md)
_popcount64: Callable[[np.ndarray], np.ndarray] = getattr(np, "bitwise_count", _popcount64_swar)


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
