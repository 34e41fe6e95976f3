"""The out-of-core frontier store (``CRAWLER_EXT_FRONTIER_BACKEND=disk``, the default under
``JOBDIR``): queue bodies on disk, only queue heads in memory.

Every queue -- a front queue per band, a back queue per politeness key (in two lanes), the
delayed entries -- is a sorted key range of an ordered key-value engine
(:mod:`crawler_ext.frontier.kv`; the records: :mod:`crawler_ext.frontier.diskformat`).

In memory there are the counters, the host state of each key, and for each queue a head: its
best entries, at most ``front_room`` / ``back_room`` / ``delay_room`` of them, read from disk
in one scan when the head runs dry.  A back queue's head is small (4): a broad crawl holds one
per host it knows, and a host is served one fetch per politeness delay (``docs/broad.md``
has the memory measured per host).  An entry's record is written once when it is admitted.
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

from pathlib import Path

from crawler_ext.frontier.diskbatch import WriteBatch
from crawler_ext.frontier.diskformat import (DUE, VALUE, back_key, back_lane_of, back_record,
                                             band_counts, count_back_records, delayed_key, entry_of,
                                             entry_value, front_key, host_record, read_counter,
                                             read_hosts, read_meta, record_id)
from crawler_ext.frontier.diskqueue import BackLanes, DiskQueue, Unmoved
from crawler_ext.frontier.kv import KVEngine
from crawler_ext.frontier.storage import Entry, KeyState

__all__ = ["DiskStore"]


class DiskStore(KeyState):
    """The frontier store contract (:class:`~crawler_ext.frontier.contract.FrontierStore`) with
    queue bodies in an ordered key-value engine."""

    durable = True

    def __init__(self, directory: str | Path, bands: int, engine: KVEngine,
                 front_room: int = 512, back_room: int = 4, delay_room: int = 256) -> None:
        self.directory = Path(directory)
        self.bands = bands
        self.kv = engine
        self.front_room, self.back_room, self.delay_room = front_room, back_room, delay_room
        self._front = [DiskQueue(b"F" + bytes((b,)), b"F" + bytes((b + 1,)))
                       for b in range(bands)]
        self._back = BackLanes()
        self._delayed = DiskQueue(b"T", b"U")
        self._taken: dict[int, bytes] = {}  # handed out, not completed: id -> record key
        self._unmoved = Unmoved(bands)
        self._promoted: dict[int, int] = {}  # promoted entries still in front: id -> position
        self._changed_hosts: set[str] = set()
        KeyState.__init__(self)
        self._batch = WriteBatch(engine)
        self.head_loads = 0

    @property
    def commits(self) -> int:
        return self._batch.commits

    # -- lifecycle ----------------------------------------------------------------------------
    def open(self) -> None:
        self.kv.open(self.directory)
        meta = read_meta(self.kv)
        self._batch.opened(meta)
        for queue, count in zip(self._front, band_counts(meta, self.bands, self.directory)):
            queue.count = count
        self._delayed.count = read_counter(meta, b"Mdelayed")

    def recover(self) -> int:
        """Load the host state and count the back queues' records; the records stay on disk,
        heads are read when needed.  Records handed out before the stop are queued again."""
        self._hosts.update(read_hosts(self.kv))
        for (key, refresh), count in count_back_records(self.kv).items():
            self._back.queue(key, refresh, count)
        return self.pending()

    def back_keys(self) -> list[str]:
        return self._back.keys()

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
        if self._batch.pending() or self._changed_hosts:
            self._commit()

    def _commit(self) -> None:
        puts, hosts = self._batch.puts, self._hosts
        for key in self._changed_hosts:  # (one record per host changed: kept in one loop)
            puts[b"H" + key.encode()] = host_record(hosts[key])
        self._changed_hosts.clear()
        self._batch.write([q.count + n for q, n in zip(self._front, self._unmoved.per_band)],
                          self._delayed.count)

    # -- heads --------------------------------------------------------------------------------
    def _load(self, queue: DiskQueue, room: int, skip: int = 0) -> None:
        """Read the queue's next records from disk (after committing, if a write not committed
        yet lies in the range the scan covers); ``skip``: records of the range handed out and
        not completed."""
        if queue.dirty == self._batch.commits:
            self._commit()
        self.head_loads += 1
        queue.read(self.kv, room, skip, self._taken)

    def _pop(self, queue: DiskQueue, room: int, skip: int = 0) -> tuple[bytes, bytes] | None:
        """The queue's first record: (record key, value)."""
        while not queue.head:
            if queue.count <= 0:
                return None
            self._load(queue, room, skip)
        queue.count -= 1
        return queue.head.pop(0)

    def _front_add(self, entry: Entry, position: int | None = None) -> None:
        """A new front record, at the end of its band's queue."""
        self._queued(self._front[entry.band], self.front_room,
                     front_key(entry.band, entry.id, position), entry)

    def _queued(self, queue: DiskQueue, room: int, disk_key: bytes, entry: Entry) -> None:
        value = entry_value(entry)
        self._batch.put(disk_key, value)
        queue.add(disk_key, value, room, self._batch.commits)

    # -- front queues -------------------------------------------------------------------------
    def front_push(self, entries: list[Entry]) -> None:
        batch = self._batch
        for entry in entries:
            batch.assign_id(entry)
            self._front_add(entry)
            if entry.fp:
                batch.admitted(entry.fp)

    def route(self, band: int) -> tuple[str, int] | None:
        """The band's first front record joins its key's back queue (read, not decoded: its
        value is the same); it stays on disk as it is unless it has to wait there."""
        item = self._pop(self._front[band], self.front_room)
        if item is None:
            return None
        front_record, value = item
        entry_id = record_id(front_record)
        if self._promoted:
            self._promoted.pop(entry_id, None)
        fp, priority, flags, n = VALUE.unpack_from(value)
        key_bytes = value[VALUE.size:VALUE.size + n]
        key, refresh = key_bytes.decode(), flags >= 128
        self._unmoved.routed(entry_id, front_record)
        self._back_add(key, refresh, back_record(key_bytes, refresh, priority, flags & 127,
                                                 entry_id), value)
        return key, fp

    def front_sizes(self) -> list[int]:
        return [queue.count for queue in self._front]

    def front_promote(self, entry: Entry, band: int) -> None:
        disk_key = front_key(entry.band, entry.id, self._promoted.get(entry.id))
        self._batch.delete(disk_key)
        self._front[entry.band].remove(disk_key, self._batch.commits)
        entry.band = band
        # it joins the end of its new band (as in the memory store), keeping its id: within
        # its key's back queue it still ranks by arrival
        position = self._promoted[entry.id] = self._batch.new_id()
        self._front_add(entry, position)

    # -- back queues --------------------------------------------------------------------------
    def back_push(self, entry: Entry) -> None:
        disk_key = self._taken.pop(entry.id, None) if entry.id else None
        value = entry_value(entry)
        if disk_key is not None:  # handed out and given back: its record is still on disk
            self._back.returned(entry.key, entry.refresh)
        else:
            self._batch.assign_id(entry)
            disk_key = back_key(entry)
            self._batch.put(disk_key, value)
        self._back_add(entry.key, entry.refresh, disk_key, value)

    def _back_add(self, key: str, refresh: bool, disk_key: bytes, value: bytes) -> None:
        """A record is in the key's back queue (its lane's): the queue's head and count."""
        queue = self._back.queue(key, refresh)
        self._spill(queue.add(disk_key, value, self.back_room, self._batch.commits))

    def _spill(self, out: tuple[bytes, bytes] | None) -> None:
        """A back record now after its queue's cursor (``DiskQueue.add``): if it is still its
        front record, it moves to the back record a scan will read."""
        if out is not None and self._forget_front(record_id(out[0])):
            self._batch.put(out[0], out[1])

    def _forget_front(self, entry_id: int) -> bool:
        """Delete a routed entry's front record, if that is still its record."""
        front_record = self._unmoved.moved(entry_id)
        if front_record is None:
            return False
        self._batch.delete(front_record)
        return True

    def back_pop(self, key: str, refresh: bool = False) -> Entry | None:
        back = self._back
        queue = back.get(key, refresh)
        if queue is None:
            return None
        item = self._pop(queue, self.back_room, back.handed_out(key, refresh))
        if queue.count <= 0 and not queue.head:
            back.emptied(key, refresh)
        if item is None:
            return None
        disk_key = item[0]
        entry = entry_of(record_id(disk_key), item[1], key)
        self._taken[entry.id] = disk_key
        back.took(key, refresh)
        return entry

    def back_head(self, key: str, n: int) -> list[Entry]:
        """The first ``n`` entries of the key's back queue held in memory (its head)."""
        return [entry_of(record_id(k), v, key) for k, v in self._back.heads(key)[:n]]

    def back_size(self, key: str) -> int:
        return sum(self._back.sizes(key))

    def back_lanes(self, key: str) -> tuple[int, int]:
        return self._back.sizes(key)

    def back_promote(self, entry: Entry, band: int) -> bool:
        """Its record moves to the better band's place in its key's range (in the head, if
        it sorts there); the head is searched only, so any queue length will do."""
        queue = self._back.get(entry.key, entry.refresh)
        if queue is None:
            return False
        old = back_key(entry)
        if not queue.remove(old, self._batch.commits):  # not queued here any more
            return False
        if not self._forget_front(entry.id):
            self._batch.delete(old)
        entry.band = band
        disk_key, value = back_key(entry), entry_value(entry)
        self._batch.put(disk_key, value)
        self._spill(queue.add(disk_key, value, self.back_room, self._batch.commits))
        return True

    # -- leases -------------------------------------------------------------------------------
    def lease(self, entry: Entry) -> None:
        pass  # a record handed out by back_pop is kept until complete()

    def complete(self, entry_ids: list[int]) -> None:
        for entry_id in entry_ids:
            disk_key = self._taken.pop(entry_id, None)
            if disk_key is None:
                continue
            key, refresh = back_lane_of(disk_key)
            if not self._forget_front(entry_id):
                self._batch.delete(disk_key)
                queue = self._back.get(key, refresh)
                # (a key without a queue now: one made for it later has its cursor at the
                # start, and scans only for a record it put on disk, which marks it dirty in
                # the same commit as this deletion, or after that commit)
                if queue is not None:
                    queue.deleted(disk_key, self._batch.commits)
            self._back.returned(key, refresh)

    # -- host state (``host()``: KeyState) ----------------------------------------------------
    def host_changed(self, key: str) -> None:
        self._changed_hosts.add(key)

    def pending(self) -> int:
        return (sum(q.count for q in self._front) + self._back.pending()
                + self._delayed.count)

    def held_in_memory(self) -> int:
        """Records held in the queues' heads (the rest is on disk only)."""
        return (sum(len(q.head) for q in self._front) + self._back.held()
                + len(self._delayed.head))

    def uncommitted(self) -> int:
        """Records put or deleted since the last commit."""
        return self._batch.writes()

    # -- delayed entries ----------------------------------------------------------------------
    def delay_push(self, entries: list[Entry], due: float) -> None:
        for entry in entries:
            self._batch.assign_id(entry)
            self._queued(self._delayed, self.delay_room, delayed_key(due, entry.id), entry)

    def release_due(self, now: float) -> list[Entry]:
        due: list[Entry] = []
        queue = self._delayed
        if queue.count <= 0:  # (asked before every dispatch)
            return due
        while (when := self.next_due()) is not None and when <= now:
            disk_key, value = queue.head.pop(0)
            queue.count -= 1
            self._batch.delete(disk_key)
            due.append(entry_of(0, value))
        for entry in due:  # a new front record, at the end of its band's queue
            self._batch.assign_id(entry)
            self._front_add(entry)
        return due

    def next_due(self) -> float | None:
        queue = self._delayed
        while not queue.head:
            if queue.count <= 0:
                return None
            self._load(queue, self.delay_room)
        return DUE.unpack_from(queue.head[0][0], 1)[0]

    def delayed(self) -> int:
        return self._delayed.count

    # -- the admission journal ----------------------------------------------------------------
    def admitted_since(self, mark: int) -> tuple[list[int], int]:
        return self._batch.admitted_since(mark)

    def admitted_mark(self) -> int:
        return self._batch.mark
