"""The disk frontier's records (:mod:`crawler_ext.frontier.disk`): their keys and values in the
ordered key-value engine, and the scans that read them back at start-up.

* ``F band position id``             front queue of a band, FIFO (position: the id, or a
                                     later number once the entry was promoted)
* ``B key NUL -priority band id``    back queue of a politeness key (its discovery lane):
                                     priority, band, arrival
* ``B key NUL FF -priority band id`` the key's refresh lane (a recrawl's revisits)
* ``T due id``                       delayed entries, by due time
* ``H key``                          host state (then two counts, no longer read: the back
                                     records are counted from their ranges at recovery)
* ``A position``                     the admission journal: per commit, the fingerprints
                                     admitted, up to that position
* ``M ...``                          counters: entries per band, delayed, next id, journal end

Every record key ends with the entry's id (8 bytes, big-endian); every entry's value is
:func:`entry_value`.
"""

from __future__ import annotations

import math
import struct
import sys
from array import array

from crawler_ext.frontier.kv import KVEngine
from crawler_ext.frontier.storage import Entry, HostState

VALUE = struct.Struct(">QqBH")  # fp, priority, band (+128: a refresh), len(key); then key
                                # and request data
U64 = struct.Struct(">Q")
_BACK_TAIL = struct.Struct(">QBQ")  # a back record's key after its politeness key and lane:
                                    # -priority (+2^63), band, id
DUE = struct.Struct(">d")
# delay, backoff, crawl delay (NaN: none), next, floor; then two counts (the key's back records
# in each lane, as written before 2026-12-03; 0 now: recovery counts the records themselves)
# (HOST_V1: written before the lanes, with one count)
HOST = struct.Struct(">dddddQQ")
HOST_V1 = struct.Struct(">dddddQ")
REFRESH_LANE = b"\xff"
_SIGN = 1 << 63
_JOURNAL_SCAN = 1_000  # journal records (one per commit) per scan


def entry_value(e: Entry) -> bytes:
    key = e.key.encode()
    return VALUE.pack(e.fp, e.priority, e.band | (128 if e.refresh else 0), len(key)) + key + \
        e.data


def entry_of(entry_id: int, value: bytes, key: str | None = None) -> Entry:
    """The entry of a record's value (``key``: its politeness key when known, not decoded)."""
    fp, priority, band, n = VALUE.unpack_from(value)
    start = VALUE.size
    return Entry(value[start:start + n].decode() if key is None else key, band & 127,
                 value[start + n:], fp, entry_id, priority, band >= 128)


def record_id(disk_key: bytes) -> int:
    """The entry id a record key ends with."""
    return U64.unpack_from(disk_key, len(disk_key) - 8)[0]


def back_key(e: Entry) -> bytes:
    return back_record(e.key.encode(), e.refresh, e.priority, e.band, e.id)


def back_record(key: bytes, refresh: bool, priority: int, band: int, entry_id: int) -> bytes:
    return (b"B" + key + (b"\x00" + REFRESH_LANE if refresh else b"\x00")
            + _BACK_TAIL.pack(_SIGN - priority, band, entry_id))


def back_lane_of(disk_key: bytes) -> tuple[str, bool]:
    """(politeness key, refresh lane?) of a back record."""
    end = disk_key.index(b"\x00")
    return disk_key[1:end].decode(), disk_key[end + 1:end + 2] == REFRESH_LANE


def back_range(key: str, refresh: bool) -> tuple[bytes, bytes]:
    """The key range of a politeness key's lane."""
    prefix = b"B" + key.encode() + b"\x00"
    if refresh:
        return prefix + REFRESH_LANE, prefix[:-1] + b"\x01"
    return prefix, prefix + REFRESH_LANE


def front_key(band: int, entry_id: int, position: int | None = None) -> bytes:
    """A front record: its band, its place in the band's FIFO (the entry's id, or a later
    number once promoted), and the entry's id."""
    return b"F" + bytes((band,)) + U64.pack(entry_id if position is None else position) + \
        U64.pack(entry_id)


def delayed_key(due: float, entry_id: int) -> bytes:
    return b"T" + DUE.pack(max(due, 0.0)) + U64.pack(entry_id)


def host_record(s: HostState) -> bytes:
    return HOST.pack(s.delay, s.backoff, math.nan if s.crawl_delay is None else s.crawl_delay,
                     s.next_allowed, s.floor, 0, 0)


def journal_bytes(fps: array) -> bytes:
    if sys.byteorder != "little":
        fps = array("Q", fps)
        fps.byteswap()
    return fps.tobytes()


# -- reading back -------------------------------------------------------------------------------
def read_counter(meta: dict[bytes, bytes], name: bytes, default: int = 0) -> int:
    return U64.unpack(meta.get(name, U64.pack(default)))[0]


def read_meta(kv: KVEngine) -> dict[bytes, bytes]:
    return dict(kv.scan(b"M", b"N", 1_000))


def band_counts(meta: dict[bytes, bytes], bands: int, directory: object) -> list[int]:
    """The entries of each front band; a ValueError if bands past ``bands`` hold any."""
    extra = [k for k in meta if k.startswith(b"Mband") and k[5] >= bands
             and read_counter(meta, k)]
    if extra:  # its entries would never be handed out: say so rather than lose them
        raise ValueError(f"the disk frontier in {directory} holds entries in "
                         f"{max(k[5] for k in extra) + 1} bands; resume it with "
                         f"CRAWLER_EXT_FRONTIER_BANDS set as when it was written")
    return [read_counter(meta, b"Mband" + bytes((band,))) for band in range(bands)]


def read_hosts(kv: KVEngine) -> dict[str, HostState]:
    """Every host record (either format: the same five fields first)."""
    hosts = {}
    start = b"H"
    while rows := kv.scan(start, b"I", 10_000):
        for disk_key, value in rows:
            delay, backoff, crawl_delay, next_allowed, floor = HOST_V1.unpack_from(value)[:5]
            hosts[disk_key[1:].decode()] = HostState(
                delay, backoff, None if math.isnan(crawl_delay) else crawl_delay,
                next_allowed, floor)
        start = rows[-1][0] + b"\x00"
    return hosts


def count_back_records(kv: KVEngine) -> dict[tuple[str, bool], int]:
    """(politeness key, refresh lane?) -> its back records on disk."""
    counts: dict[tuple[str, bool], int] = {}
    start = b"B"
    while rows := kv.scan(start, b"C", 10_000):
        for disk_key, _ in rows:
            lane = back_lane_of(disk_key)
            counts[lane] = counts.get(lane, 0) + 1
        start = rows[-1][0] + b"\x00"
    return counts


def read_journal(kv: KVEngine, mark: int) -> tuple[list[int], int]:
    """The fingerprints admitted after journal position ``mark``, and the last position."""
    fps: list[int] = []
    last = mark
    while rows := kv.scan(b"A" + U64.pack(last + 1), b"B", _JOURNAL_SCAN):
        for disk_key, value in rows:
            end = U64.unpack_from(disk_key, 1)[0]
            batch = array("Q")
            batch.frombytes(value)
            if sys.byteorder != "little":
                batch.byteswap()
            fps.extend(batch[len(batch) - (end - last):])  # positions after ``last``
            last = end
    return fps, last
