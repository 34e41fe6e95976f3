"""The disk frontier's writes (:mod:`crawler_ext.frontier.disk`): records put and deleted since
the last commit, the entry-id counter and the admission journal, written in one batch."""

from __future__ import annotations

from array import array

from crawler_ext.frontier.diskformat import U64, journal_bytes, read_counter, read_journal
from crawler_ext.frontier.kv import KVEngine
from crawler_ext.frontier.storage import Entry

__all__ = ["WriteBatch"]


class WriteBatch:
    """What the next commit writes; ``commits``: the number of commits written so far (a
    queue marks itself dirty with the number of the commit to come)."""

    def __init__(self, kv: KVEngine) -> None:
        self.kv = kv
        self.puts: dict[bytes, bytes] = {}
        self.dels: set[bytes] = set()
        self.next_id = 1
        self._journal = array("Q")  # admissions not committed yet
        self.mark = 0  # journal position of the last admission committed
        self.commits = 0

    def opened(self, meta: dict[bytes, bytes]) -> None:
        self.next_id = read_counter(meta, b"Mid", 1)
        self.mark = read_counter(meta, b"Mjournal")

    def put(self, disk_key: bytes, value: bytes) -> None:
        self.puts[disk_key] = value

    def delete(self, disk_key: bytes) -> None:
        if self.puts.pop(disk_key, None) is None:
            self.dels.add(disk_key)
        # (a record written and deleted within one batch never reaches the disk)

    def assign_id(self, entry: Entry) -> None:
        if not entry.id:
            entry.id = self.next_id
            self.next_id += 1

    def new_id(self) -> int:
        entry_id = self.next_id
        self.next_id += 1
        return entry_id

    def admitted(self, fp: int) -> None:
        self._journal.append(fp)

    def writes(self) -> int:
        return len(self.puts) + len(self.dels)

    def pending(self) -> bool:
        return bool(self.puts or self.dels or self._journal)

    def write(self, bands: list[int], delayed: int) -> None:
        """Commit: the records, the counters (entries per band, delayed), the id counter and
        the journal (one record per commit: its last position -> the fingerprints) in one
        write of the engine."""
        puts = self.puts
        for band, count in enumerate(bands):
            puts[b"Mband" + bytes((band,))] = U64.pack(count)
        puts[b"Mdelayed"] = U64.pack(delayed)
        puts[b"Mid"] = U64.pack(self.next_id)
        mark = self.mark + len(self._journal)
        if self._journal:
            puts[b"A" + U64.pack(mark)] = journal_bytes(self._journal)
            self._journal = array("Q")
        puts[b"Mjournal"] = U64.pack(mark)
        self.kv.write(puts, self.dels)
        self.mark = mark
        self.puts = {}
        self.dels = set()
        self.commits += 1

    def admitted_since(self, mark: int) -> tuple[list[int], int]:
        return read_journal(self.kv, mark)
