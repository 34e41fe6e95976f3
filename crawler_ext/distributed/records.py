"""What the Redis frontier keeps of an entry and of a key (see
:mod:`crawler_ext.distributed.frontier` for the layout of a shard): an entry's record (band,
priority rank, fingerprint, then the request) and a key's politeness state with its robots.txt
answers (JSON)."""

from __future__ import annotations

import json
import struct
from dataclasses import asdict, fields

from crawler_ext.frontier.storage import Entry, HostState
from crawler_ext.int64 import to_signed, to_unsigned

__all__ = ["MAX_BANDS", "PRIORITY_RANKS", "REFRESH_RANK", "entry_from", "entry_record",
           "fp_bytes", "fp_from", "priority_rank", "request_of", "state_from", "state_record"]

_HEAD = struct.Struct(">BBQ")  # band, priority rank, fingerprint
_FP = struct.Struct(">Q")
#: Request.priority within a key: 32 ranks (priorities -16..15, beyond them clamped), so that
#: rank, band (< 16) and entry id (< 2^44) fit the 53 exact bits of a sorted-set score
PRIORITY_RANKS = 32
MAX_BANDS = 16
#: added to the rank byte of a refresh entry: it waits in its key's refresh lane
REFRESH_RANK = 128


def priority_rank(priority: int) -> int:
    """0 for the highest priority: a key's back queue is sorted by rank first."""
    half = PRIORITY_RANKS // 2
    return half - 1 - min(max(priority, -half), half - 1)


def entry_record(entry: Entry) -> bytes:
    rank = priority_rank(entry.priority) + (REFRESH_RANK if entry.refresh else 0)
    return _HEAD.pack(entry.band, rank, to_unsigned(entry.fp)) + entry.data


def entry_from(key: str, entry_id: int, record: bytes) -> Entry:
    band, rank, fp = _HEAD.unpack_from(record)
    return Entry(key, band, bytes(record[_HEAD.size:]), fp, entry_id,
                 PRIORITY_RANKS // 2 - 1 - rank % REFRESH_RANK, rank >= REFRESH_RANK)


def request_of(record: bytes) -> bytes:
    """The request part of an entry's record."""
    return record[_HEAD.size:]


def fp_bytes(fp: int) -> bytes:
    return _FP.pack(to_unsigned(fp))


def fp_from(data: bytes) -> int:
    return to_signed(_FP.unpack(data)[0])


def state_record(state: HostState, robots: dict[str, list] | None) -> str:
    data = asdict(state)
    data.pop("in_flight", None)
    data.pop("next_allowed", None)
    if robots:
        data["robots"] = robots
    return json.dumps(data, separators=(",", ":"))


def state_from(record: bytes) -> tuple[HostState, dict[str, list]]:
    if not record:
        return HostState(), {}
    data = json.loads(record)
    robots = data.pop("robots", {})
    names = {f.name for f in fields(HostState)}  # (a compiled HostState has no __slots__)
    return HostState(**{k: v for k, v in data.items() if k in names}), robots
