"""The disk frontier's queues (:mod:`crawler_ext.frontier.disk`): a sorted key range of records
with its head in memory, the back queues of every politeness key in their two lanes, and the
routed entries whose record has not moved from its front queue."""

from __future__ import annotations

from bisect import insort

from crawler_ext.frontier.diskformat import back_range, record_id
from crawler_ext.frontier.kv import KVEngine

__all__ = ["BackLanes", "DiskQueue", "Unmoved"]

_SPARE_QUEUES = 4_096  # emptied back queues kept for the next keys


class DiskQueue:
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
        """Serve another range (a spare queue taken again: see ``BackLanes``)."""
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

    def remove(self, disk_key: bytes, commit: int) -> bool:
        """A queued record leaves the range (deleted in that commit); False if it was not
        queued (neither in the head nor after the cursor)."""
        head = self.head
        for i, (k, _) in enumerate(head):
            if k == disk_key:
                del head[i]
                break
        else:
            if disk_key <= self.cursor:
                return False
            self.dirty = commit
        self.count -= 1
        return True

    def read(self, kv: KVEngine, room: int, skip: int, taken: dict[int, bytes]) -> None:
        """Read the next records after the cursor into the head, up to ``room``; ``skip``:
        records of the range in ``taken`` (handed out, not completed), passed over."""
        rows = kv.scan(self.cursor + b"\x00", self.stop, room + skip)
        head = self.head
        for disk_key, value in rows:
            self.cursor = disk_key
            if record_id(disk_key) in taken:
                continue
            head.append((disk_key, value))
            if len(head) >= room:
                break
        if not head and len(rows) < room + skip:  # the counter was ahead of the disk
            self.count = 0


class BackLanes:
    """The back queues of the politeness keys, each in two lanes (discovery, refresh), and the
    entries of each lane handed out and not completed (their records still on disk, which a
    head read skips).  Emptied queues are kept to serve the next keys: with more hosts than
    active keys, a key's queue lives from its routing to its turn, long enough for the garbage
    collector to promote it (and its head) to the old generation, which paces full collections
    (a queue and its head were made and dropped per dispatch)."""

    def __init__(self) -> None:
        self.lanes: tuple[dict[str, DiskQueue], dict[str, DiskQueue]] = ({}, {})
        self.taken: tuple[dict[str, int], dict[str, int]] = ({}, {})
        self._spare: list[DiskQueue] = []

    def get(self, key: str, refresh: bool) -> DiskQueue | None:
        return self.lanes[refresh].get(key)

    def queue(self, key: str, refresh: bool, count: int = 0) -> DiskQueue:
        """The lane's queue, made if it has none (``count``: its records on disk)."""
        lane = self.lanes[refresh]
        queue = lane.get(key)
        if queue is None:
            start, stop = back_range(key, refresh)
            if self._spare:
                queue = self._spare.pop()
                queue.reset(start, stop, count)
            else:
                queue = DiskQueue(start, stop, count)
            lane[key] = queue
        return queue

    def emptied(self, key: str, refresh: bool) -> None:
        """The lane's queue holds nothing more: kept for another key."""
        queue = self.lanes[refresh].pop(key)
        if len(self._spare) < _SPARE_QUEUES:
            self._spare.append(queue)

    def handed_out(self, key: str, refresh: bool) -> int:
        return self.taken[refresh].get(key, 0)

    def took(self, key: str, refresh: bool) -> None:
        taken = self.taken[refresh]
        taken[key] = taken.get(key, 0) + 1

    def returned(self, key: str, refresh: bool) -> None:
        """One of the lane's entries handed out is back, or completed."""
        taken = self.taken[refresh]
        left = taken[key] - 1
        if left:
            taken[key] = left
        else:
            del taken[key]

    def sizes(self, key: str) -> tuple[int, int]:
        discovery, refresh = self.lanes[0].get(key), self.lanes[1].get(key)
        return (discovery.count if discovery is not None else 0,
                refresh.count if refresh is not None else 0)

    def heads(self, key: str) -> list[tuple[bytes, bytes]]:
        """The records of the key's queues held in memory, discovery lane first."""
        out: list[tuple[bytes, bytes]] = []
        for lane in self.lanes:
            queue = lane.get(key)
            if queue is not None:
                out += queue.head
        return out

    def keys(self) -> list[str]:
        return list(self.lanes[0].keys() | self.lanes[1].keys())

    def pending(self) -> int:
        return sum(q.count for lane in self.lanes for q in lane.values())

    def held(self) -> int:
        """Records held in the queues' heads (in memory)."""
        return sum(len(q.head) for lane in self.lanes for q in lane.values())


class Unmoved:
    """Routed entries whose record is still their front record (in a back queue's head, or
    handed out): it moves to a back record only if it has to wait on disk.  ``per_band``: how
    many there are per band (the band's count on disk includes them: after a stop they are
    front entries again)."""

    def __init__(self, bands: int) -> None:
        self.ids: dict[int, bytes] = {}  # id -> front record key
        self.per_band = [0] * bands

    def routed(self, entry_id: int, front_record: bytes) -> None:
        self.ids[entry_id] = front_record
        self.per_band[front_record[1]] += 1

    def moved(self, entry_id: int) -> bytes | None:
        """The entry's front record, if it still was its record (no longer)."""
        front_record = self.ids.pop(entry_id, None) if self.ids else None
        if front_record is not None:
            self.per_band[front_record[1]] -= 1
        return front_record
