"""The out-of-core frontier store (``CRAWLER_EXT_FRONTIER_BACKEND=disk``, the default under
``JOBDIR``): queue bodies on disk, only queue heads in memory.

Every queue -- a front queue per band, a back queue per politeness key, the delayed entries --
is a sorted key range of an ordered key-value engine (:mod:`crawler_ext.frontier.kv`):

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

In memory there are the counters, the host state of each key, and for each queue a head: its
best entries, at most ``front_room`` / ``back_room`` / ``delay_room`` of them, read from disk
in one scan when the head runs dry.  An entry's record is written once when it is admitted.
Routed to a back queue whose head has room for it, it stays a front record, behind the front
queue's cursor (a scan never reads it again), until ``complete`` deletes it; it is moved to a
back record (front -> back) only when it has to wait on disk: its back queue's head is full.
So a typical entry costs two writes, not four.  A record handed out stays on disk until
``complete`` deletes it, so after a kill -9 everything not completed is queued again (an entry
routed but not moved joins its front queue again).  Writes are batched
and committed by ``flush`` (every ``CRAWLER_EXT_FRONTIER_FLUSH_INTERVAL``); a head that runs dry
commits first if a write not committed yet lies in the range it scans, so that the scan sees
it (a commit before every head read was a fifth of dispatch's time).
"""

from __future__ import annotations

import math
import struct
import sys
from array import array
from bisect import insort
from pathlib import Path

from crawler_ext.frontier.kv import KVEngine
from crawler_ext.frontier.storage import Entry, HostState, KeyState

__all__ = ["DiskStore"]

_VALUE = struct.Struct(">QqBH")  # fp, priority, band (+128: a refresh), len(key); then key
                                 # and request data
_U64 = struct.Struct(">Q")
_BACK_TAIL = struct.Struct(">QBQ")  # a back record's key after its politeness key and lane:
                                    # -priority (+2^63), band, id
_DUE = struct.Struct(">d")
# delay, backoff, crawl delay (NaN: none), next, floor; then two counts (the key's back records
# in each lane, as written before 2026-12-03; 0 now: recovery counts the records themselves)
# (_HOST_V1: written before the lanes, with one count)
_HOST = struct.Struct(">dddddQQ")
_HOST_V1 = struct.Struct(">dddddQ")
_REFRESH_LANE = b"\xff"
_SIGN = 1 << 63
_JOURNAL_SCAN = 1_000  # journal records (one per commit) per scan
_SPARE_QUEUES = 4_096  # emptied back queues kept for the next keys


def _value(e: Entry) -> bytes:
    key = e.key.encode()
    return _VALUE.pack(e.fp, e.priority, e.band | (128 if e.refresh else 0), len(key)) + key + \
        e.data


def _entry(entry_id: int, value: bytes, key: str | None = None) -> Entry:
    """The entry of a record's value (``key``: its politeness key when known, not decoded)."""
    fp, priority, band, n = _VALUE.unpack_from(value)
    start = _VALUE.size
    return Entry(value[start:start + n].decode() if key is None else key, band & 127,
                 value[start + n:], fp, entry_id, priority, band >= 128)


def _journal_bytes(fps: array) -> bytes:
    if sys.byteorder != "little":
        fps = array("Q", fps)
        fps.byteswap()
    return fps.tobytes()


def _back_key(e: Entry) -> bytes:
    return _back_record(e.key.encode(), e.refresh, e.priority, e.band, e.id)


def _back_record(key: bytes, refresh: bool, priority: int, band: int, entry_id: int) -> bytes:
    return (b"B" + key + (b"\x00" + _REFRESH_LANE if refresh else b"\x00")
            + _BACK_TAIL.pack(_SIGN - priority, band, entry_id))


def _front_key(band: int, entry_id: int, position: int | None = None) -> bytes:
    """A front record: its band, its place in the band's FIFO (the entry's id, or a later
    number once promoted), and the entry's id."""
    return b"F" + bytes((band,)) + _U64.pack(entry_id if position is None else position) + \
        _U64.pack(entry_id)


class _Queue:
    """A sorted key range on disk and, in memory, every record up to ``cursor`` not yet taken
    (the head: at most ``room`` of them, except records that sort before the cursor).  The
    next scan starts after the cursor, so it never walks over records already consumed (an
    LSM engine keeps their tombstones there).  ``dirty``: the number of the commit to come
    when a write not committed yet fell after the cursor (a record not kept in the head, or a
    deletion there): then, and only then, a scan must wait for that commit."""

    __slots__ = ("start", "stop", "head", "count", "cursor", "dirty")

    def __init__(self, start: bytes, stop: bytes, count: int = 0) -> None:
        self.start, self.stop = start, stop
        # (record key, record value): plain bytes, decoded when taken -- a head of Entry
        # objects made every entry read from disk an object for the garbage collector to walk
        # in each full collection while it waited (one such collection every few ten
        # thousand dispatches)
        self.head: list[tuple[bytes, bytes]] = []
        self.count = count  # records in the range (for a back queue: not handed out)
        self.cursor = start  # records after it are on disk only
        self.dirty = -1

    def reset(self, start: bytes, stop: bytes, count: int) -> None:
        """Serve another range (a spare queue taken again: see ``DiskStore._spare``)."""
        self.start, self.stop = start, stop
        self.head.clear()
        self.count = count
        self.cursor = start
        self.dirty = -1

    def add(self, disk_key: bytes, value: bytes, room: int,
            commit: int) -> tuple[bytes, bytes] | None:
        """A record joins the range (``commit``: the number of the commit it goes in): kept in
        the head if it belongs there.  The record now after the cursor, if any (the new one,
        or the one it pushed out of a full head): it must be on disk, as a scan reads it."""
        head = self.head
        self.count += 1
        if disk_key <= self.cursor:
            insort(head, (disk_key, value))
            if len(head) > room:
                out = head.pop()  # on disk, read again when its turn comes
                self.cursor = head[-1][0]
                self.dirty = commit
                return out
            return None
        if len(head) + 1 == self.count and len(head) < room:
            head.append((disk_key, value))
            self.cursor = disk_key
            return None
        self.dirty = commit
        return (disk_key, value)

    def deleted(self, disk_key: bytes, commit: int) -> None:
        """A record of the range is deleted in that commit."""
        if disk_key > self.cursor:
            self.dirty = commit


class DiskStore(KeyState):
    """The frontier store contract (:class:`~crawler_ext.frontier.contract.FrontierStore`) with
    queue bodies in an ordered key-value engine."""

    durable = True

    def __init__(self, directory: str | Path, bands: int, engine: KVEngine,
                 front_room: int = 512, back_room: int = 16, delay_room: int = 256) -> None:
        self.directory = Path(directory)
        self.bands = bands
        self.kv = engine
        self.front_room, self.back_room, self.delay_room = front_room, back_room, delay_room
        self._front = [_Queue(b"F" + bytes((b,)), b"F" + bytes((b + 1,))) for b in range(bands)]
        self._lanes: tuple[dict[str, _Queue], dict[str, _Queue]] = ({}, {})  # discovery, refresh
        self._delayed = _Queue(b"T", b"U")
        self._taken: dict[int, bytes] = {}  # handed out, not completed: id -> record key
        # routed entries whose record is still their front record (in a back queue's head, or
        # handed out): id -> front record key; and how many there are per band (the band's
        # count on disk includes them: after a stop they are front entries again)
        self._unmoved: dict[int, bytes] = {}
        self._unmoved_bands = [0] * bands
        self._promoted: dict[int, int] = {}  # promoted entries still in front: id -> position
        # handed out, not completed, per key, in each lane
        self._taken_lanes: tuple[dict[str, int], dict[str, int]] = ({}, {})
        self._changed_hosts: set[str] = set()
        # back queues emptied, kept to serve the next keys: with more hosts than active keys,
        # a key's queue lives from its routing to its turn, long enough for the garbage
        # collector to promote it (and its head) to the old generation, which paces full
        # collections (a queue and its head were made and dropped per dispatch)
        self._spare: list[_Queue] = []
        KeyState.__init__(self)
        self._puts: dict[bytes, bytes] = {}
        self._dels: set[bytes] = set()
        self._next_id = 1
        self._journal = array("Q")  # admissions not committed yet
        self._mark = 0  # journal position of the last admission committed
        self.commits = 0
        self.head_loads = 0

    # -- lifecycle ----------------------------------------------------------------------------
    def open(self) -> None:
        self.kv.open(self.directory)
        meta = dict(self.kv.scan(b"M", b"N", 1_000))
        self._next_id = _U64.unpack(meta.get(b"Mid", _U64.pack(1)))[0]
        self._mark = _U64.unpack(meta.get(b"Mjournal", _U64.pack(0)))[0]
        for band, queue in enumerate(self._front):
            queue.count = _U64.unpack(meta.get(b"Mband" + bytes((band,)), _U64.pack(0)))[0]
        extra = [k for k, v in meta.items() if k.startswith(b"Mband") and k[5] >= self.bands
                 and _U64.unpack(v)[0]]
        if extra:  # its entries would never be handed out: say so rather than lose them
            raise ValueError(f"the disk frontier in {self.directory} holds entries in "
                             f"{max(k[5] for k in extra) + 1} bands; resume it with "
                             f"CRAWLER_EXT_FRONTIER_BANDS set as when it was written")
        self._delayed.count = _U64.unpack(meta.get(b"Mdelayed", _U64.pack(0)))[0]

    def recover(self) -> int:
        """Load the host state and count the back queues' records; the records stay on disk,
        heads are read when needed.  Records handed out before the stop are queued again."""
        start = b"H"
        while rows := self.kv.scan(start, b"I", 10_000):
            for disk_key, value in rows:
                delay, backoff, crawl_delay, next_allowed, floor = \
                    _HOST_V1.unpack_from(value)[:5]  # (either format: the same five first)
                self._hosts[disk_key[1:].decode()] = HostState(
                    delay, backoff, None if math.isnan(crawl_delay) else crawl_delay,
                    next_allowed, floor)
            start = rows[-1][0] + b"\x00"
        counts: dict[tuple[str, bool], int] = {}
        start = b"B"
        while rows := self.kv.scan(start, b"C", 10_000):
            for disk_key, _ in rows:
                end = disk_key.index(b"\x00")
                lane = (disk_key[1:end].decode(), disk_key[end + 1:end + 2] == _REFRESH_LANE)
                counts[lane] = counts.get(lane, 0) + 1
            start = rows[-1][0] + b"\x00"
        for (key, refresh), count in counts.items():
            self._lanes[refresh][key] = self._back_queue(key, refresh, count)
        return self.pending()

    def back_keys(self) -> list[str]:
        return list(self._lanes[0].keys() | self._lanes[1].keys())

    def close(self, commit: bool = True) -> None:
        """``commit=False``: a disk filled up; what is pending is dropped (it is fetched again)
        and the engine's own failure to close on the full disk is not reported twice."""
        try:
            if commit:
                self.flush()
        finally:
            try:
                self.kv.close()
            except OSError:
                if commit:
                    raise

    def flush(self) -> None:
        if self._puts or self._dels or self._changed_hosts or self._journal:
            self._commit()

    def _commit(self) -> None:
        puts = self._puts
        hosts, pack, nan = self._hosts, _HOST.pack, math.nan
        for key in self._changed_hosts:  # (one record per host changed: kept in one loop)
            s = hosts[key]
            puts[b"H" + key.encode()] = pack(
                s.delay, s.backoff, nan if s.crawl_delay is None else s.crawl_delay,
                s.next_allowed, s.floor, 0, 0)
        unmoved = self._unmoved_bands
        for band, queue in enumerate(self._front):
            puts[b"Mband" + bytes((band,))] = _U64.pack(queue.count + unmoved[band])
        puts[b"Mdelayed"] = _U64.pack(self._delayed.count)
        puts[b"Mid"] = _U64.pack(self._next_id)
        mark = self._mark + len(self._journal)
        if self._journal:  # one record per commit: its last position -> the fingerprints
            puts[b"A" + _U64.pack(mark)] = _journal_bytes(self._journal)
            self._journal = array("Q")
        puts[b"Mjournal"] = _U64.pack(mark)
        self.kv.write(puts, self._dels)
        self._mark = mark
        self._puts = {}
        self._dels = set()
        self._changed_hosts.clear()
        self.commits += 1

    # -- records ------------------------------------------------------------------------------
    def _put(self, disk_key: bytes, value: bytes) -> None:
        self._puts[disk_key] = value

    def _delete(self, disk_key: bytes) -> None:
        if self._puts.pop(disk_key, None) is None:
            self._dels.add(disk_key)
        # (a record written and deleted within one batch never reaches the disk)

    def _assign_id(self, entry: Entry) -> None:
        if not entry.id:
            entry.id = self._next_id
            self._next_id += 1

    def _load(self, queue: _Queue, room: int, skip: int = 0) -> None:
        """Read the queue's next records from disk (after committing, if a write not committed
        yet lies in the range the scan covers); ``skip``: records of the range handed out and
        not completed."""
        if queue.dirty == self.commits:
            self._commit()
        self.head_loads += 1
        taken = self._taken
        rows = self.kv.scan(queue.cursor + b"\x00", queue.stop, room + skip)
        for disk_key, value in rows:
            entry_id = _U64.unpack_from(disk_key, len(disk_key) - 8)[0]
            queue.cursor = disk_key
            if entry_id in taken:
                continue
            queue.head.append((disk_key, value))
            if len(queue.head) >= room:
                break
        if not queue.head and len(rows) < room + skip:  # the counter was ahead of the disk
            queue.count = 0

    def _pop(self, queue: _Queue, room: int, skip: int = 0) -> tuple[bytes, bytes] | None:
        """The queue's first record: (record key, value)."""
        while not queue.head:
            if queue.count <= 0:
                return None
            self._load(queue, room, skip)
        queue.count -= 1
        return queue.head.pop(0)

    def _back_queue(self, key: str, refresh: bool, count: int = 0) -> _Queue:
        prefix = b"B" + key.encode() + b"\x00"
        if refresh:
            start, stop = prefix + _REFRESH_LANE, prefix[:-1] + b"\x01"
        else:
            start, stop = prefix, prefix + _REFRESH_LANE
        if self._spare:
            queue = self._spare.pop()
            queue.reset(start, stop, count)
            return queue
        return _Queue(start, stop, count)

    # -- front queues -------------------------------------------------------------------------
    def front_push(self, entries: list[Entry]) -> None:
        for entry in entries:
            self._assign_id(entry)
            disk_key, value = _front_key(entry.band, entry.id), _value(entry)
            self._put(disk_key, value)
            self._front[entry.band].add(disk_key, value, self.front_room, self.commits)
            if entry.fp:
                self._journal.append(entry.fp)

    def route(self, band: int) -> tuple[str, int] | None:
        """The band's first front record joins its key's back queue (read, not decoded: its
        value is the same); it stays on disk as it is unless it has to wait there."""
        item = self._pop(self._front[band], self.front_room)
        if item is None:
            return None
        front_key, value = item
        entry_id = _U64.unpack_from(front_key, len(front_key) - 8)[0]
        if self._promoted:
            self._promoted.pop(entry_id, None)
        fp, priority, flags, n = _VALUE.unpack_from(value)
        key_bytes = value[_VALUE.size:_VALUE.size + n]
        key, refresh = key_bytes.decode(), flags >= 128
        self._unmoved[entry_id] = front_key
        self._unmoved_bands[band] += 1
        self._back_add(key, refresh, _back_record(key_bytes, refresh, priority, flags & 127,
                                                  entry_id), value)
        return key, fp

    def front_sizes(self) -> list[int]:
        return [queue.count for queue in self._front]

    def front_promote(self, entry: Entry, band: int) -> None:
        old = self._front[entry.band]
        disk_key = _front_key(entry.band, entry.id, self._promoted.get(entry.id))
        self._delete(disk_key)
        old.deleted(disk_key, self.commits)
        for i, (k, _) in enumerate(old.head):
            if k == disk_key:
                del old.head[i]
                break
        old.count -= 1
        entry.band = band
        # it joins the end of its new band (as in the memory store), keeping its id: within
        # its key's back queue it still ranks by arrival
        position = self._promoted[entry.id] = self._next_id
        self._next_id += 1
        disk_key, value = _front_key(band, entry.id, position), _value(entry)
        self._put(disk_key, value)
        self._front[band].add(disk_key, value, self.front_room, self.commits)

    # -- back queues --------------------------------------------------------------------------
    def back_push(self, entry: Entry) -> None:
        key = entry.key
        taken = self._taken_lanes[entry.refresh]
        disk_key = self._taken.pop(entry.id, None) if entry.id else None
        value = _value(entry)
        if disk_key is not None:  # handed out and given back: its record is still on disk
            taken[key] -= 1
            if not taken[key]:
                del taken[key]
        else:
            self._assign_id(entry)
            disk_key = _back_key(entry)
            self._put(disk_key, value)
        self._back_add(key, entry.refresh, disk_key, value)

    def _back_add(self, key: str, refresh: bool, disk_key: bytes, value: bytes) -> None:
        """A record is in the key's back queue (its lane's): the queue's head and count."""
        lane = self._lanes[refresh]
        queue = lane.get(key)
        if queue is None:
            queue = lane[key] = self._back_queue(key, refresh)
        self._spill(queue.add(disk_key, value, self.back_room, self.commits))

    def _spill(self, out: tuple[bytes, bytes] | None) -> None:
        """A back record now after its queue's cursor (``_Queue.add``): if it is still its
        front record, it moves to the back record a scan will read."""
        if out is None or not self._unmoved:
            return
        disk_key = out[0]
        front_key = self._unmoved.pop(_U64.unpack_from(disk_key, len(disk_key) - 8)[0], None)
        if front_key is not None:
            self._delete(front_key)
            self._unmoved_bands[front_key[1]] -= 1
            self._put(disk_key, out[1])

    def _forget_front(self, entry_id: int) -> bool:
        """Delete a routed entry's front record, if that is still its record."""
        front_key = self._unmoved.pop(entry_id, None) if self._unmoved else None
        if front_key is None:
            return False
        self._delete(front_key)
        self._unmoved_bands[front_key[1]] -= 1
        return True

    def back_pop(self, key: str, refresh: bool = False) -> Entry | None:
        lane, taken = self._lanes[refresh], self._taken_lanes[refresh]
        queue = lane.get(key)
        if queue is None:
            return None
        item = self._pop(queue, self.back_room, taken.get(key, 0))
        if queue.count <= 0 and not queue.head:
            del lane[key]
            if len(self._spare) < _SPARE_QUEUES:
                self._spare.append(queue)
        if item is None:
            return None
        disk_key = item[0]
        entry = _entry(_U64.unpack_from(disk_key, len(disk_key) - 8)[0], item[1], key)
        self._taken[entry.id] = disk_key
        taken[key] = taken.get(key, 0) + 1
        return entry

    def back_head(self, key: str, n: int) -> list[Entry]:
        """The first ``n`` entries of the key's back queue held in memory (its head)."""
        out = []
        for lane in self._lanes:
            queue = lane.get(key)
            if queue is not None:
                out += [_entry(_U64.unpack_from(k, len(k) - 8)[0], v, key)
                        for k, v in list(queue.head)[:n]]
        return out[:n]

    def back_size(self, key: str) -> int:
        discovery, refresh = self._lanes[0].get(key), self._lanes[1].get(key)
        return (discovery.count if discovery is not None else 0) + \
            (refresh.count if refresh is not None else 0)

    def back_lanes(self, key: str) -> tuple[int, int]:
        discovery, refresh = self._lanes[0].get(key), self._lanes[1].get(key)
        return (discovery.count if discovery is not None else 0,
                refresh.count if refresh is not None else 0)

    def back_promote(self, entry: Entry, band: int) -> bool:
        """Its record moves to the better band's place in its key's range (in the head, if
        it sorts there); the head is searched only, so any queue length will do."""
        queue = self._lanes[entry.refresh].get(entry.key)
        if queue is None:
            return False
        old = _back_key(entry)
        for i, (disk_key, _) in enumerate(queue.head):
            if disk_key == old:
                del queue.head[i]
                break
        else:
            if old <= queue.cursor:  # not queued here any more
                return False
        if not self._forget_front(entry.id):
            self._delete(old)
            queue.deleted(old, self.commits)
        queue.count -= 1
        entry.band = band
        disk_key, value = _back_key(entry), _value(entry)
        self._put(disk_key, value)
        self._spill(queue.add(disk_key, value, self.back_room, self.commits))
        return True

    # -- leases -------------------------------------------------------------------------------
    def lease(self, entry: Entry) -> None:
        pass  # a record handed out by back_pop is kept until complete()

    def complete(self, entry_ids: list[int]) -> None:
        for entry_id in entry_ids:
            disk_key = self._taken.pop(entry_id, None)
            if disk_key is None:
                continue
            end = disk_key.index(b"\x00")
            key = disk_key[1:end].decode()
            refresh = disk_key[end + 1:end + 2] == _REFRESH_LANE
            if not self._forget_front(entry_id):
                self._delete(disk_key)
                queue = self._lanes[refresh].get(key)
                # (a key without a queue now: one made for it later has its cursor at the
                # start, and scans only for a record it put on disk, which marks it dirty in
                # the same commit as this deletion, or after that commit)
                if queue is not None:
                    queue.deleted(disk_key, self.commits)
            taken = self._taken_lanes[refresh]
            left = taken[key] - 1
            if left:
                taken[key] = left
            else:
                del taken[key]

    # -- host state (``host()``: KeyState) ----------------------------------------------------
    def host_changed(self, key: str) -> None:
        self._changed_hosts.add(key)

    def pending(self) -> int:
        return (sum(q.count for q in self._front)
                + sum(q.count for lane in self._lanes for q in lane.values())
                + self._delayed.count)

    # -- delayed entries ----------------------------------------------------------------------
    def delay_push(self, entries: list[Entry], due: float) -> None:
        for entry in entries:
            self._assign_id(entry)
            disk_key, value = b"T" + _DUE.pack(max(due, 0.0)) + _U64.pack(entry.id), \
                _value(entry)
            self._put(disk_key, value)
            self._delayed.add(disk_key, value, self.delay_room, self.commits)

    def release_due(self, now: float) -> list[Entry]:
        due: list[Entry] = []
        queue = self._delayed
        if queue.count <= 0:  # (asked before every dispatch)
            return due
        while (when := self.next_due()) is not None and when <= now:
            disk_key, value = queue.head.pop(0)
            queue.count -= 1
            self._delete(disk_key)
            due.append(_entry(0, value))
        for entry in due:  # a new front record, at the end of its band's queue
            self._assign_id(entry)
            disk_key, value = _front_key(entry.band, entry.id), _value(entry)
            self._put(disk_key, value)
            self._front[entry.band].add(disk_key, value, self.front_room, self.commits)
        return due

    def next_due(self) -> float | None:
        queue = self._delayed
        while not queue.head:
            if queue.count <= 0:
                return None
            self._load(queue, self.delay_room)
        return _DUE.unpack_from(queue.head[0][0], 1)[0]

    def delayed(self) -> int:
        return self._delayed.count

    # -- the admission journal ----------------------------------------------------------------
    def admitted_since(self, mark: int) -> tuple[list[int], int]:
        fps: list[int] = []
        last = mark
        while rows := self.kv.scan(b"A" + _U64.pack(last + 1), b"B", _JOURNAL_SCAN):
            for disk_key, value in rows:
                end = _U64.unpack_from(disk_key, 1)[0]
                batch = array("Q")
                batch.frombytes(value)
                if sys.byteorder != "little":
                    batch.byteswap()
                fps.extend(batch[len(batch) - (end - last):])  # positions after ``last``
                last = end
        return fps, last

    def admitted_mark(self) -> int:
        return self._mark
